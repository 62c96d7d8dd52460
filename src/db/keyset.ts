import { type SelectQueryBuilder, sql } from 'kysely';

/** Where a page starts: the (sort key, id) of the last item of the previous page. */
export interface Position {
  key: string | number;
  id: string;
}

/** One page of a keyset walk: how many rows, after which position (null: from the start). */
export interface KeysetPage {
  limit: number;
  after: Position | null;
}

/**
 * Keyset pagination on (sortColumn, idColumn): stable under concurrent inserts,
 * no item repeated or skipped. Fetches one row more than the page to know `hasMore`.
 */
export function keysetPage<QB extends SelectQueryBuilder<any, any, any>>(
  qb: QB,
  page: KeysetPage,
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
