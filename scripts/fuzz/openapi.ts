// The operations of an OpenAPI 3.1 document, as the fuzzer needs them: every path and method, its
// parameters and request body with every $ref resolved, and whether it needs a key.

/** The subset of JSON Schema the fuzzer reads; anything else it treats as "any value". */
export interface Schema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  required?: string[];
  minProperties?: number;
  maxProperties?: number;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  default?: unknown;
  examples?: unknown[];
  description?: string;
  $ref?: string;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: Schema;
  description?: string;
}

export interface Operation {
  /** `GET /v1/events/{id}`: the name the report uses. */
  key: string;
  method: string;
  /** The path template, `/v1/events/{id}`. */
  path: string;
  parameters: Parameter[];
  /** The application/json request body schema, or null when the operation takes none. */
  body: Schema | null;
  /** True when the operation needs no credentials (`security: []`). */
  public: boolean;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const MAX_REF_DEPTH = 32;

interface Document {
  paths?: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, Schema> };
  security?: unknown[];
}

/** Every operation of `doc`, in document order. */
export function operationsOf(doc: Document): Operation[] {
  const resolve = refResolver(doc);
  const globallySecured = Array.isArray(doc.security) && doc.security.length > 0;
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const shared: any[] = item.parameters ?? [];
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const parameters = [...shared, ...(op.parameters ?? [])].map((p) => {
        const param = resolve(p) as any;
        return { name: param.name, in: param.in, required: param.required === true || param.in === 'path', schema: resolve(param.schema ?? {}), description: param.description };
      });
      const body = op.requestBody ? resolve(op.requestBody)?.content?.['application/json']?.schema : undefined;
      const security = op.security ?? (globallySecured ? doc.security : []);
      operations.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        parameters,
        body: body ? (resolve(body) as Schema) : null,
        public: security.length === 0,
      });
    }
  }
  return operations;
}

/** Replaces every `$ref` (`#/components/schemas/X`, or a bare `X#` id) by what it names, recursively. */
function refResolver(doc: Document) {
  const schemas = doc.components?.schemas ?? {};
  const byId = new Map<string, unknown>();
  for (const [name, schema] of Object.entries(schemas)) {
    byId.set(name, schema);
    if (typeof (schema as any).$id === 'string') byId.set((schema as any).$id, schema);
  }
  const lookup = (ref: string): unknown => {
    if (ref.startsWith('#/')) return ref.slice(2).split('/').reduce<any>((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    return byId.get(ref.replace(/#$/, ''));
  };
  const walk = (node: any, depth: number): any => {
    if (Array.isArray(node)) return node.map((n) => walk(n, depth));
    if (!node || typeof node !== 'object') return node;
    if (typeof node.$ref === 'string') {
      if (depth >= MAX_REF_DEPTH) return {};
      const { $ref, ...rest } = node;
      return walk({ ...(lookup($ref) as object), ...rest }, depth + 1);
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, depth)]));
  };
  return (node: any) => walk(node, 0);
}
