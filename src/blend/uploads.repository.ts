import { type ExpressionBuilder, type Selectable, sql } from 'kysely';
import type { Database, Db } from '../db/database.js';
import { type KeysetPage, keysetPage } from '../db/keyset.js';
import { onPostgres } from '../db/prepared.js';
import type { TenantScope } from '../db/tenant.js';
import type { BlendUploadTable } from './uploads.table.js';
import './uploads.table.js';

export type BlendUploadRow = Selectable<BlendUploadTable>;

/** Where an upload's bytes live in the object store (storage.ts keys: lower case, from ids). */
export const uploadKey = (accountId: string, uploadId: string) => `uploads/${accountId.toLowerCase()}/${uploadId}`;

/**
 * Whether a queued or processing job of the upload's account names it among its images (a JSON
 * array of strings; `_` is a LIKE wildcard, so it is escaped).
 */
const usedByUnfinishedJob = (eb: ExpressionBuilder<Database, 'blendUploads'>) =>
  eb.exists(
    eb
      .selectFrom('blendJobs')
      .select(sql.lit(1).as('one'))
      .whereRef('blendJobs.accountId', '=', 'blendUploads.accountId')
      .where('blendJobs.status', 'in', ['queued', 'processing'])
      .where(sql<boolean>`(${sql.ref('blendJobs.images')} like ('%"' || replace(${sql.ref('blendUploads.id')}, '_', '\\_') || '"%') escape '\\')`),
  );

export async function insertUpload(scope: TenantScope, row: BlendUploadRow): Promise<void> {
  await scope.db.insertInto('blendUploads').values(row).execute();
}

/**
 * Holds off the account's other uploads until this transaction ends, so that a quota is checked
 * and spent by one upload at a time (PostgreSQL: the account row's lock; SQLite runs one write
 * transaction at a time already). FOR NO KEY UPDATE, not FOR UPDATE: it still excludes another
 * upload's lock, but not the key-share locks of every insert that references the account.
 */
export async function lockAccountUploads(tx: TenantScope): Promise<void> {
  if (!tx.db.isTransaction) throw new Error('lockAccountUploads needs a transaction');
  if (onPostgres(tx.db)) await tx.db.selectFrom('accounts').select('id').where('id', '=', tx.accountId).forNoKeyUpdate().execute();
}

/** How many live (unexpired) uploads the account holds, and their bytes. */
export async function liveUsage(scope: TenantScope, now: number): Promise<{ count: number; bytes: number }> {
  const row = await scope
    .selectFrom('blendUploads')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.sum<number | null>('bytes').as('bytes')])
    .where('expiresAt', '>', now)
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), bytes: Number(row.bytes ?? 0) };
}

/** The account's live upload, or undefined (expired counts as gone). */
export function findLiveUpload(scope: TenantScope, id: string, now: number): Promise<BlendUploadRow | undefined> {
  return scope.selectFrom('blendUploads').selectAll().where('id', '=', id).where('expiresAt', '>', now).executeTakeFirst();
}

/**
 * The ids among `ids` that are live uploads of the account. On PostgreSQL the rows are held
 * (`FOR SHARE`) until the transaction ends: a delete waits for the job that uses them to be stored,
 * and then sees it.
 */
export async function liveUploadIds(tx: TenantScope, ids: string[], now: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const query = tx.selectFrom('blendUploads').select('id').where('id', 'in', ids).where('expiresAt', '>', now);
  const rows = await (onPostgres(tx.db) ? query.forShare() : query).execute();
  return new Set(rows.map((r) => r.id));
}

/** One keyset page of the account's live uploads, newest first (one row more, for `hasMore`). */
export function pageUploads(scope: TenantScope, now: number, page: KeysetPage): Promise<BlendUploadRow[]> {
  const qb = scope.selectFrom('blendUploads').selectAll().where('expiresAt', '>', now);
  return keysetPage(qb, page, 'blendUploads.id', 'blendUploads.id', 'desc').execute();
}

/**
 * Deletes the account's live upload unless an unfinished job uses it; true when it was deleted. On
 * PostgreSQL the row is locked first: that waits for a job start holding it (`liveUploadIds`), and
 * the delete, a statement of its own, then sees that job (a single DELETE would judge its NOT EXISTS
 * on the snapshot taken before the wait, and delete an upload the job now uses).
 */
export function deleteUnusedUpload(scope: TenantScope, id: string, now: number): Promise<boolean> {
  return scope.transaction(async (tx) => {
    if (onPostgres(tx.db)) await tx.selectFrom('blendUploads').select('id').where('id', '=', id).forUpdate().execute();
    const result = await tx
      .deleteFrom('blendUploads')
      .where('id', '=', id)
      .where('expiresAt', '>', now)
      .where((eb) => eb.not(usedByUnfinishedJob(eb)))
      .executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  });
}

/**
 * Up to `limit` uploads expired by `now` that no unfinished job uses, oldest first. An expired
 * upload cannot be named by a new job, so none of these is taken by one once selected.
 */
export function expiredUnusedUploads(db: Db, now: number, limit: number): Promise<{ id: string; accountId: string }[]> {
  return db
    .selectFrom('blendUploads')
    .select(['id', 'accountId'])
    .where('expiresAt', '<=', now)
    .where((eb) => eb.not(usedByUnfinishedJob(eb)))
    .orderBy('expiresAt')
    .limit(limit)
    .execute();
}

/** Deletes the records of uploads whose bytes are gone; answers how many. */
export async function deleteUploads(db: Db, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await db.deleteFrom('blendUploads').where('id', 'in', ids).executeTakeFirst();
  return Number(result.numDeletedRows);
}
