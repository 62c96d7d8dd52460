// fast-check arbitraries from JSON Schema: values an operation accepts, values just outside what it
// accepts, and valid values with a few parts broken (missing, mistyped, out of range, extra, nested).
import fc from 'fast-check';
import type { Schema } from './openapi.js';
import { nested, ODD_DATES, ODD_NUMBERS, oddJson, oddString } from './values.js';

/**
 * A value for a property the schema alone cannot make meaningful (the id of a real ticket type,
 * a URL the server can fetch), or null to let the schema decide. Array items are named `name[]`.
 */
export type Hint = (name: string, schema: Schema) => fc.Arbitrary<unknown> | null;

const MAX_DEPTH = 8;
const types = (schema: Schema): string[] =>
  Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : schema.properties ? ['object'] : schema.items ? ['array'] : [];
const withType = (schema: Schema, type: string): Schema => ({ ...schema, type });

/** Valid values of `schema` (valid as far as JSON Schema goes: cross-field rules are the server's). */
export function validValue(schema: Schema, hint: Hint, name = '', depth = 0): fc.Arbitrary<unknown> {
  const own = plainValid(schema, hint, name, depth);
  const hinted = hint(name, schema);
  return hinted ? fc.oneof({ weight: 4, arbitrary: hinted }, { weight: 1, arbitrary: own }) : own;
}

function plainValid(schema: Schema, hint: Hint, name: string, depth: number): fc.Arbitrary<unknown> {
  if (depth > MAX_DEPTH) return fc.constant(null);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum?.length) return fc.constantFrom(...schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches?.length) return fc.oneof(...branches.map((b) => validValue({ ...stripCombinators(schema), ...b }, hint, name, depth + 1)));
  if (schema.allOf?.length) return validValue(Object.assign({}, stripCombinators(schema), ...schema.allOf), hint, name, depth + 1);
  const list = types(schema);
  if (list.length > 1) return fc.oneof(...list.map((t) => plainValid(withType(schema, t), hint, name, depth)));
  switch (list[0]) {
    case 'object':
      return validObject(schema, hint, depth);
    case 'array': {
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? minLength + 4, minLength + 4));
      const item = validValue(schema.items ?? {}, hint, `${name}[]`, depth + 1);
      return schema.uniqueItems ? fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) }) : fc.array(item, { minLength, maxLength });
    }
    case 'string':
      return validString(schema);
    case 'integer':
      return validNumber(schema, true);
    case 'number':
      return validNumber(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stripCombinators(schema: Schema): Schema {
  const { anyOf: _a, oneOf: _o, allOf: _l, ...rest } = schema;
  return rest;
}

function validObject(schema: Schema, hint: Hint, depth: number): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const model = Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, validValue(s, hint, k, depth + 1)]));
  const fixed = fc.record(model, { requiredKeys: (schema.required ?? []).filter((k) => k in properties) });
  const extraSchema = Object.values(schema.patternProperties ?? {})[0] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : null);
  const keyPattern = Object.keys(schema.patternProperties ?? {})[0];
  const extra = extraSchema
    ? fc.dictionary(keyPattern ? fc.stringMatching(new RegExp(keyPattern)) : fc.string({ minLength: 1, maxLength: 20 }), validValue(extraSchema, hint, '', depth + 1), {
        maxKeys: Math.min(schema.maxProperties ?? 5, 5),
      })
    : fc.constant({});
  const min = schema.minProperties ?? 0;
  return fc
    .tuple(fixed, extra)
    .map(([a, b]) => ({ ...b, ...(a as object) }))
    .filter((o) => Object.keys(o).length >= min);
}

const MIN_DATE = Date.parse('2020-01-01T00:00:00Z');
const MAX_DATE = Date.parse('2032-12-31T00:00:00Z');

/** Mostly near now (events ahead, sales windows open), sometimes anywhere, sometimes with an offset. */
export const dateTime = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: -30 * 86_400, max: 400 * 86_400 }).map((s) => new Date(Date.now() + s * 1000).toISOString()) },
    { weight: 1, arbitrary: fc.integer({ min: MIN_DATE, max: MAX_DATE }).map((ms) => new Date(ms).toISOString()) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.integer({ min: -2 * 86_400, max: 200 * 86_400 }), fc.constantFrom('+02:00', '-05:30', '+14:00', '-12:00', '+00:00'))
        .map(([s, offset]) => `${new Date(Date.now() + s * 1000).toISOString().slice(0, 19)}${offset}`),
    },
  );

/** Per schema object (they come from one parsed document): building pattern arbitraries is slow. */
function cached<T>(make: (schema: Schema) => T): (schema: Schema) => T {
  const made = new WeakMap<Schema, T>();
  return (schema) => {
    if (!made.has(schema)) made.set(schema, make(schema));
    return made.get(schema)!;
  };
}

