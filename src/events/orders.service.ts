import { type ExpressionBuilder, type Insertable, sql } from 'kysely';
import type { Static } from 'typebox';
import type { Db } from '../db/database.js';
import { onPostgres, prepared } from '../db/prepared.js';
import { TenantScope } from '../db/tenant.js';
import { afterCommit } from '../db/transaction.js';
import { AppError, invalid, notFound } from '../errors.js';
import { newId, randomBase62 } from '../ids.js';
import { iso } from '../time.js';
import { insertJobsUnnest, type JobArrays, jobArrays, jobRows } from '../jobs/queue.js';
import { jobsQueued } from '../jobs/signal.js';
import { deliveryJobs, enabledSubscriptionsColumn, enqueueMessages, type OutboxMessage, outboxRow } from '../webhooks/outbox.js';
import * as repo from './events.repository.js';
import type { CreateOrderBody, TransferBody } from './events.schemas.js';
import { type OrderTable, TICKET_TYPE_COLUMNS } from './events.table.js';
import { presentEvent } from './events.service.js';

type TicketRow = repo.TicketRow;

const MAX_TICKETS_PER_ORDER = 100;

/** The secret in a ticket's QR code: 22 base62 characters (~131 bits). */
const newTicketCode = () => randomBase62(22);

export function presentTicket(row: TicketRow) {
  return {
    id: row.id,
    eventId: row.eventId,
    ticketTypeId: row.ticketTypeId,
    orderId: row.orderId,
    status: row.status as 'valid' | 'cancelled',
    attendee: { name: row.attendeeName, email: row.attendeeEmail },
    code: row.code,
    price: row.price,
    currency: row.currency,
    refundedAmount: row.refundedAmount,
    checkedIn: row.checkedInAt !== null,
    checkedInAt: iso(row.checkedInAt),
    createdAt: iso(row.createdAt),
    cancelledAt: iso(row.cancelledAt),
  };
}

export type PresentedTicket = ReturnType<typeof presentTicket>;

function refundOf(ticket: TicketRow): OutboxMessage[] {
  return ticket.price > 0
    ? [{ event: 'payment.refunded', data: { orderId: ticket.orderId, ticketId: ticket.id, amount: ticket.price, currency: ticket.currency } }]
    : [];
}

const typesListingSubscriptions = prepared((db: Db, accountId: string, eventId: string) =>
  new TenantScope(db, accountId)
    .selectFrom('ticketTypes')
    .select(TICKET_TYPE_COLUMNS)
    .select(enabledSubscriptionsColumn('ticketTypes.accountId').as('subscriptions'))
    .where('eventId', '=', eventId)
    .orderBy('id'),
);

/** PostgreSQL: the event's ticket types and the account's enabled subscriptions, in one round trip. */
async function ticketTypesWithSubscriptions(tx: TenantScope, eventId: string) {
  const rows = await typesListingSubscriptions(tx.db as Db, tx.accountId, eventId);
  const subscriptions = (rows[0]?.subscriptions ?? []).map(([id, events]) => ({ id, events }));
  return { types: rows.map(({ subscriptions: _, ...type }): repo.TicketTypeRow => type), subscriptions };
}

type OrderRow = Insertable<OrderTable>;
type SoldItem = { quantity: number; type: repo.TicketTypeRow };

/**
 * Why an order's inventory was refused: the first of the event's capacity, then its ticket types
 * by id, that cannot hold it. From the rows as read under the event's lock, which every change of
 * `sold` takes first (so they are current); the database's conditional updates did the refusing.
 */
function soldOut(event: repo.EventRow, sorted: SoldItem[], count: number): AppError {
  const available = Math.max(0, (event.capacity ?? 0) - event.sold);
  if (event.capacity !== null && event.sold + count > event.capacity) {
    return new AppError('sold_out', `Event ${event.id} has ${available} of ${event.capacity} places left.`, { available });
  }
  for (const item of sorted) {
    const left = Math.max(0, item.type.quantity - item.type.sold);
    if (item.quantity > left) {
      return new AppError('sold_out', `Ticket type ${item.type.id} has ${left} of ${item.type.quantity} left.`, { ticketTypeId: item.type.id, available: left });
    }
  }
  return new AppError('sold_out', `Event ${event.id} has no places left for this order.`, { available });
}

const text = (eb: ExpressionBuilder<any, any>, value: string) => eb.cast<string>(eb.val(value), 'text');
const bigint = (eb: ExpressionBuilder<any, any>, value: number) => eb.cast<number>(eb.val(value), 'bigint');

