import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { KeysetPage, Position } from '../db/keyset.js';
import { AppError } from '../errors.js';
import { Nullable, ref } from '../schemas.js';

/** Query parameters every list accepts (docs/api.md, Lists and paging). */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 100, default: 20, description: 'Items per page, 1 to 100.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from the previous page.' })),
};

/** The page of a list, `{ data, hasMore, nextCursor }`, as a named schema (`EventPage`, ...). */
export const pageSchema = <T extends TSchema>(name: string, item: T) =>
  Type.Object(
    {
      data: Type.Array(ref(item), { maxItems: 100 }),
      hasMore: Type.Boolean({ description: 'Whether another page follows.' }),
      nextCursor: Nullable(Type.String({ maxLength: 512, description: 'The `cursor` of the next page; null on the last page.' })),
    },
    { $id: name, description: 'One page of a list; the `Link` header names the next page too.' },
  );

/** The paging parameters of a list's query string (PageQuery). */
export interface PageParams {
  limit?: number;
  cursor?: string;
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

export type { Position } from '../db/keyset.js';

/** A page asked for: the keyset page (db/keyset.ts) and the list it belongs to. */
export interface PageRequest extends KeysetPage {
  /** Identifies the list and its filters; a cursor only continues the list it came from. */
  listTag: string;
}

/** A tag for a list and its filters: a cursor made for one list is refused by any other. */
export function listTag(list: string, filters: Record<string, unknown> = {}): string {
  const canonical = JSON.stringify(Object.entries(filters).filter(([, v]) => v !== undefined).sort());
  return `${list}:${createHash('sha256').update(canonical).digest('base64url').slice(0, 12)}`;
}

function badCursor(detail: string) {
  return new AppError('invalid_request', detail, {}, [{ path: '/query/cursor', message: detail }]);
}

export function encodeCursor(tag: string, position: Position): string {
  return Buffer.from(JSON.stringify({ t: tag, k: position.key, i: position.id })).toString('base64url');
}

export function decodeCursor(tag: string, cursor: string): Position {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badCursor('cursor is not a cursor this server issued');
  }
  const { t, k, i } = (parsed ?? {}) as { t?: unknown; k?: unknown; i?: unknown };
  if (typeof t !== 'string' || typeof i !== 'string' || !/^[a-z]{1,8}_[0-9a-z]{26}$/.test(i) || (typeof k !== 'string' && typeof k !== 'number')) {
    throw badCursor('cursor is not a cursor this server issued');
  }
  if (t !== tag) throw badCursor('cursor belongs to another list or to other filters');
  return { key: k, id: i };
}

/** The page a list's query asks for, in the list `tag` (the service's, with its filters). */
export function pageRequest(query: PageParams, tag: string): PageRequest {
  return {
    limit: query.limit ?? 20,
    after: query.cursor ? decodeCursor(tag, query.cursor) : null,
    listTag: tag,
  };
}

/** Cuts the extra row off and builds the cursor of the next page. */
export function toPage<Row, Item>(
  rows: Row[],
  page: PageRequest,
  positionOf: (row: Row) => Position,
  present: (row: Row) => Item,
): Page<Item> {
  const hasMore = rows.length > page.limit;
  const kept = hasMore ? rows.slice(0, page.limit) : rows;
  const last = kept[kept.length - 1];
  return {
    data: kept.map(present),
    hasMore,
    nextCursor: hasMore && last ? encodeCursor(page.listTag, positionOf(last)) : null,
  };
}

/** Sets `Link: <...>; rel="next"` from the request's own URL. */
export function withLinkHeader<T>(request: FastifyRequest, reply: FastifyReply, page: Page<T>): Page<T> {
  if (page.nextCursor) {
    const url = new URL(request.url, 'http://placeholder');
    url.searchParams.set('cursor', page.nextCursor);
    reply.header('Link', `<${url.pathname}${url.search}>; rel="next"`);
  }
  return page;
}