const validString = cached((schema: Schema): fc.Arbitrary<unknown> => {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? 64;
  const fits = (s: string) => s.length >= min && s.length <= max;
  const examples = (schema.examples ?? []).filter((e): e is string => typeof e === 'string');
  let own: fc.Arbitrary<string>;
  if (schema.format === 'date-time') own = dateTime();
  else if (schema.format === 'email') own = fc.emailAddress().filter(fits);
  else if (schema.format === 'uri') own = fc.webUrl().filter(fits);
  else if (schema.pattern) own = fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
  else own = fc.oneof(fc.string({ minLength: min, maxLength: Math.min(max, min + 30) }), fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, min + 30) }).filter(fits));
  return examples.length ? fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...examples) }, { weight: 3, arbitrary: own }) : own;
});

function validNumber(schema: Schema, integer: boolean): fc.Arbitrary<unknown> {
  const min = Math.max(schema.minimum ?? (schema.exclusiveMinimum ?? -1e9) + (integer ? 1 : 0), Number.MIN_SAFE_INTEGER);
  const max = Math.min(schema.maximum ?? (schema.exclusiveMaximum ?? 1e9) - (integer ? 1 : 0), Number.MAX_SAFE_INTEGER);
  const edges = fc.constantFrom(min, max);
  if (!integer) return fc.oneof(edges, fc.double({ min, max, noNaN: true, noDefaultInfinity: true }));
  const small = fc.integer({ min: Math.max(min, -1000), max: Math.max(Math.max(min, -1000), Math.min(max, 1000)) });
  return fc.oneof({ weight: 1, arbitrary: edges }, { weight: 3, arbitrary: small }, { weight: 1, arbitrary: fc.bigInt(BigInt(Math.ceil(min)), BigInt(Math.floor(max))).map(Number) });
}

/** Values just outside `schema`: past a bound, the wrong type, a broken format, an unknown enum member. */
export const invalidValue = cached((schema: Schema): fc.Arbitrary<unknown> => {
  const bad: unknown[] = [];
  for (const t of types(schema)) {
    if (t === 'integer' || t === 'number') {
      if (schema.minimum !== undefined) bad.push(schema.minimum - 1, schema.minimum - 0.5);
      if (schema.maximum !== undefined) bad.push(schema.maximum + 1, schema.maximum * 10);
      if (t === 'integer') bad.push(1.5, 1e-7);
      bad.push(...ODD_NUMBERS);
    } else if (t === 'string') {
      if (schema.maxLength !== undefined) bad.push('x'.repeat(schema.maxLength + 1), '😀'.repeat(schema.maxLength));
      if (schema.minLength) bad.push('');
      if (schema.format === 'date-time') bad.push(...ODD_DATES);
      if (schema.format === 'email') bad.push('a@', '@b.c', 'a b@c.d', 'a@b@c', 'é@é.é', `${'a'.repeat(64)}@${'b'.repeat(250)}.com`);
      if (schema.format === 'uri' || /url/i.test(schema.description ?? '')) {
        bad.push('javascript:alert(1)', 'http://', 'ftp://example.com/x', 'http://user:pw@127.0.0.1/', 'http://[::1]:1/', 'http://0x7f000001/', 'http://169.254.169.254/latest', 'http://localhost:0/', 'https://xn--/', 'http://256.256.256.256/', '//no-scheme', 'file:///etc/hostname');
      }
      if (schema.pattern) bad.push('lower', 'UPPER_CASE', '', ' EUR', 'EUR\n', 'job_', 'a/b');
    } else if (t === 'array') {
      if (schema.maxItems !== undefined) bad.push(Array.from({ length: schema.maxItems + 1 }, (_, i) => `x${i}`));
      if (schema.minItems) bad.push([]);
      if (schema.uniqueItems) bad.push(['a', 'a']);
    } else if (t === 'boolean') {
      bad.push('true', 1, 0);
    } else if (t === 'object') {
      bad.push([], 'object');
    }
  }
  if (schema.enum?.length) bad.push(...schema.enum.map((e) => (typeof e === 'string' ? e.toUpperCase() : e)), 'unknown');
  for (const branch of schema.anyOf ?? []) if (branch.enum) bad.push(...branch.enum.map((e) => (typeof e === 'string' ? `${e} ` : e)));
  return bad.length ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...bad) }, { weight: 1, arbitrary: oddJson() }) : oddJson();
});

type Path = Array<string | number>;
interface Place {
  path: Path;
  schema: Schema;
  container: 'object' | 'array' | 'root';
}