/**
 * PostgreSQL: an order's whole write in one statement (data-modifying CTEs). The inventory's two
 * conditional updates, then, only if both took all of it (`taken`), the order, its tickets, its
 * outbox messages and their delivery jobs. No row if the inventory was refused. The event's lock
 * is held from its read to COMMIT, and every order of the event waits for it: this way it is held
 * for three round trips (the ticket types, this, COMMIT) instead of one per statement.
 */
const writeOrderStatement = prepared(
  (
    db: Db,
    accountId: string,
    eventId: string,
    count: number,
    now: number,
    typeCount: number,
    typeIds: string[],
    typeQuantities: number[],
    orderId: string,
    buyerName: string,
    buyerEmail: string,
    items: string,
    total: number,
    currency: string,
    ticketIds: string[],
    ticketTypeIds: string[],
    attendeeNames: string[],
    attendeeEmails: string[],
    codes: string[],
    prices: number[],
    messageIds: string[],
    eventTypes: string[],
    payloads: string[],
    ...jobs: JobArrays
  ) =>
    db
      .with('event', (qc) =>
        qc
          .updateTable('events')
          .set((eb) => ({ sold: eb('sold', '+', count), ticketsIssued: eb('ticketsIssued', '+', count), updatedAt: now }))
          .where('accountId', '=', accountId)
          .where('id', '=', eventId)
          .where((eb) => eb.or([eb('capacity', 'is', null), eb(eb('sold', '+', count), '<=', eb.ref('capacity'))]))
          .returning('id'),
      )
      .with('types', (qc) =>
        qc
          .updateTable('ticketTypes')
          .from(sql<{ id: string; quantity: number }>`unnest(${typeIds}::text[], ${typeQuantities}::integer[])`.as<'wanted'>(sql`wanted(id, quantity)`))
          .set((eb) => ({ sold: eb('ticketTypes.sold', '+', eb.ref('wanted.quantity')), updatedAt: now }))
          .whereRef('ticketTypes.id', '=', 'wanted.id')
          .where('ticketTypes.accountId', '=', accountId)
          .where('ticketTypes.eventId', '=', eventId)
          .where((eb) => eb(eb('ticketTypes.sold', '+', eb.ref('wanted.quantity')), '<=', eb.ref('ticketTypes.quantity')))
          .returning('ticketTypes.id'),
      )
      .with('taken', (qc) => qc.selectFrom('event').select(sql<number>`1`.as('ok')).where(sql<boolean>`(select count(*) from types) = ${typeCount}`))
      .with('ordered', (qc) =>
        qc
          .insertInto('orders')
          .columns(['id', 'accountId', 'eventId', 'buyerName', 'buyerEmail', 'items', 'total', 'currency', 'status', 'createdAt'])
          .expression((eb) =>
            eb
              .selectFrom('taken')
              .select([
                text(eb, orderId).as('id'),
                text(eb, accountId).as('accountId'),
                text(eb, eventId).as('eventId'),
                text(eb, buyerName).as('buyerName'),
                text(eb, buyerEmail).as('buyerEmail'),
                text(eb, items).as('items'),
                bigint(eb, total).as('total'),
                text(eb, currency).as('currency'),
                text(eb, 'completed').as('status'),
                bigint(eb, now).as('createdAt'),
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
                sql<{ id: string; ticketTypeId: string; attendeeName: string; attendeeEmail: string; code: string; price: number }>`unnest(${ticketIds}::text[], ${ticketTypeIds}::text[], ${attendeeNames}::text[], ${attendeeEmails}::text[], ${codes}::text[], ${prices}::bigint[])`.as<'t'>(
                  sql`t(id, ticket_type_id, attendee_name, attendee_email, code, price)`,
                ),
              ])
              .select([
                't.id',
                text(eb, accountId).as('accountId'),
                text(eb, eventId).as('eventId'),
                't.ticketTypeId',
                text(eb, orderId).as('orderId'),
                text(eb, 'valid').as('status'),
                't.attendeeName',
                't.attendeeEmail',
                't.code',
                't.price',
                text(eb, currency).as('currency'),
                bigint(eb, 0).as('refundedAmount'),
                bigint(eb, now).as('createdAt'),
                bigint(eb, now).as('updatedAt'),
              ]),
          ),
      )
      .with('message', (qc) =>
        qc
          .insertInto('webhookMessages')
          .columns(['id', 'accountId', 'eventType', 'payload', 'createdAt'])
          .expression((eb) =>
            eb
              .selectFrom([
                'taken',
                sql<{ id: string; eventType: string; payload: string }>`unnest(${messageIds}::text[], ${eventTypes}::text[], ${payloads}::text[])`.as<'m'>(sql`m(id, event_type, payload)`),
              ])
              .select(['m.id', text(eb, accountId).as('accountId'), 'm.eventType', 'm.payload', bigint(eb, now).as('createdAt')]),
          ),
      )
      .with('queued', (qc) => insertJobsUnnest(qc, 'taken', jobs))
      .selectFrom('taken')
      .select('taken.ok'),
);

