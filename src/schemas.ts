import { type Static, type TSchema, type TUnsafe, Type } from 'typebox';

/** Shared field shapes of the API's schemas. */
export const Timestamp = Type.String({ format: 'date-time', maxLength: 64, examples: ['2026-11-22T10:00:00.000Z'] });
export const NullableTimestamp = Nullable(Timestamp);
export const Currency = Type.String({ pattern: '^[A-Z]{3}$', maxLength: 3, description: 'ISO 4217 code', examples: ['EUR'] });
export const Money = Type.Integer({ format: 'int64', minimum: 0, maximum: 100_000_000_00, description: 'Integer minor units (cents)', examples: [2500] });
export const Email = Type.String({ format: 'email', maxLength: 254, examples: ['ada@example.com'] });
export const Name = Type.String({ minLength: 1, maxLength: 200 });
export const Person = Type.Object({ name: Name, email: Email }, { additionalProperties: false });
/** An id in a path. (No id is longer than the router takes, MAX_PARAM_LENGTH in app.ts: a longer one is 404 before this.) */
export const PathId = (description?: string) => Type.String({ maxLength: 500, ...(description ? { description } : {}) });
export const IdParam = (description: string) => Type.Object({ id: PathId(description) }, { additionalProperties: false });

/**
 * A schema of one type, or null, as one type list (`type: ['string', 'null']`) rather than an
 * `anyOf`: the response serialiser writes such a value directly, where an `anyOf` makes it run a
 * validator (formats included) on every value of every response.
 */
export function Nullable<T extends TSchema & { type: string }>(schema: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [schema.type, 'null'] });
}

/** One of fixed strings, as `{ type: 'string', enum }`: serialised directly, where an `anyOf` of literals is validated. */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/**
 * A reference to a named schema (one with an `$id`, registered with the app: see http/openapi.ts),
 * typed as the schema itself. The OpenAPI document shows it as `#/components/schemas/<$id>`.
 */
export function ref<T extends TSchema>(schema: T): TUnsafe<Static<T>> {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}