/** Every place in `value`, with the schema that describes it. */
function places(value: unknown, schema: Schema): Place[] {
  const out: Place[] = [];
  const visit = (v: unknown, s: Schema, path: Path, container: Place['container'], depth: number) => {
    out.push({ path, schema: s, container });
    if (depth > MAX_DEPTH) return;
    const branch = pickBranch(s, v);
    if (Array.isArray(v)) v.forEach((item, i) => visit(item, branch.items ?? {}, [...path, i], 'array', depth + 1));
    else if (v && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        const sub = branch.properties?.[k] ?? Object.values(branch.patternProperties ?? {})[0] ?? (typeof branch.additionalProperties === 'object' ? branch.additionalProperties : {});
        visit(item, sub, [...path, k], 'object', depth + 1);
      }
    }
  };
  visit(value, schema, [], 'root', 0);
  return out;
}

function pickBranch(schema: Schema, value: unknown): Schema {
  const branches = schema.anyOf ?? schema.oneOf;
  if (!branches) return schema;
  const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value;
  return branches.find((b) => types(b).includes(kind) || (kind === 'number' && types(b).includes('integer'))) ?? schema;
}

type Mutation =
  | { kind: 'remove'; at: number }
  | { kind: 'replace'; at: number; value: unknown; why: string }
  | { kind: 'extra'; at: number; key: string; value: unknown }
  | { kind: 'duplicate'; at: number };

/** `valid` with one to three parts broken; `notes` says what was broken where. */
export function mutate(valid: unknown, schema: Schema): fc.Arbitrary<{ value: unknown; notes: string[] }> {
  const spots = places(valid, schema);
  const at = fc.nat({ max: spots.length - 1 });
  const objects = spots.map((p, i) => [p, i] as const).filter(([p]) => isObject(get(valid, p.path)));
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    { weight: 3, arbitrary: at.map((i) => ({ kind: 'remove' as const, at: i })) },
    { weight: 4, arbitrary: at.chain((i) => invalidValue(spots[i]!.schema).map((value) => ({ kind: 'replace' as const, at: i, value, why: 'out of bounds' }))) },
    { weight: 2, arbitrary: fc.tuple(at, oddJson()).map(([i, value]) => ({ kind: 'replace' as const, at: i, value, why: 'wrong type' })) },
    { weight: 2, arbitrary: fc.tuple(at, oddString()).map(([i, value]) => ({ kind: 'replace' as const, at: i, value, why: 'odd string' })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(at, fc.constantFrom(10, 60, 63, 64, 65, 200), fc.constantFrom('array' as const, 'object' as const))
        .map(([i, depth, kind]) => ({ kind: 'replace' as const, at: i, value: nested(depth, kind), why: `nested ${depth} deep` })),
    },
    { weight: 1, arbitrary: at.map((i) => ({ kind: 'duplicate' as const, at: i })) },
    ...(objects.length
      ? [
          {
            weight: 2,
            arbitrary: fc
              .tuple(
                fc.constantFrom(...objects.map(([, i]) => i)),
                fc.oneof(fc.constantFrom('__proto__', 'constructor', 'id', 'accountId', 'status', 'sold', 'createdAt', 'nmae', ''), fc.string({ maxLength: 12 })),
                oddJson(),
              )
              .map(([i, key, value]) => ({ kind: 'extra' as const, at: i, key, value })),
          },
        ]
      : []),
  );
  return fc.array(mutation, { minLength: 1, maxLength: 3 }).map((mutations) => {
    let value = structuredClone(valid);
    const notes: string[] = [];
    for (const m of mutations) {
      const place = spots[m.at]!;
      value = apply(value, place, m);
      notes.push(describe(m, place));
    }
    return { value, notes };
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const pointer = (path: Path) => `/${path.join('/')}`;

function get(root: unknown, path: Path): unknown {
  return path.reduce<any>((node, key) => (node == null ? undefined : node[key]), root);
}

function apply(root: unknown, place: Place, m: Mutation): unknown {
  const path = place.path;
  // A copy: the odd values are shared constants, and a later mutation may write into this one.
  const value = 'value' in m ? structuredClone(m.value) : undefined;
  const parent = get(root, path.slice(0, -1));
  const last = path[path.length - 1];
  const target = get(root, path);
  switch (m.kind) {
    case 'remove':
      if (last === undefined) return root;
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else if (isObject(parent)) delete parent[last];
      return root;
    case 'replace':
      if (last === undefined) return value;
      if (parent && typeof parent === 'object') (parent as any)[last] = value;
      return root;
    case 'extra':
      // defineProperty, so that `__proto__` becomes a member and not the prototype.
      if (isObject(target)) Object.defineProperty(target, m.key, { value, enumerable: true, writable: true, configurable: true });
      return root;
    case 'duplicate':
      if (Array.isArray(parent)) parent.push(structuredClone(target));
      else if (Array.isArray(target) && target.length) target.push(structuredClone(target[0]));
      return root;
  }
}

function describe(m: Mutation, place: Place): string {
  const where = pointer(place.path);
  if (m.kind === 'remove') return `removed ${where}`;
  if (m.kind === 'extra') return `extra ${where}/${m.key}`;
  if (m.kind === 'duplicate') return `duplicated ${where}`;
  return `${m.why} at ${where}`;
}