/** Runs writeOrderStatement; false if the inventory was refused (nothing was written then). */
async function writeOrderAtOnce(
  tx: TenantScope,
  order: OrderRow,
  sorted: SoldItem[],
  count: number,
  tickets: TicketRow[],
  messages: OutboxMessage[],
  subscriptions: ReadonlyArray<{ id: string; events: string }>,
  now: number,
): Promise<boolean> {
  const rows = messages.map((message) => outboxRow(tx.accountId, message, now));
  const jobs = jobRows(deliveryJobs(subscriptions, messages, rows), now);
  const written = await writeOrderStatement(
    tx.db as Db,
    tx.accountId,
    order.eventId,
    count,
    now,
    sorted.length,
    sorted.map((item) => item.type.id),
    sorted.map((item) => item.quantity),
    order.id,
    order.buyerName,
    order.buyerEmail,
    order.items,
    order.total,
    order.currency,
    tickets.map((t) => t.id),
    tickets.map((t) => t.ticketTypeId),
    tickets.map((t) => t.attendeeName),
    tickets.map((t) => t.attendeeEmail),
    tickets.map((t) => t.code),
    tickets.map((t) => t.price),
    rows.map((r) => r.id),
    rows.map((r) => r.eventType),
    rows.map((r) => r.payload),
    ...jobArrays(jobs),
  );
  if (written.length === 0) return false;
  if (jobs.length > 0) afterCommit(tx.db, jobsQueued);
  return true;
}

/**
 * Issues the tickets of an order, all or nothing. Inventory is taken with conditional
 * updates inside the transaction (`sold + n <= capacity`, `sold + n <= quantity`), after the
 * event's lock, which every writer of the event's inventory takes first: concurrent orders
 * neither oversell nor deadlock.
 */
