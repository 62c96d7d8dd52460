import { type ExpressionBuilder, type Insertable, type Selectable, sql } from 'kysely';
import type { Db } from '../db/database.js';
import { onPostgres, prepared, preparedNamed } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { type FanOutValues, fanOut, type OutboxMessage, type Subscriptions } from '../webhooks/outbox.js';
import { listTicketTypes, type TicketTypeRow } from './events.repository.js';
import { type OrderTable, TICKET_TYPE_COLUMNS } from './events.table.js';
import type { TicketRow } from './tickets.repository.js';

export type OrderRow = Selectable<OrderTable>;

export function findOrder(scope: TenantScope, id: string): Promise<OrderRow | undefined> {
  return scope.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
}

const typesListingSubscriptions = prepared((db: Db, accountId: string, eventId: string) =>
  new TenantScope(db, accountId)
    .selectFrom('ticketTypes')
    .select(TICKET_TYPE_COLUMNS)
    .select(fanOut.subscriptions('ticketTypes.accountId').as('subscriptions'))
    .where('eventId', '=', eventId)
    .orderBy('id'),
);

/**
 * The event's ticket types as an order reads them (after the event's lock: current inventory),
 * and on PostgreSQL, in the same round trip, the subscriptions writeOrder's one statement fans
 * out to (null on SQLite, whose writeOrder reads them itself).
 */
export async function ticketTypesForOrder(tx: TenantScope, eventId: string): Promise<{ types: TicketTypeRow[]; subscriptions: Subscriptions | null }> {
  if (!onPostgres(tx.db)) return { types: await listTicketTypes(tx, eventId), subscriptions: null };
  const rows = await typesListingSubscriptions(tx.db as Db, tx.accountId, eventId);
  return { types: rows.map(({ subscriptions: _, ...type }): TicketTypeRow => type), subscriptions: rows[0]?.subscriptions ?? [] };
}

/** An order's whole write: what it takes from inventory, what it writes, what it reports. */
export interface OrderWrite {
  order: Insertable<OrderTable>;
  tickets: TicketRow[];
  /** The tickets in all, taken from the event's capacity. */
  count: number;
  /** What each ticket type gives, by ticket type id (the order in which they are taken). */
  taken: Array<{ ticketTypeId: string; quantity: number }>;
  messages: OutboxMessage[];
  /** As ticketTypesForOrder read them. */
  subscriptions: Subscriptions | null;
  now: number;
}

const text = (eb: ExpressionBuilder<any, any>, value: string) => eb.cast<string>(eb.val(value), 'text');
const bigint = (eb: ExpressionBuilder<any, any>, value: number) => eb.cast<number>(eb.val(value), 'bigint');

/** writeOrderStatement's named arguments. */
type OrderStatement = {
  accountId: string;
  eventId: string;
  count: number;
  now: number;
  typeCount: number;
  typeIds: string[];
  typeQuantities: number[];
  orderId: string;
  buyerName: string;
  buyerEmail: string;
  items: string;
  total: number;
  currency: string;
  ticketIds: string[];
  ticketTypeIds: string[];
  attendeeNames: string[];
  attendeeEmails: string[];
  codes: string[];
  prices: number[];
} & FanOutValues;

const ORDER_STATEMENT = [
  'accountId',
  'eventId',
  'count',
  'now',
  'typeCount',
  'typeIds',
  'typeQuantities',
  'orderId',
  'buyerName',
  'buyerEmail',
  'items',
  'total',
  'currency',
  'ticketIds',
  'ticketTypeIds',
  'attendeeNames',
  'attendeeEmails',
  'codes',
  'prices',
  ...fanOut.names,
] as const satisfies ReadonlyArray<keyof OrderStatement>;

/**
 * PostgreSQL: an order's whole write in one statement (data-modifying CTEs). The inventory's two
 * conditional updates, then, only if both took all of it (`taken`), the order, its tickets, its
 * outbox messages and their delivery jobs. No row if the inventory was refused. The event's lock
 * is held from its read to COMMIT, and every order of the event waits for it: this way it is held
 * for three round trips (the ticket types, this, COMMIT) instead of one per statement.
 */
