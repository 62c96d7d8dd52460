import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import sjson from 'secure-json-parse';
import { AppError } from '../errors.js';

const MAX_JSON_DEPTH = 64;

/**
 * The JSON pointer of the first string holding a NUL character (PostgreSQL cannot store one),
 * `too_deep` past MAX_JSON_DEPTH levels of nesting, or null. Iterative: a body is client input.
 */
function nulPath(value: unknown): string | 'too_deep' | null {
  const stack: Array<[unknown, string, number]> = [[value, '', 0]];
  while (stack.length > 0) {
    const [item, path, depth] = stack.pop()!;
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return path || '/';
    } else if (item && typeof item === 'object') {
      if (depth >= MAX_JSON_DEPTH) return 'too_deep';
      for (const [key, child] of Object.entries(item)) stack.push([child, `${path}/${key}`, depth + 1]);
    }
  }
  return null;
}

/**
 * What the server reads from a request: JSON bodies only (any other media type with a body is
 * 415; an empty body is no body), parsed without prototype keys, no deeper than MAX_JSON_DEPTH,
 * and no NUL character in a body, a query string or a path parameter.
 */
export const jsonBodyPlugin = fp(
  async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      if (body === '') return done(null, undefined);
      let parsed: unknown;
      try {
        parsed = sjson.parse(body as string, { protoAction: 'error', constructorAction: 'error' });
      } catch {
        const error = new Error('The request body is not valid JSON.') as FastifyError;
        error.code = 'FST_ERR_CTP_INVALID_JSON_BODY';
        error.statusCode = 400;
        return done(error, undefined);
      }
      const nul = nulPath(parsed);
      if (nul === 'too_deep') return done(new AppError('invalid_request', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`), undefined);
      if (nul) return done(new AppError('invalid_request', `${nul} holds a NUL character.`, {}, [{ path: nul, message: 'must not hold a NUL character' }]), undefined);
      done(null, parsed);
    });

    // A NUL in a path is an ID that cannot exist; in a query string it is invalid.
    // (Hooks on every request are callback-style: an async hook costs a promise per request.)
    app.addHook('preValidation', (request, _reply, done) => {
      const params = request.params as Record<string, string> | undefined;
      if (params && Object.values(params).some((v) => typeof v === 'string' && v.includes('\u0000'))) {
        return done(new AppError('not_found', 'No such resource.'));
      }
      const nul = nulPath(request.query);
      if (nul) return done(new AppError('invalid_request', `query ${nul} holds a NUL character.`, {}, [{ path: `/query${nul}`, message: 'must not hold a NUL character' }]));
      done();
    });
  },
  { name: 'json-body' },
);
