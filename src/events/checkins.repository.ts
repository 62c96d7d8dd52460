import type { Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import { prepared, preparedNamed } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import { fanOut, type OneMessageFanOutValues, type OutboxMessage, type Subscriptions } from '../webhooks/outbox.js';
import { type CheckinTable, TICKET_COLUMNS, type TicketTable } from './events.table.js';
import type { TicketKey, TicketRow } from './tickets.repository.js';

export type CheckinRow = Selectable<CheckinTable>;

/** One scan's own facts: when it happened (the scanner's time), when the server saw it, where, by which key. */
export interface Scan {
  scannedAt: number;
  now: number;
  gate: string | null;
  keyId: string | null;
}

// The door's hot path runs on prepared queries (see db/prepared.ts): a scanner may send thousands a second.

/** The check-in itself: one conditional update that succeeds only for a valid ticket of the event not yet in. */
const checkInQuery = (by: 'id' | 'code') => (db: Db, accountId: string, eventId: string, value: string, at: number, checkinId: string, now: number) =>
  new TenantScope(db, accountId)
    .updateTable('tickets')
    .set({ checkedInAt: at, checkinId, updatedAt: now })
    .where('eventId', '=', eventId)
    .where(by, '=', value)
    .where('status', '=', 'valid')
    .where('checkedInAt', 'is', null)
    .returning(TICKET_COLUMNS);
const checkInById = prepared(checkInQuery('id'));
const checkInByCode = prepared(checkInQuery('code'));

const recordCheckin = prepared(
  (db: Db, id: string, accountId: string, eventId: string, ticketId: string, action: string, gate: string | null, scannedAt: number, keyId: string | null, createdAt: number) =>
    db.insertInto('checkins').values({ id, accountId, eventId, ticketId, action, gate, scannedAt, keyId, createdAt }),
);

/**
 * A check-in in the transaction: the ticket of the event that `key` names, if it is valid and not
 * checked in yet, is checked in and its history row written. The ticket as checked in, or
 * undefined (nothing written) when there was no such ticket.
 */
export async function writeCheckIn(tx: TenantScope, eventId: string, key: TicketKey, checkinId: string, scan: Scan): Promise<TicketRow | undefined> {
  const db = tx.db as Db;
  const [checkedIn] =
    key.ticketId !== undefined
      ? await checkInById(db, tx.accountId, eventId, key.ticketId, scan.scannedAt, checkinId, scan.now)
      : await checkInByCode(db, tx.accountId, eventId, key.code!, scan.scannedAt, checkinId, scan.now);
  if (!checkedIn) return undefined;
  await recordCheckin(db, checkinId, tx.accountId, eventId, checkedIn.id, 'checkin', scan.gate, scan.scannedAt, scan.keyId, scan.now);
  return checkedIn;
}

/**
 * An undo in the transaction: the ticket of the event, if it is valid and checked in, is checked
 * out and the undo's history row written. The ticket as it is now, or undefined (nothing written).
 */
export async function writeUndoCheckIn(tx: TenantScope, eventId: string, ticketId: string, checkinId: string, keyId: string | null, now: number): Promise<TicketRow | undefined> {
  const undone = await tx
    .updateTable('tickets')
    .set({ checkedInAt: null, checkinId: null, updatedAt: now })
    .where('id', '=', ticketId)
    .where('eventId', '=', eventId)
    .where('status', '=', 'valid')
    .where('checkedInAt', 'is not', null)
    .returningAll()
    .executeTakeFirst();
  if (!undone) return undefined;
  await recordCheckin(tx.db as Db, checkinId, tx.accountId, eventId, ticketId, 'undo', null, now, keyId, now);
  return undone;
}

/**
 * PostgreSQL's door path in two round trips instead of the transactional path's five or six
 * (BEGIN, the check-in, its history row, the outbox message, its delivery jobs when a subscription
 * wants it, COMMIT): on PostgreSQL each statement is a round trip, and a busy door sends thousands
 * a second. The transactional path is left for what this one does not decide, which is rare.
 * First one read: the ticket the scan names, and the account's enabled webhook subscriptions.
 * Then one statement, which PostgreSQL runs as one transaction: the check-in, its history row,
 * its outbox message and the message's delivery jobs, all conditional on the ticket row being
 * exactly as it was read. The message (which holds the ticket) is built from that read, so it
 * holds what the statement commits. The subscriptions are those of the read: one created or
 * removed between the read and the write may miss the message or get a job that its worker then
 * drops, as with any subscription changed while a change commits. A scan whose ticket this read
 * shows refused is refused from it; one whose ticket is not found, or changed before the write,
 * takes the transactional path.
 */
const ticketWithSubscriptions = (by: 'id' | 'code') =>
  prepared((db: Db, accountId: string, eventId: string, value: string) =>
    new TenantScope(db, accountId)
      .selectFrom('tickets')
      .select(TICKET_COLUMNS)
      .select(fanOut.subscriptions('tickets.accountId').as('subscriptions'))
      .where('eventId', '=', eventId)
      .where(by, '=', value),
  );
const ticketWithSubscriptionsById = ticketWithSubscriptions('id');
const ticketWithSubscriptionsByCode = ticketWithSubscriptions('code');

/** PostgreSQL: the ticket of the event that `key` names, and whom a message about it goes to, in one read. */
export async function readForCheckIn(scope: TenantScope, eventId: string, key: TicketKey): Promise<{ ticket: TicketRow; subscriptions: Subscriptions } | undefined> {
  const db = scope.db as Db;
  const [found] =
    key.ticketId !== undefined
      ? await ticketWithSubscriptionsById(db, scope.accountId, eventId, key.ticketId)
      : await ticketWithSubscriptionsByCode(db, scope.accountId, eventId, key.code!);
  if (!found) return undefined;
  const { subscriptions, ...ticket } = found;
  return { ticket, subscriptions };
}

type TicketColumn = (typeof TICKET_COLUMNS)[number];
/** A ticket column's value as read, as a named argument. */
const asRead = <C extends TicketColumn>(column: C) => `was${column[0]!.toUpperCase()}${column.slice(1)}` as `was${Capitalize<C>}`;
type AsRead = { [C in TicketColumn as `was${Capitalize<C>}`]: TicketTable[C] };

/** checkInAsReadStatement's named arguments. */
type CheckInStatement = { accountId: string; at: number; checkinId: string; now: number; gate: string | null; keyId: string | null } & OneMessageFanOutValues & AsRead;

const CHECK_IN_STATEMENT = ['accountId', 'at', 'checkinId', 'now', 'gate', 'keyId', ...fanOut.oneNames, ...TICKET_COLUMNS.map(asRead)] as const satisfies ReadonlyArray<keyof CheckInStatement>;

const checkInAsReadStatement = preparedNamed(CHECK_IN_STATEMENT, (db: Db, p: CheckInStatement) =>
  fanOut
    .into(
      db
        .with('checked', (qc) =>
          qc
            .updateTable('tickets')
            .set({ checkedInAt: p.at, checkinId: p.checkinId, updatedAt: p.now })
            // By primary key (`is not distinct from` cannot use an index), then every column as read.
            .where('id', '=', p.wasId)
            .where((eb) => eb.and(TICKET_COLUMNS.map((column) => eb(column, 'is not distinct from', p[asRead(column)] as TicketTable[typeof column]))))
            .returning(['id', 'accountId', 'eventId']),
        )
        .with('recorded', (qc) =>
          qc
            .insertInto('checkins')
            .columns(['id', 'accountId', 'eventId', 'ticketId', 'action', 'gate', 'scannedAt', 'keyId', 'createdAt'])
            .expression((eb) =>
              eb
                .selectFrom('checked')
                .select([
                  eb.cast<string>(eb.val(p.checkinId), 'text').as('id'),
                  'checked.accountId',
                  'checked.eventId',
                  'checked.id',
                  eb.cast<string>(eb.val('checkin'), 'text').as('action'),
                  eb.cast<string | null>(eb.val(p.gate), 'text').as('gate'),
                  eb.cast<number>(eb.val(p.at), 'bigint').as('scannedAt'),
                  eb.cast<string | null>(eb.val(p.keyId), 'text').as('keyId'),
                  eb.cast<number>(eb.val(p.now), 'bigint').as('createdAt'),
                ]),
            ),
        ),
      'checked',
      p,
    )
    .selectFrom('checked')
    .select('checked.id'),
);

/**
 * PostgreSQL, one statement: checks `ticket` in (as readForCheckIn read it, and only if its row
 * is still exactly so), with its history row, its message and the message's delivery jobs. False, with
 * nothing written, when the row changed since the read.
 */
export async function writeCheckInAsRead(
  scope: TenantScope,
  ticket: TicketRow,
  checkinId: string,
  scan: Scan,
  message: OutboxMessage,
  subscriptions: Subscriptions,
): Promise<boolean> {
  const db = scope.db as Db;
  const fanned = fanOut.oneValues(scope.accountId, message, subscriptions, scan.now);
  const read = Object.fromEntries(TICKET_COLUMNS.map((column) => [asRead(column), ticket[column]])) as AsRead;
  const written = await checkInAsReadStatement(db, {
    accountId: scope.accountId,
    at: scan.scannedAt,
    checkinId,
    now: scan.now,
    gate: scan.gate,
    keyId: scan.keyId,
    ...fanned,
    ...read,
  });
  if (written.length === 0) return false;
  fanOut.written(db, fanned);
  return true;
}

export function findCheckin(scope: TenantScope, eventId: string, id: string): Promise<CheckinRow | undefined> {
  return scope.selectFrom('checkins').selectAll().where('eventId', '=', eventId).where('id', '=', id).executeTakeFirst();
}

/** One page of the event's check-in history (of one ticket, if given), newest first. */
export function pageCheckins(scope: TenantScope, eventId: string, ticketId: string | undefined, page: KeysetPage): Promise<CheckinRow[]> {
  let query = scope.selectFrom('checkins').selectAll().where('eventId', '=', eventId);
  if (ticketId !== undefined) query = query.where('ticketId', '=', ticketId);
  return keysetPage(query, page, 'checkins.id', 'checkins.id', 'desc').execute();
}