const writeOrderStatement = preparedNamed(ORDER_STATEMENT, (db: Db, p: OrderStatement) =>
  fanOut
    .into(
      db
        .with('event', (qc) =>
          qc
            .updateTable('events')
            .set((eb) => ({ sold: eb('sold', '+', p.count), ticketsIssued: eb('ticketsIssued', '+', p.count), updatedAt: p.now }))
            .where('accountId', '=', p.accountId)
            .where('id', '=', p.eventId)
            .where((eb) => eb.or([eb('capacity', 'is', null), eb(eb('sold', '+', p.count), '<=', eb.ref('capacity'))]))
            .returning('id'),
        )
        .with('types', (qc) =>
          qc
            .updateTable('ticketTypes')
            .from(sql<{ id: string; quantity: number }>`unnest(${p.typeIds}::text[], ${p.typeQuantities}::integer[])`.as<'wanted'>(sql`wanted(id, quantity)`))
            .set((eb) => ({ sold: eb('ticketTypes.sold', '+', eb.ref('wanted.quantity')), updatedAt: p.now }))
            .whereRef('ticketTypes.id', '=', 'wanted.id')
            .where('ticketTypes.accountId', '=', p.accountId)
            .where('ticketTypes.eventId', '=', p.eventId)
            .where((eb) => eb(eb('ticketTypes.sold', '+', eb.ref('wanted.quantity')), '<=', eb.ref('ticketTypes.quantity')))
            .returning('ticketTypes.id'),
        )
        .with('taken', (qc) => qc.selectFrom('event').select(sql<number>`1`.as('ok')).where(sql<boolean>`(select count(*) from types) = ${p.typeCount}`))
        .with('ordered', (qc) =>
          qc
            .insertInto('orders')
            .columns(['id', 'accountId', 'eventId', 'buyerName', 'buyerEmail', 'items', 'total', 'currency', 'status', 'createdAt'])
            .expression((eb) =>
              eb
                .selectFrom('taken')
                .select([
                  text(eb, p.orderId).as('id'),
                  text(eb, p.accountId).as('accountId'),
                  text(eb, p.eventId).as('eventId'),
                  text(eb, p.buyerName).as('buyerName'),
                  text(eb, p.buyerEmail).as('buyerEmail'),
                  text(eb, p.items).as('items'),
                  bigint(eb, p.total).as('total'),
                  text(eb, p.currency).as('currency'),
                  text(eb, 'completed').as('status'),
                  bigint(eb, p.now).as('createdAt'),
                ]),
            ),
        )
        .with('issued', (qc) =>
          qc
            .insertInto('tickets')
            .columns(['id', 'accountId', 'eventId', 'ticketTypeId', 'orderId', 'status', 'attendeeName', 'attendeeEmail', 'code', 'price', 'currency', 'refundedAmount', 'createdAt', 'updatedAt'])
            .expression((eb) =>
              eb
                .selectFrom([
                  'taken',
                  sql<{ id: string; ticketTypeId: string; attendeeName: string; attendeeEmail: string; code: string; price: number }>`unnest(${p.ticketIds}::text[], ${p.ticketTypeIds}::text[], ${p.attendeeNames}::text[], ${p.attendeeEmails}::text[], ${p.codes}::text[], ${p.prices}::bigint[])`.as<'t'>(
                    sql`t(id, ticket_type_id, attendee_name, attendee_email, code, price)`,
                  ),
                ])
                .select([
                  't.id',
                  text(eb, p.accountId).as('accountId'),
                  text(eb, p.eventId).as('eventId'),
                  't.ticketTypeId',
                  text(eb, p.orderId).as('orderId'),
                  text(eb, 'valid').as('status'),
                  't.attendeeName',
                  't.attendeeEmail',
                  't.code',
                  't.price',
                  text(eb, p.currency).as('currency'),
                  bigint(eb, 0).as('refundedAmount'),
                  bigint(eb, p.now).as('createdAt'),
                  bigint(eb, p.now).as('updatedAt'),
                ]),
            ),
        ),
      'taken',
      p,
    )
    .selectFrom('taken')
    .select('taken.ok'),
);

/**
 * Writes an order, all or nothing, in the transaction that holds its event's lock: takes its
 * tickets from the event's capacity and from each ticket type with conditional updates (`sold + n
 * <= capacity`, `sold + n <= quantity`), then writes the order, its tickets and its messages.
 * False, with nothing written, when the inventory refused it. PostgreSQL: one statement
 * (writeOrderStatement). SQLite, in-process: statement by statement.
 */
export async function writeOrder(tx: TenantScope, w: OrderWrite): Promise<boolean> {
  const { order, tickets, count, taken, messages, now } = w;
  if (w.subscriptions !== null) {
    const fanned = fanOut.values(tx.accountId, messages, w.subscriptions, now);
    const written = await writeOrderStatement(tx.db as Db, {
      accountId: tx.accountId,
      eventId: order.eventId,
      count,
      now,
      typeCount: taken.length,
      typeIds: taken.map((item) => item.ticketTypeId),
      typeQuantities: taken.map((item) => item.quantity),
      orderId: order.id,
      buyerName: order.buyerName,
      buyerEmail: order.buyerEmail,
      items: order.items,
      total: order.total,
      currency: order.currency,
      ticketIds: tickets.map((t) => t.id),
      ticketTypeIds: tickets.map((t) => t.ticketTypeId),
      attendeeNames: tickets.map((t) => t.attendeeName),
      attendeeEmails: tickets.map((t) => t.attendeeEmail),
      codes: tickets.map((t) => t.code),
      prices: tickets.map((t) => t.price),
      ...fanned,
    });
    if (written.length === 0) return false;
    fanOut.written(tx.db, fanned);
    return true;
  }
  const takenFromEvent = await tx
    .updateTable('events')
    .set((eb) => ({ sold: eb('sold', '+', count), ticketsIssued: eb('ticketsIssued', '+', count), updatedAt: now }))
    .where('id', '=', order.eventId)
    .where((eb) => eb.or([eb('capacity', 'is', null), eb(eb('sold', '+', count), '<=', eb.ref('capacity'))]))
    .executeTakeFirst();
  if (Number(takenFromEvent.numUpdatedRows) !== 1) return false;
  for (const item of taken) {
    const takenFromType = await tx
      .updateTable('ticketTypes')
      .set((eb) => ({ sold: eb('sold', '+', item.quantity), updatedAt: now }))
      .where('id', '=', item.ticketTypeId)
      .where((eb) => eb(eb('sold', '+', item.quantity), '<=', eb.ref('quantity')))
      .executeTakeFirst();
    if (Number(takenFromType.numUpdatedRows) !== 1) return false;
  }
  await tx.db.insertInto('orders').values(order).execute();
  for (let i = 0; i < tickets.length; i += 100) await tx.db.insertInto('tickets').values(tickets.slice(i, i + 100)).execute();
  await fanOut.inTransaction(tx.db, tx.accountId, messages, now);
  return true;
}
