import type { Insertable, Selectable } from 'kysely';
import type { Db, Tx } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import type { KeysetPage } from '../db/keyset.js';
import type { AccountTable, ApiKeyTable } from './accounts.table.js';

export type AccountRow = Selectable<AccountTable>;
export type ApiKeyRow = Selectable<ApiKeyTable>;

/** Inserts the account unless its email is taken (the unique index decides); false when taken. */
export async function insertAccount(db: Db | Tx, row: Insertable<AccountTable>): Promise<boolean> {
  const inserted = await db.insertInto('accounts').values(row).onConflict((oc) => oc.column('email').doNothing()).executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
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

/** The key with its account's plan: everything authentication needs, in one unique-index lookup. */
export async function findKeyByHash(db: Db, keyHash: string) {
  return (await keyByHash(db, keyHash))[0];
}

const keyByHash = prepared((db: Db, keyHash: string) =>
  db
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
    .where('apiKeys.keyHash', '=', keyHash),
);

/** Records use at most once a minute per key, so a busy key does not write on every request. */
export async function touchKey(db: Db, id: string, now: number): Promise<void> {
  await db
    .updateTable('apiKeys')
    .set({ lastUsedAt: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lastUsedAt', 'is', null), eb('lastUsedAt', '<', now - 60_000)]))
    .execute();
}

const KEY_COLUMNS = ['id', 'name', 'prefix', 'scopes', 'createdAt', 'lastUsedAt', 'expiresAt', 'revokedAt'] as const;
export type ApiKeyView = Pick<ApiKeyRow, (typeof KEY_COLUMNS)[number]>;

const keyById = prepared((db: Db, accountId: string, id: string) =>
  new TenantScope(db, accountId).selectFrom('apiKeys').select(KEY_COLUMNS).where('id', '=', id),
);

export async function findKey(scope: TenantScope, id: string): Promise<ApiKeyView | undefined> {
  return (await keyById(scope.db as Db, scope.accountId, id))[0];
}

const firstKeys = prepared((db: Db, accountId: string, limit: number) =>
  new TenantScope(db, accountId).selectFrom('apiKeys').select(KEY_COLUMNS).orderBy('id', 'desc').limit(limit),
);
const keysAfter = prepared((db: Db, accountId: string, after: string, limit: number) =>
  new TenantScope(db, accountId).selectFrom('apiKeys').select(KEY_COLUMNS).where('id', '<', after).orderBy('id', 'desc').limit(limit),
);

/** Newest first; one row more than the page, to know whether another follows. */
export function listKeys(scope: TenantScope, page: KeysetPage): Promise<ApiKeyView[]> {
  const db = scope.db as Db;
  return page.after ? keysAfter(db, scope.accountId, page.after.id, page.limit + 1) : firstKeys(db, scope.accountId, page.limit + 1);
}

/** The account a key belongs to, whatever the account (the operator's command line revokes by id). */
export function findKeyOwner(db: Db, id: string): Promise<Pick<ApiKeyRow, 'accountId'> | undefined> {
  return db.selectFrom('apiKeys').select('accountId').where('id', '=', id).executeTakeFirst();
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

/** What a password change checks: the stored hash and the email. */
export function findPassword(db: Db | Tx, accountId: string): Promise<Pick<AccountRow, 'passwordHash' | 'email'> | undefined> {
  return db.selectFrom('accounts').select(['passwordHash', 'email']).where('id', '=', accountId).executeTakeFirst();
}

/**
 * Stores a new password hash; with `expected`, only while the stored hash is still that one (a
 * concurrent change wins once). True when the account's row changed.
 */
export async function setPasswordHash(db: Db | Tx, accountId: string, hash: string, now: number, expected?: string | null): Promise<boolean> {
  let query = db.updateTable('accounts').set({ passwordHash: hash, updatedAt: now }).where('id', '=', accountId);
  if (expected !== undefined) query = query.where('passwordHash', '=', expected);
  const updated = await query.executeTakeFirst();
  return Number(updated.numUpdatedRows) === 1;
}