export async function createOrder(scope: TenantScope, eventId: string, input: Static<typeof CreateOrderBody>) {
  const seen = new Set<string>();
  let count = 0;
  input.items.forEach((item, i) => {
    if (seen.has(item.ticketTypeId)) throw invalid(`/items/${i}/ticketTypeId`, 'appears twice; put the quantity in one item');
    seen.add(item.ticketTypeId);
    if (item.attendees && item.attendees.length > item.quantity) throw invalid(`/items/${i}/attendees`, 'has more attendees than the quantity');
    count += item.quantity;
  });
  if (count > MAX_TICKETS_PER_ORDER) throw invalid('/items', `may hold at most ${MAX_TICKETS_PER_ORDER} tickets in all`);

  return scope.transaction(async (tx) => {
    const now = Date.now();
    // Locked first, so a concurrent cancel or publish is seen before anything is sold.
    const event = await repo.requireLockedEvent(tx, eventId);
    if (event.status === 'draft') throw new AppError('event_not_published', `Event ${eventId} is not published yet.`);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled.`);
    if (now >= event.endsAt) throw new AppError('sales_closed', `Event ${eventId} has ended.`);

    // Read after the lock (a statement's snapshot is taken when it starts): current inventory, and
    // on PostgreSQL the subscriptions writeOrderAtOnce fans out to (null on SQLite, whose
    // enqueueMessages reads them itself).
    const { types: typeRows, subscriptions } = onPostgres(tx.db)
      ? await ticketTypesWithSubscriptions(tx, eventId)
      : { types: await repo.listTicketTypes(tx, eventId), subscriptions: null };
    const types = new Map(typeRows.map((t) => [t.id, t]));
    const items = input.items.map((item, i) => {
      const type = types.get(item.ticketTypeId);
      if (!type) throw invalid(`/items/${i}/ticketTypeId`, `is not a ticket type of event ${eventId}`);
      if (type.maxPerOrder !== null && item.quantity > type.maxPerOrder) {
        throw invalid(`/items/${i}/quantity`, `must be at most ${type.maxPerOrder} for ${type.name}`);
      }
      if ((type.salesStartAt !== null && now < type.salesStartAt) || (type.salesEndAt !== null && now >= type.salesEndAt)) {
        throw new AppError('sales_closed', `Sales of ticket type ${type.id} are closed now.`, {
          ticketTypeId: type.id,
          salesStartAt: iso(type.salesStartAt),
          salesEndAt: iso(type.salesEndAt),
        });
      }
      return { ...item, type };
    });

    // Inventory with conditional updates (the event's capacity, then the ticket types): the
    // database refuses to sell what is not there. `sorted`: the order of soldOut's answer.
    const sorted = [...items].sort((a, b) => (a.type.id < b.type.id ? -1 : 1));
    const orderId = newId('order');
    const tickets: TicketRow[] = items.flatMap((item) =>
      Array.from({ length: item.quantity }, (_, n) => {
        const holder = item.attendees?.[n] ?? input.buyer;
        return {
          id: newId('ticket'),
          accountId: scope.accountId,
          eventId,
          ticketTypeId: item.type.id,
          orderId,
          status: 'valid',
          attendeeName: holder.name,
          attendeeEmail: holder.email.toLowerCase(),
          code: newTicketCode(),
          price: item.type.price,
          currency: event.currency,
          refundedAmount: 0,
          checkedInAt: null,
          checkinId: null,
          createdAt: now,
          updatedAt: now,
          cancelledAt: null,
        };
      }),
    );
    const orderItems = items.map((item) => ({
      ticketTypeId: item.type.id,
      quantity: item.quantity,
      unitPrice: item.type.price,
      amount: item.type.price * item.quantity,
    }));
    const total = orderItems.reduce((sum, item) => sum + item.amount, 0);
    const buyer = { name: input.buyer.name, email: input.buyer.email.toLowerCase() };
    const orderRow = {
      id: orderId,
      accountId: scope.accountId,
      eventId,
      buyerName: buyer.name,
      buyerEmail: buyer.email,
      items: JSON.stringify(orderItems),
      total,
      currency: event.currency,
      status: 'completed',
      createdAt: now,
    };
    const presentedTickets = tickets.map(presentTicket);
    const order = { id: orderId, eventId, status: 'completed' as const, buyer, items: orderItems, total, currency: event.currency, tickets: presentedTickets, createdAt: iso(now) };
    const messages: OutboxMessage[] = [
      ...presentedTickets.map((ticket): OutboxMessage => ({ event: 'ticket.purchased', data: ticket })),
      { event: total > 0 ? 'payment.completed' : 'rsvp.submitted', data: { ...order, amount: total } },
    ];

    if (subscriptions !== null) {
      // PostgreSQL: one statement (writeOrderStatement); SQLite, in-process, statement by statement.
      const written = await writeOrderAtOnce(tx, orderRow, sorted, count, tickets, messages, subscriptions, now);
      if (!written) throw soldOut(event, sorted, count);
      return order;
    }
    const takenFromEvent = await tx
      .updateTable('events')
      .set((eb) => ({ sold: eb('sold', '+', count), ticketsIssued: eb('ticketsIssued', '+', count), updatedAt: now }))
      .where('id', '=', eventId)
      .where((eb) => eb.or([eb('capacity', 'is', null), eb(eb('sold', '+', count), '<=', eb.ref('capacity'))]))
      .executeTakeFirst();
    if (Number(takenFromEvent.numUpdatedRows) !== 1) throw soldOut(event, sorted, count);
    for (const item of sorted) {
      const taken = await tx
        .updateTable('ticketTypes')
        .set((eb) => ({ sold: eb('sold', '+', item.quantity), updatedAt: now }))
        .where('id', '=', item.type.id)
        .where((eb) => eb(eb('sold', '+', item.quantity), '<=', eb.ref('quantity')))
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) !== 1) throw soldOut(event, sorted, count);
    }
    await tx.db.insertInto('orders').values(orderRow).execute();
    for (let i = 0; i < tickets.length; i += 100) await tx.db.insertInto('tickets').values(tickets.slice(i, i + 100)).execute();
    await enqueueMessages(tx.db, scope.accountId, messages, now);
    return order;
  });
}

export async function getOrder(scope: TenantScope, id: string) {
  const order = await scope.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
  if (!order) throw notFound('order', id);
  const tickets = await scope.selectFrom('tickets').selectAll().where('orderId', '=', id).orderBy('id').execute();
  return {
    id: order.id,
    eventId: order.eventId,
    status: 'completed' as const,
    buyer: { name: order.buyerName, email: order.buyerEmail },
    items: JSON.parse(order.items) as Array<{ ticketTypeId: string; quantity: number; unitPrice: number; amount: number }>,
    total: order.total,
    currency: order.currency,
    tickets: tickets.map(presentTicket),
    createdAt: iso(order.createdAt),
  };
}

export async function getTicket(scope: TenantScope, id: string): Promise<PresentedTicket> {
  const ticket = await repo.findTicket(scope, id);
  if (!ticket) throw notFound('ticket', id);
  return presentTicket(ticket);
}

/** Why a valid-and-not-checked-in condition failed, as the API's code. */
function refusal(ticket: TicketRow, action: string): AppError {
  if (ticket.status === 'cancelled') return new AppError('ticket_cancelled', `Ticket ${ticket.id} is cancelled; it cannot be ${action}.`);
  return new AppError('ticket_checked_in', `Ticket ${ticket.id} is checked in; it cannot be ${action}.`, { checkedInAt: iso(ticket.checkedInAt) });
}

/** Valid and not checked in → cancelled; its place returns to inventory; a paid ticket is refunded. */
export async function cancelTicket(scope: TenantScope, id: string): Promise<PresentedTicket> {
  return scope.transaction(async (tx) => {
    const ticket = await repo.findTicket(tx, id);
    if (!ticket) throw notFound('ticket', id);
    await repo.lockEvent(tx, ticket.eventId);
    const now = Date.now();
    const cancelled = await tx
      .updateTable('tickets')
      .set((eb) => ({ status: 'cancelled', cancelledAt: now, updatedAt: now, refundedAmount: eb.ref('price') }))
      .where('id', '=', id)
      .where('status', '=', 'valid')
      .where('checkedInAt', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!cancelled) throw refusal((await repo.findTicket(tx, id))!, 'cancelled');
    await tx.updateTable('ticketTypes').set((eb) => ({ sold: eb('sold', '-', 1), updatedAt: now })).where('id', '=', ticket.ticketTypeId).execute();
    await tx.updateTable('events').set((eb) => ({ sold: eb('sold', '-', 1), updatedAt: now })).where('id', '=', ticket.eventId).execute();
    const presented = presentTicket(cancelled);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'ticket.cancelled', data: presented }, ...refundOf(cancelled)], now);
    return presented;
  });
}

/** New holder and a new code (the old one stops working); same ticket id. */
export async function transferTicket(scope: TenantScope, id: string, input: Static<typeof TransferBody>): Promise<PresentedTicket> {
  return scope.transaction(async (tx) => {
    const now = Date.now();
    const transferred = await tx
      .updateTable('tickets')
      .set({ attendeeName: input.attendee.name, attendeeEmail: input.attendee.email.toLowerCase(), code: newTicketCode(), updatedAt: now })
      .where('id', '=', id)
      .where('status', '=', 'valid')
      .where('checkedInAt', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!transferred) {
      const ticket = await repo.findTicket(tx, id);
      if (!ticket) throw notFound('ticket', id);
      throw refusal(ticket, 'transferred');
    }
    const presented = presentTicket(transferred);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'ticket.transferred', data: presented }], now);
    return presented;
  });
}

const CANCEL_BATCH = 500;

/** Cancels the event and every valid ticket of it; paid tickets are refunded. */
export async function cancelEvent(scope: TenantScope, id: string) {
  return scope.transaction(async (tx) => {
    const event = await repo.requireLockedEvent(tx, id);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${id} is already cancelled.`);
    const now = Date.now();
    const updated = await tx
      .updateTable('events')
      .set({ status: 'cancelled', cancelledAt: now, updatedAt: now, sold: 0 })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const presentedEvent = presentEvent(updated);
    await enqueueMessages(tx.db, scope.accountId, [{ event: 'event.cancelled', data: presentedEvent }], now);
    await tx.updateTable('ticketTypes').set({ sold: 0, updatedAt: now }).where('eventId', '=', id).execute();
    for (;;) {
      const batch = await tx
        .selectFrom('tickets')
        .selectAll()
        .where('eventId', '=', id)
        .where('status', '=', 'valid')
        .orderBy('id')
        .limit(CANCEL_BATCH)
        .execute();
      if (batch.length === 0) break;
      await tx
        .updateTable('tickets')
        .set((eb) => ({ status: 'cancelled', cancelledAt: now, updatedAt: now, refundedAmount: eb.ref('price') }))
        .where('id', 'in', batch.map((t) => t.id))
        .execute();
      const messages = batch.flatMap((row): OutboxMessage[] => {
        const cancelled = { ...row, status: 'cancelled', cancelledAt: now, updatedAt: now, refundedAmount: row.price };
        return [{ event: 'ticket.cancelled', data: presentTicket(cancelled) }, ...refundOf(cancelled)];
      });
      await enqueueMessages(tx.db, scope.accountId, messages, now);
    }
    return presentedEvent;
  });
}
