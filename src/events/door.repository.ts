import { type Insertable, type Selectable, sql } from 'kysely';
import type { Db } from '../db/database.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import { prepared } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import type { SigningKeyTable, TicketRevocationTable } from './door.table.js';
import { TICKET_COLUMNS } from './events.table.js';
import type { TicketRow } from './tickets.repository.js';

export type SigningKeyRow = Selectable<SigningKeyTable>;
export type RevocationRow = Insertable<TicketRevocationTable>;

/** The columns a key is shown with: everything but its private key. */
const PUBLIC_COLUMNS = ['id', 'accountId', 'eventId', 'kid', 'publicKey', 'status', 'createdAt', 'retiredAt'] as const;
export type PublicKeyRow = Pick<SigningKeyRow, (typeof PUBLIC_COLUMNS)[number]>;

export function pageSigningKeys(scope: TenantScope, eventId: string, page: KeysetPage): Promise<PublicKeyRow[]> {
  return keysetPage(scope.selectFrom('signingKeys').select(PUBLIC_COLUMNS).where('eventId', '=', eventId), page, 'signingKeys.id', 'signingKeys.id', 'asc').execute();
}

/** The event's keys that still verify (active and retiring), oldest first, private halves included (the active one signs the revocation list). */
export function verifyingKeys(scope: TenantScope, eventId: string): Promise<SigningKeyRow[]> {
  return scope.selectFrom('signingKeys').selectAll().where('eventId', '=', eventId).where('status', '!=', 'retired').orderBy('id').execute();
}

export function findSigningKey(scope: TenantScope, eventId: string, kid: string): Promise<PublicKeyRow | undefined> {
  return scope.selectFrom('signingKeys').select(PUBLIC_COLUMNS).where('eventId', '=', eventId).where('kid', '=', kid).executeTakeFirst();
}

/** The event's active key with its private key (the one that signs new codes), if it has one. */
export function activeSigningKey(scope: TenantScope, eventId: string): Promise<SigningKeyRow | undefined> {
  return scope.selectFrom('signingKeys').selectAll().where('eventId', '=', eventId).where('status', '=', 'active').executeTakeFirst();
}

/** The event's active key, undefined when it has none; undefined for no such event. */
// Read for every order that issues tickets: a prepared query (db/prepared.ts).
const activeKeyOfEvent = prepared((db: Db, accountId: string, eventId: string) =>
  new TenantScope(db, accountId)
    .selectFrom('events')
    .leftJoin('signingKeys', (j) => j.onRef('signingKeys.eventId', '=', 'events.id').on('signingKeys.status', '=', 'active'))
    .select(['signingKeys.id', 'signingKeys.kid', 'signingKeys.publicKey', 'signingKeys.privateKey', 'signingKeys.status', 'signingKeys.createdAt', 'signingKeys.retiredAt'])
    .where('events.id', '=', eventId),
);

export async function signerOf(scope: TenantScope, eventId: string): Promise<{ key: SigningKeyRow | undefined } | undefined> {
  const [found] = await activeKeyOfEvent(scope.db as Db, scope.accountId, eventId);
  if (!found) return undefined;
  const { id, ...key } = found;
  return { key: id === null ? undefined : ({ ...key, id, accountId: scope.accountId, eventId } as SigningKeyRow) };
}

export async function insertSigningKey(scope: TenantScope, row: SigningKeyRow): Promise<void> {
  await scope.db.insertInto('signingKeys').values(row).execute();
}

export async function setKeyStatus(scope: TenantScope, eventId: string, kid: string, status: 'retiring' | 'retired', now: number): Promise<PublicKeyRow> {
  return scope
    .updateTable('signingKeys')
    .set({ status, ...(status === 'retired' ? { retiredAt: now } : {}) })
    .where('eventId', '=', eventId)
    .where('kid', '=', kid)
    .returning(PUBLIC_COLUMNS)
    .executeTakeFirstOrThrow();
}

// The check-in of a signed code asks this once per scan (see db/prepared.ts): the key the code
// names, and whether its serial is revoked, in one round trip.
const keyAndRevocation = prepared((db: Db, accountId: string, eventId: string, kid: string, serial: string) =>
  new TenantScope(db, accountId)
    .selectFrom('signingKeys')
    .select(['kid', 'publicKey', 'status'])
    .select((eb) =>
      eb
        .selectFrom('ticketRevocations')
        .select('reason')
        .where('ticketRevocations.accountId', '=', accountId)
        .where('ticketRevocations.eventId', '=', eventId)
        .where('ticketRevocations.serial', '=', serial)
        .as('revokedFor'),
    )
    .where('eventId', '=', eventId)
    .where('kid', '=', kid),
);

