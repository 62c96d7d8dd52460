import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import sjson from 'secure-json-parse';
import { AppError } from '../errors.js';

const MAX_JSON_DEPTH = 64;

/** C0 controls but tab, line feed and carriage return; DEL; C1 controls: no name or text a client means to show holds one (an escape sequence reaches whoever opens an export in a terminal). */
const CONTROL = /[\u0001-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

/** A UTF-16 surrogate not paired with its other half (with the `u` flag a pair is one code point, outside this range). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Why a string cannot be stored as given, or null: PostgreSQL cannot store a NUL; a lone surrogate is no character at all (written back as JSON it breaks strict parsers, and PostgreSQL would store U+FFFD where SQLite keeps it); a control character is no text. */
function stringFault(value: string): string | null {
  if (value.includes('\u0000')) return 'must not hold a NUL character';
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode (it holds a lone UTF-16 surrogate)';
  if (CONTROL.test(value)) return 'must not hold a control character other than tab, line feed and carriage return';
  return null;
}

/**
 * The JSON pointer of the first string (value, or key of an object) that cannot be stored as
 * given (stringFault) with the reason, `too_deep` past MAX_JSON_DEPTH levels of nesting, or null.
 * Iterative: a body is client input.
 */
function faultyString(value: unknown): { path: string; message: string } | 'too_deep' | null {
  const stack: Array<[unknown, string, number]> = [[value, '', 0]];
  while (stack.length > 0) {
    const [item, path, depth] = stack.pop()!;
    if (typeof item === 'string') {
      const message = stringFault(item);
      if (message) return { path: path || '/', message };
    } else if (item && typeof item === 'object') {
      if (depth >= MAX_JSON_DEPTH) return 'too_deep';
      for (const [key, child] of Object.entries(item)) {
        const message = stringFault(key);
        if (message) return { path: `${path}/${key}`, message: `its name ${message}` };
        stack.push([child, `${path}/${key}`, depth + 1]);
      }
    }
  }
  return null;
}

/**
 * What the server reads from a request: JSON bodies only (any other media type with a body is
 * 415; an empty body is no body), parsed without prototype keys, no deeper than MAX_JSON_DEPTH,
 * no NUL, lone surrogate or control character (stringFault) in a body, a query string or a path
 * parameter, and no Content-Encoding (a compressed body would be read as its compressed bytes).
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
      const fault = faultyString(parsed);
      if (fault === 'too_deep') return done(new AppError('invalid_request', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`), undefined);
      if (fault) return done(new AppError('invalid_request', `${fault.path} ${fault.message}.`, {}, [fault]), undefined);
      done(null, parsed);
    });

    // No body is decoded: one sent compressed is refused before it is read, whatever its type (a
    // request without a body, or with an empty header, is not judged by it).
    // (Hooks on every request are callback-style: an async hook costs a promise per request.)
    app.addHook('preParsing', (request, _reply, payload, done) => {
      const encoding = request.headers['content-encoding']?.trim().toLowerCase();
      const body = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
      if (body && encoding && encoding !== 'identity') {
        return done(new AppError('unsupported_media_type', `This server does not decode Content-Encoding ${JSON.stringify(request.headers['content-encoding'])}: send the body uncompressed, without that header.`));
      }
      done(null, payload);
    });

    // Such a string in a path is an ID that cannot exist; in a query string it is invalid.
    app.addHook('preValidation', (request, _reply, done) => {
      const params = request.params as Record<string, string> | undefined;
      if (params && Object.values(params).some((v) => typeof v === 'string' && stringFault(v) !== null)) {
        return done(new AppError('not_found', 'No such resource.'));
      }
      const fault = faultyString(request.query);
      if (fault && fault !== 'too_deep') return done(new AppError('invalid_request', `query ${fault.path} ${fault.message}.`, {}, [{ path: `/query${fault.path}`, message: fault.message }]));
      done();
    });
  },
  { name: 'json-body' },
);
