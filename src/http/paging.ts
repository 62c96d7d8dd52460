import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type SelectQueryBuilder, sql } from 'kysely';
import { type TSchema, Type } from 'typebox';
import { AppError } from '../errors.js';
import { Nullable, ref } from '../schemas.js';

/** Query parameters every list accepts (API.md section 6). */
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

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** Where a page starts: the (sort key, id) of the last item of the previous page. */
export interface Position {
  key: string | number;
  id: string;
}

export interface PageRequest {
  limit: number;
  after: Position | null;
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

export function pageRequest(query: { limit?: number; cursor?: string }, tag: string): PageRequest {
  return {
    limit: query.limit ?? 20,
    after: query.cursor ? decodeCursor(tag, query.cursor) : null,
    listTag: tag,
  };
}

/**
 * Keyset pagination on (sortColumn, idColumn): stable under concurrent inserts,
 * no item repeated or skipped. Fetches one row more than the page to know `hasMore`.
 */
export function keysetPage<QB extends SelectQueryBuilder<any, any, any>>(
  qb: QB,
  page: PageRequest,
  sortColumn: string,
  idColumn: string,
  order: 'asc' | 'desc',
): QB {
  let query = qb;
  if (page.after) {
    const op = sql.raw(order === 'desc' ? '<' : '>');
    const { key, id } = page.after;
    query = (query as any).where(
      sortColumn === idColumn
        ? sql`${sql.ref(idColumn)} ${op} ${id}`
        : sql`(${sql.ref(sortColumn)} ${op} ${key} or (${sql.ref(sortColumn)} = ${key} and ${sql.ref(idColumn)} ${op} ${id}))`,
    );
  }
  query = (query as any).orderBy(sortColumn, order);
  if (sortColumn !== idColumn) query = (query as any).orderBy(idColumn, order);
  return (query as any).limit(page.limit + 1);
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
