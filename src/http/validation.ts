import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { BuiltOnFirstUse } from './built-on-first-use.js';

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    // Unknown properties are refused (400), never silently dropped: they are almost always a typo.
    removeAdditional: false,
    allErrors: true,
    strict: false,
    // A compiled schema is not kept under its $id: the blend start body (`$id: StartBlendRequest`)
    // carries each app's image limits, so two apps of one process compile different schemas of the
    // same $id, which Ajv would refuse as "already exists". No request schema refers to another by $id.
    addUsedSchema: false,
  });
  addFormats.default(ajv);
  return ajv;
}

/** How a number is written in a query string, a path or a header: decimal digits, as docs/api.md shows them. */
const WRITTEN = { integer: /^-?\d+$/, number: /^-?\d+(\.\d+)?$/ } as const;

/** The properties of an object schema that are a plain integer or number (not unions or arrays). */
function numericProperties(schema: object): Array<[string, keyof typeof WRITTEN]> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(properties).flatMap(([name, p]) => (p.type === 'integer' || p.type === 'number' ? [[name, p.type] as [string, keyof typeof WRITTEN]] : []));
}

interface Validate {
  (data: unknown): boolean;
  errors?: unknown[] | null;
}

/**
 * Ajv's coercion reads text as JavaScript's Number() does, so `0x10`, `1e2` or ` 5` would pass
 * for 16, 100 and 5; a number in text must be written in decimal digits (WRITTEN) before it is
 * coerced and validated.
 */
function decimalNumbersOnly(validate: Validate, schema: object): Validate {
  const numeric = numericProperties(schema);
  if (numeric.length === 0) return validate;
  const checked: Validate = (data) => {
    // Read before validate, which coerces the values in place; its other errors are kept beside these (allErrors).
    const faults = numeric.flatMap(([name, type]) => {
      const value = (data as Record<string, unknown> | null | undefined)?.[name];
      return typeof value === 'string' && !WRITTEN[type].test(value)
        ? [{ instancePath: `/${name}`, schemaPath: `#/properties/${name}/type`, keyword: 'type', params: { type }, message: `must be ${type === 'integer' ? 'an integer' : 'a number'} written in decimal digits` }]
        : [];
    });
    const valid = validate(data);
    const others = (validate.errors ?? []).filter((e) => !faults.some((f) => f.instancePath === (e as { instancePath?: string }).instancePath));
    checked.errors = faults.length + others.length > 0 ? [...faults, ...others] : validate.errors;
    return valid && faults.length === 0;
  };
  return checked;
}

/** The two Ajv instances of the process, made when the first app asks, and the validators asked for, by schema. */
let compilers: { text: Ajv; json: Ajv } | null = null;
const compiled = { text: new Map<string, Validate>(), json: new Map<string, Validate>() };
/** The builds of validators not used yet. */
const builds = new BuiltOnFirstUse<Validate>();

/**
 * Query strings, path parameters and headers are text, so they are coerced ("20" → 20) once they
 * are written as decimal numbers (decimalNumbersOnly); JSON bodies are typed already and are
 * validated exactly as sent ("20" is not a number). Each distinct schema is compiled once per
 * process, whichever route and app asks (routes share parameter and query schemas, and tests build
 * many apps): a compiled validator depends on its schema and the instance's options alone.
 *
 * A validator is compiled when its route first validates a request, not when the app starts: most
 * of a process's routes are never called by it, and compiling them all was ~0.4 s of `npm start`.
 * compileEveryValidator compiles the rest (the tests call it, so a schema Ajv refuses fails there,
 * not at a user's first request).
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const instances = (compilers ??= { text: makeAjv('array'), json: makeAjv(false) });
  const compile = (kind: 'text' | 'json', schema: object): Validate => {
    const key = JSON.stringify(schema);
    let validate = compiled[kind].get(key);
    if (!validate) {
      const build = builds.once(() => instances[kind].compile(schema) as Validate);
      // Ajv's validator leaves its errors on itself; Fastify reads them from the function it was given.
      const lazy: Validate = (data) => {
        const inner = build();
        const valid = inner(data);
        lazy.errors = inner.errors;
        return valid;
      };
      validate = lazy;
      compiled[kind].set(key, validate);
    }
    return validate;
  };
  return ({ schema, httpPart }) =>
    (httpPart === 'body' ? compile('json', schema as object) : decimalNumbersOnly(compile('text', schema as object), schema as object)) as ReturnType<FastifySchemaCompiler<unknown>>;
}

/** Compiles every validator the process's apps have asked for and not used yet; throws what Ajv throws for a schema it refuses. */
export function compileEveryValidator(): void {
  builds.buildAll();
}

/** How many validators this process has asked for (each distinct schema once per kind). */
export function validatorsCompiled(): number {
  return compiled.text.size + compiled.json.size;
}