/** The key `kid` of the event as a verifier needs it, and why `serial` was revoked (null: it was not); undefined without such a key. */
export async function keyForCode(scope: TenantScope, eventId: string, kid: string, serial: string) {
  const [row] = await keyAndRevocation(scope.db as Db, scope.accountId, eventId, kid, serial);
  return row as { kid: string; publicKey: string; status: string; revokedFor: string | null } | undefined;
}

export async function insertRevocations(scope: TenantScope, rows: RevocationRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) await scope.db.insertInto('ticketRevocations').values(rows.slice(i, i + 500)).execute();
}

/** Every revoked serial of the event (the revocation list), in no particular order. */
export async function revokedSerials(scope: TenantScope, eventId: string): Promise<string[]> {
  const rows = await scope.selectFrom('ticketRevocations').select('serial').where('eventId', '=', eventId).execute();
  return rows.map((r) => r.serial);
}

/**
 * What versions the revocation list without reading it: how many serials and when the last came.
 * Revocations are only ever added (a serial is never taken off), so these two change with it.
 */
export async function revocationsVersion(scope: TenantScope, eventId: string): Promise<{ count: number; latest: number | null }> {
  const row = await scope
    .selectFrom('ticketRevocations')
    .select((eb) => [eb.fn.countAll<number | string>().as('count'), eb.fn.max<number | string | null>('createdAt').as('latest')])
    .where('eventId', '=', eventId)
    .executeTakeFirstOrThrow();
  // PostgreSQL answers count and max of a bigint as strings.
  return { count: Number(row.count), latest: row.latest === null ? null : Number(row.latest) };
}

/** Up to `limit` valid tickets of the event with a signed code (`M1...`), by id, after `afterId`. */
export function signedTicketsOfEvent(scope: TenantScope, eventId: string, afterId: string, limit: number): Promise<TicketRow[]> {
  return scope
    .selectFrom('tickets')
    .select(TICKET_COLUMNS)
    .where('eventId', '=', eventId)
    .where('status', '=', 'valid')
    .where('id', '>', afterId)
    .where('code', 'like', 'M1%')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Tickets' new codes (a reissue), in one statement; every other column stays. */
export async function replaceCodes(scope: TenantScope, codes: Array<{ id: string; code: string }>, now: number): Promise<void> {
  if (codes.length === 0) return;
  const byId = sql<string>`case ${sql.ref('id')} ${sql.join(codes.map((c) => sql`when ${c.id} then ${c.code}`), sql` `)} end`;
  await scope
    .updateTable('tickets')
    .set({ code: byId, updatedAt: now })
    .where('id', 'in', codes.map((c) => c.id))
    .execute();
}

/** The event's ticket types by id: the names a scanner shows. */
export function ticketTypeNames(scope: TenantScope, eventId: string): Promise<Array<{ id: string; name: string }>> {
  return scope.selectFrom('ticketTypes').select(['id', 'name']).where('eventId', '=', eventId).orderBy('id').execute();
}

/** The status of the event's keys named by `kids` (a batch of scans asks once). */
export function keyStatuses(scope: TenantScope, eventId: string, kids: string[]): Promise<Array<{ kid: string; status: string }>> {
  if (kids.length === 0) return Promise.resolve([]);
  return scope.selectFrom('signingKeys').select(['kid', 'status']).where('eventId', '=', eventId).where('kid', 'in', kids).execute();
}

/** Why each of `serials` was revoked, for those that were (a batch of scans asks once). */
export async function revocationsOf(scope: TenantScope, eventId: string, serials: string[]): Promise<Array<{ serial: string; reason: string }>> {
  const found: Array<{ serial: string; reason: string }> = [];
  for (let i = 0; i < serials.length; i += 500) {
    found.push(...(await scope.selectFrom('ticketRevocations').select(['serial', 'reason']).where('eventId', '=', eventId).where('serial', 'in', serials.slice(i, i + 500)).execute()));
  }
  return found;
}
