import type { Db, Tx } from '../db/database.js';
import type { DashboardSessionTable } from './sessions.table.js';

export async function insertSession(db: Db, row: DashboardSessionTable): Promise<void> {
  await db.insertInto('dashboardSessions').values(row).execute();
}

/** Removes everyone's sessions that expired by `now`. */
export async function deleteExpiredSessions(db: Db, now: number): Promise<void> {
  await db.deleteFrom('dashboardSessions').where('expiresAt', '<=', now).execute();
}

/** The live session of a token hash, with what the dashboard shows of its account. */
export function findLiveSession(db: Db, tokenHash: string, now: number) {
  return db
    .selectFrom('dashboardSessions')
    .innerJoin('accounts', 'accounts.id', 'dashboardSessions.accountId')
    .select(['dashboardSessions.id', 'dashboardSessions.accountId', 'dashboardSessions.csrfToken', 'dashboardSessions.expiresAt', 'dashboardSessions.lastSeenAt', 'accounts.email', 'accounts.plan', 'accounts.createdAt as accountCreatedAt'])
    .where('dashboardSessions.tokenHash', '=', tokenHash)
    .where('dashboardSessions.expiresAt', '>', now)
    .executeTakeFirst();
}

export async function touchSession(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('dashboardSessions').set({ lastSeenAt: now }).where('id', '=', id).execute();
}

export async function deleteSession(db: Db, id: string): Promise<void> {
  await db.deleteFrom('dashboardSessions').where('id', '=', id).execute();
}

/** Signs out every session of the account, but `keep` when given. */
export async function deleteAccountSessions(db: Db | Tx, accountId: string, keep?: string): Promise<void> {
  let query = db.deleteFrom('dashboardSessions').where('accountId', '=', accountId);
  if (keep !== undefined) query = query.where('id', '!=', keep);
  await query.execute();
}
