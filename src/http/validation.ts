import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    // Unknown properties are refused (400), never silently dropped: they are almost always a typo.
    removeAdditional: false,
    allErrors: true,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

/**
 * Query strings, path parameters and headers are text, so they are coerced ("20" → 20);
 * JSON bodies are typed already and are validated exactly as sent ("20" is not a number).
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const text = makeAjv('array');
  const json = makeAjv(false);
  return ({ schema, httpPart }) =>
    (httpPart === 'body' ? json : text).compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
}
