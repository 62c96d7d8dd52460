import type { Selectable, Updateable } from 'kysely';
import type { Db, Tx } from '../db/database.js';
import { type KeysetPage, keysetPage } from '../db/keyset.js';
import type { TenantScope } from '../db/tenant.js';
import type { BlendJobTable } from './blend.table.js';

export type BlendJobRow = Selectable<BlendJobTable>;

export async function insertJob(scope: TenantScope, row: BlendJobRow): Promise<void> {
  await scope.db.insertInto('blendJobs').values(row).execute();
}

/** The account's job, or undefined. */
export function findJob(scope: TenantScope, id: string): Promise<BlendJobRow | undefined> {
  return scope.selectFrom('blendJobs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Any account's job, for the worker and for signed result URLs (the signature is the access check). */
export function jobById(db: Db | Tx, id: string): Promise<BlendJobRow | undefined> {
  return db.selectFrom('blendJobs').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface JobFilters {
  projectId?: string;
  status?: string;
}

/** One keyset page of the account's jobs, newest first (one row more, for `hasMore`). */
export function pageJobs(scope: TenantScope, filters: JobFilters, page: KeysetPage): Promise<BlendJobRow[]> {
  let qb = scope.selectFrom('blendJobs').selectAll();
  if (filters.projectId !== undefined) qb = qb.where('projectId', '=', filters.projectId);
  if (filters.status !== undefined) qb = qb.where('status', '=', filters.status);
  return keysetPage(qb, page, 'blendJobs.id', 'blendJobs.id', 'desc').execute();
}

/** Applies `changes` to the job and answers the row as it now is. */
export function updateJob(db: Db | Tx, id: string, changes: Updateable<BlendJobTable>): Promise<BlendJobRow> {
  return db.updateTable('blendJobs').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/** Puts the job back to queued (its next attempt waits in the job queue). */
export async function requeueJob(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('blendJobs').set({ status: 'queued', updatedAt: now }).where('id', '=', id).execute();
}

/** Up to `limit` finished jobs (completed or failed) that finished before `before`, oldest first. */
export function finishedBefore(db: Db, before: number, limit: number): Promise<Array<Pick<BlendJobRow, 'id' | 'resultKey'>>> {
  return db
    .selectFrom('blendJobs')
    .select(['id', 'resultKey'])
    .where('completedAt', '<', before)
    .where('status', 'in', ['completed', 'failed'])
    .orderBy('completedAt')
    .limit(limit)
    .execute();
}

export async function deleteJobs(db: Db, ids: string[]): Promise<number> {
  const result = await db.deleteFrom('blendJobs').where('id', 'in', ids).executeTakeFirst();
  return Number(result.numDeletedRows);
}
