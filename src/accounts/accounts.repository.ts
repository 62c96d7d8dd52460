import type { Insertable, Selectable } from 'kysely';
import type { Db, Tx } from '../db/database.js';
import type { TenantScope } from '../db/tenant.js';
import { keysetPage, type PageRequest } from '../http/paging.js';
import type { AccountTable, ApiKeyTable } from './accounts.table.js';

export type AccountRow = Selectable<AccountTable>;
export type ApiKeyRow = Selectable<ApiKeyTable>;

export async function insertAccount(db: Db | Tx, row: Insertable<AccountTable>): Promise<void> {
  await db.insertInto('accounts').values(row).execute();
}

export function findAccountByEmail(db: Db | Tx, email: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('email', '=', email).executeTakeFirst();
}

export function findAccountById(db: Db | Tx, id: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertApiKey(db: Db | Tx, row: Insertable<ApiKeyTable>): Promise<void> {
  await db.insertInto('apiKeys').values(row).execute();
}

/** The key with its account's plan: everything authentication needs, in one primary-key lookup. */
export function findKeyByHash(db: Db, keyHash: string) {
  return db
    .selectFrom('apiKeys')
    .innerJoin('accounts', 'accounts.id', 'apiKeys.accountId')
    .select([
      'apiKeys.id',
      'apiKeys.accountId',
      'apiKeys.name',
      'apiKeys.prefix',
      'apiKeys.scopes',
      'apiKeys.expiresAt',
      'apiKeys.revokedAt',
      'accounts.plan',
    ])
    .where('apiKeys.keyHash', '=', keyHash)
    .executeTakeFirst();
}

/** Records use at most once a minute per key, so a busy key does not write on every request. */
export async function touchKey(db: Db, id: string, now: number): Promise<void> {
  await db
    .updateTable('apiKeys')
    .set({ lastUsedAt: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lastUsedAt', 'is', null), eb('lastUsedAt', '<', now - 60_000)]))
    .execute();
}

export function findKey(scope: TenantScope, id: string): Promise<ApiKeyRow | undefined> {
  return scope.selectFrom('apiKeys').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listKeys(scope: TenantScope, page: PageRequest): Promise<ApiKeyRow[]> {
  return keysetPage(scope.selectFrom('apiKeys').selectAll(), page, 'apiKeys.id', 'apiKeys.id', 'desc').execute();
}

export async function revokeKey(scope: TenantScope, id: string, now: number): Promise<ApiKeyRow | undefined> {
  return scope
    .updateTable('apiKeys')
    .set({ revokedAt: now })
    .where('id', '=', id)
    .where('revokedAt', 'is', null)
    .returningAll()
    .executeTakeFirst();
}
