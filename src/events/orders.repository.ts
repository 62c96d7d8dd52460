import { type ExpressionBuilder, type Insertable, type Selectable, sql } from 'kysely';
import type { Db } from '../db/database.js';
import { onPostgres, prepared, preparedNamed } from '../db/prepared.js';
import { keysetPage, type KeysetPage } from '../db/keyset.js';
import { TenantScope } from '../db/tenant.js';
import { enqueueJobs, JOB_VALUES, jobValues, type NewJob } from '../jobs/queue.js';
import { type FanOutValues, fanOut, type OutboxMessage, type Subscriptions } from '../webhooks/outbox.js';
import type { TicketTypeRow } from './events.repository.js';
import { type OrderTable, type PaymentTable, TICKET_TYPE_COLUMNS } from './events.table.js';
import type { TicketRow } from './tickets.repository.js';
import { markOfferRedeemed, redeemVoucher, reservedOfEvent, reservedOfType, waitingOfEvent, waitingOfType } from './vouchers.repository.js';

export type OrderRow = Selectable<OrderTable>;
export type PaymentRow = Selectable<PaymentTable>;

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

const typesOfEvent = prepared((db: Db, accountId: string, eventId: string) =>
  new TenantScope(db, accountId).selectFrom('ticketTypes').select(TICKET_TYPE_COLUMNS).where('eventId', '=', eventId).orderBy('id'),
);

/**
 * The event's ticket types as an order reads them (after the event's lock: current inventory),
 * and on PostgreSQL, in the same round trip, the subscriptions writeOrder's one statement fans
 * out to (null on SQLite, whose writeOrder reads them itself).
 */
export async function ticketTypesForOrder(tx: TenantScope, eventId: string): Promise<{ types: TicketTypeRow[]; subscriptions: Subscriptions | null }> {
  if (!onPostgres(tx.db)) return { types: await typesOfEvent(tx.db as Db, tx.accountId, eventId), subscriptions: null };
  const rows = await typesListingSubscriptions(tx.db as Db, tx.accountId, eventId);
  return { types: rows.map(({ subscriptions: _, ...type }): TicketTypeRow => type), subscriptions: rows[0]?.subscriptions ?? [] };
}

/** An order's whole write: what it takes from inventory, what it writes, what it reports. */
export interface OrderWrite {
  order: Insertable<OrderTable> & Pick<OrderRow, 'status' | 'expiresAt' | 'completedAt' | 'provider' | 'paymentStatus' | 'plan' | 'updatedAt'>;
  tickets: TicketRow[];
  /** The places in all, taken from the event's capacity. */
  count: number;
  /** Taken as held places (a pending order), not as sold ones. */
  holding: boolean;
  /** The charge of a paid order completed at once; null otherwise. */
  payment: PaymentRow | null;
  /** Jobs of the order itself (a pending order's expiry), besides its messages' deliveries. */
  jobs: NewJob[];
  /** What each ticket type gives, by ticket type id (the order in which they are taken). */
  taken: Array<{ ticketTypeId: string; quantity: number }>;
  messages: OutboxMessage[];
  /** As ticketTypesForOrder read them. */
  subscriptions: Subscriptions | null;
  /** The voucher the order redeems, if any (its uses are taken with a conditional update). */
  voucher: OrderVoucher | null;
  now: number;
}

/** The voucher an order redeems: `places` uses; `reserving` when its own reserved places are the ones taken. */
export type OrderVoucher = { id: string; ticketTypeId: string | null; places: number; reserving: boolean; waitlistEntryId: string | null };

/**
 * The reserving voucher whose places an order takes ('' for a public order): the availability
 * rule leaves its places out of the reserved ones and does not count the waiting list.
 */
const reservingId = (voucher: OrderVoucher | null) => (voucher?.reserving ? voucher.id : '');
/** The ticket type whose reserved places such an order takes ('' for a public order): its waiting list is not counted. */
const reservingType = (voucher: OrderVoucher | null) => (voucher?.reserving ? voucher.ticketTypeId! : '');
/**
 * The reserving voucher whose places are all `count` places of the order ('' otherwise): only then
 * is the event's waiting list not counted against its capacity; places outside the voucher's type
 * follow the public rule, people waiting first.
 */
const reservingAll = (voucher: OrderVoucher | null, count: number) => (voucher?.reserving && voucher.places === count ? voucher.id : '');

const text = (eb: ExpressionBuilder<any, any>, value: string) => eb.cast<string>(eb.val(value), 'text');
const bigint = (eb: ExpressionBuilder<any, any>, value: number) => eb.cast<number>(eb.val(value), 'bigint');

/** writeOrderStatement's named arguments. */
type OrderStatement = {
  accountId: string;
  eventId: string;
  count: number;
  soldCount: number;
  heldCount: number;
  now: number;
  typeCount: number;
  typeIds: string[];
  typeSold: number[];
  typeHeld: number[];
  orderId: string;
  buyerName: string;
  buyerEmail: string;
  items: string;
  total: number;
  currency: string;
  status: string;
  expiresAt: number | null;
  completedAt: number | null;
  provider: string | null;
  paymentStatus: string;
  plan: string | null;
  paymentId: string | null;
  ticketIds: string[];
  ticketTypeIds: string[];
  attendeeNames: string[];
  attendeeEmails: string[];
  codes: string[];
  prices: number[];
  voucherId: string | null;
  voucherCode: string | null;
  voucherPlaces: number;
  voucherCount: number;
  reservingVoucher: string;
  reservingType: string;
  reservingAll: string;
  waitlistEntryId: string | null;
} & FanOutValues;

const ORDER_STATEMENT = [
  'accountId',
  'eventId',
  'count',
  'soldCount',
  'heldCount',
  'now',
  'typeCount',
  'typeIds',
  'typeSold',
  'typeHeld',
  'orderId',
  'buyerName',
  'buyerEmail',
  'items',
  'total',
  'currency',
  'status',
  'expiresAt',
  'completedAt',
  'provider',
  'paymentStatus',
  'plan',
  'paymentId',
  'ticketIds',
  'ticketTypeIds',
  'attendeeNames',
  'attendeeEmails',
  'codes',
  'prices',
  'voucherId',
  'voucherCode',
  'voucherPlaces',
  'voucherCount',
  'reservingVoucher',
  'reservingType',
  'reservingAll',
  'waitlistEntryId',
  ...fanOut.names,
] as const satisfies ReadonlyArray<keyof OrderStatement>;

/**
 * PostgreSQL: an order's whole write in one statement (data-modifying CTEs). The inventory's two
 * conditional updates (sold or held, as the order takes it), then, only if both took all of it
 * (`taken`), the order, its tickets, its charge, its outbox messages and its jobs. No row if the
 * inventory was refused. The event's lock
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
            .set((eb) => ({ sold: eb('sold', '+', p.soldCount), held: eb('held', '+', p.heldCount), ticketsIssued: eb('ticketsIssued', '+', p.soldCount), updatedAt: p.now }))
            .where('accountId', '=', p.accountId)
            .where('id', '=', p.eventId)
            .where((eb) =>
              eb.or([
                eb('capacity', 'is', null),
                eb(
                  sql<number>`${eb.ref('sold')} + ${eb.ref('held')} + ${p.count} + ${reservedOfEvent(eb.ref('events.id'), p.now, p.reservingVoucher)} + ${waitingOfEvent(eb.ref('events.id'), p.reservingAll)}`,
                  '<=',
                  eb.ref('capacity'),
                ),
              ]),
            )
            .returning('id'),
        )
        .with('types', (qc) =>
          qc
            .updateTable('ticketTypes')
            .from(sql<{ id: string; sold: number; held: number }>`unnest(${p.typeIds}::text[], ${p.typeSold}::integer[], ${p.typeHeld}::integer[])`.as<'wanted'>(sql`wanted(id, sold, held)`))
            .set((eb) => ({ sold: eb('ticketTypes.sold', '+', eb.ref('wanted.sold')), held: eb('ticketTypes.held', '+', eb.ref('wanted.held')), updatedAt: p.now }))
            .whereRef('ticketTypes.id', '=', 'wanted.id')
            .where('ticketTypes.accountId', '=', p.accountId)
            .where('ticketTypes.eventId', '=', p.eventId)
            .where((eb) =>
              eb(
                sql<number>`${eb.ref('ticketTypes.sold')} + ${eb.ref('ticketTypes.held')} + ${eb.ref('wanted.sold')} + ${eb.ref('wanted.held')} + ${reservedOfType(eb.ref('ticketTypes.id'), p.now, p.reservingVoucher)} + ${waitingOfType(eb.ref('ticketTypes.id'), p.reservingType)}`,
                '<=',
                eb.ref('ticketTypes.quantity'),
              ),
            )
            .returning('ticketTypes.id'),
        )
        // The voucher's uses, taken if it has them (no row without a voucher), and its waiting-list offer redeemed.
        .with('redeemed', (qc) =>
          qc
            .updateTable('vouchers')
            .set((eb) => ({ redeemed: eb('redeemed', '+', p.voucherPlaces), updatedAt: p.now }))
            .where('accountId', '=', p.accountId)
            .where('id', '=', p.voucherId as string)
            .where((eb) => eb(eb('redeemed', '+', p.voucherPlaces), '<=', eb.ref('maxUses')))
            .returning('id'),
        )
        .with('offer', (qc) =>
          qc
            .updateTable('waitlistEntries')
            .set({ status: 'redeemed', updatedAt: p.now })
            .where('accountId', '=', p.accountId)
            .where('id', '=', p.waitlistEntryId as string)
            .where('status', '=', 'offered')
            .returning('id'),
        )
        .with('taken', (qc) =>
          qc
            .selectFrom('event')
            .select(sql<number>`1`.as('ok'))
            .where(sql<boolean>`(select count(*) from types) = ${p.typeCount} and (select count(*) from redeemed) = ${p.voucherCount}`),
        )
        .with('ordered', (qc) =>
          qc
            .insertInto('orders')
            .columns(['id', 'accountId', 'eventId', 'buyerName', 'buyerEmail', 'items', 'total', 'currency', 'status', 'createdAt', 'expiresAt', 'completedAt', 'provider', 'paymentStatus', 'plan', 'updatedAt', 'voucherId', 'voucherCode', 'voucherPlaces'])
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
                  text(eb, p.status).as('status'),
                  bigint(eb, p.now).as('createdAt'),
                  bigint(eb, p.expiresAt as number).as('expiresAt'),
                  bigint(eb, p.completedAt as number).as('completedAt'),
                  text(eb, p.provider as string).as('provider'),
                  text(eb, p.paymentStatus).as('paymentStatus'),
                  text(eb, p.plan as string).as('plan'),
                  bigint(eb, p.now).as('updatedAt'),
                  text(eb, p.voucherId as string).as('voucherId'),
                  text(eb, p.voucherCode as string).as('voucherCode'),
                  eb.cast<number>(eb.val(p.voucherPlaces), 'integer').as('voucherPlaces'),
                ]),
            ),
        )
        .with('charged', (qc) =>
          qc
            .insertInto('payments')
            .columns(['id', 'accountId', 'eventId', 'orderId', 'provider', 'kind', 'amount', 'currency', 'status', 'createdAt', 'updatedAt'])
            .expression((eb) =>
              eb
                .selectFrom('taken')
                .select([
                  text(eb, p.paymentId as string).as('id'),
                  text(eb, p.accountId).as('accountId'),
                  text(eb, p.eventId).as('eventId'),
                  text(eb, p.orderId).as('orderId'),
                  text(eb, p.provider as string).as('provider'),
                  text(eb, 'charge').as('kind'),
                  bigint(eb, p.total).as('amount'),
                  text(eb, p.currency).as('currency'),
                  text(eb, 'succeeded').as('status'),
                  bigint(eb, p.now).as('createdAt'),
                  bigint(eb, p.now).as('updatedAt'),
                ])
                .where(sql<boolean>`${p.paymentId}::text is not null`),
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
 * Writes an order, all or nothing, in the transaction that holds its event's lock: takes its places
 * from the event's capacity and from each ticket type with conditional updates (`sold + held + n
 * <= capacity`, `sold + held + n <= quantity`), as sold tickets or as held places (`holding`), then
 * writes the order, its tickets, its charge, its messages and its jobs. False, with nothing
 * written, when the inventory refused it. PostgreSQL: one statement (writeOrderStatement).
 * SQLite, in-process: statement by statement.
 */
export async function writeOrder(tx: TenantScope, w: OrderWrite): Promise<boolean> {
  const { order, tickets, count, taken, messages, now, holding } = w;
  const soldCount = holding ? 0 : count;
  const heldCount = holding ? count : 0;
  if (w.subscriptions !== null) {
    const fanned = fanOut.values(tx.accountId, messages, w.subscriptions, now);
    if (w.jobs.length > 0) {
      const own = jobValues(w.jobs, now);
      for (const name of JOB_VALUES) (fanned[name] as unknown[]).push(...own[name]);
    }
    const written = await writeOrderStatement(tx.db as Db, {
      accountId: tx.accountId,
      eventId: order.eventId,
      count,
      soldCount,
      heldCount,
      now,
      typeCount: taken.length,
      typeIds: taken.map((item) => item.ticketTypeId),
      typeSold: taken.map((item) => (holding ? 0 : item.quantity)),
      typeHeld: taken.map((item) => (holding ? item.quantity : 0)),
      orderId: order.id,
      buyerName: order.buyerName,
      buyerEmail: order.buyerEmail,
      items: order.items,
      total: order.total,
      currency: order.currency,
      status: order.status,
      expiresAt: order.expiresAt,
      completedAt: order.completedAt,
      provider: order.provider,
      paymentStatus: order.paymentStatus,
      plan: order.plan,
      paymentId: w.payment?.id ?? null,
      ticketIds: tickets.map((t) => t.id),
      ticketTypeIds: tickets.map((t) => t.ticketTypeId),
      attendeeNames: tickets.map((t) => t.attendeeName),
      attendeeEmails: tickets.map((t) => t.attendeeEmail),
      codes: tickets.map((t) => t.code),
      prices: tickets.map((t) => t.price),
      voucherId: order.voucherId ?? null,
      voucherCode: order.voucherCode ?? null,
      voucherPlaces: order.voucherPlaces ?? 0,
      voucherCount: w.voucher ? 1 : 0,
      reservingVoucher: reservingId(w.voucher),
      reservingType: reservingType(w.voucher),
      reservingAll: reservingAll(w.voucher, count),
      waitlistEntryId: w.voucher?.waitlistEntryId ?? null,
      ...fanned,
    });
    if (written.length === 0) return false;
    fanOut.written(tx.db, fanned);
    return true;
  }
  if (!(await takePlaces(tx, order.eventId, { count, taken }, holding ? 'held' : 'sold', now, w.voucher))) return false;
  if (w.voucher && !(await takeVoucherUses(tx, w.voucher, now))) return false;
  await tx.db.insertInto('orders').values(order).execute();
  for (let i = 0; i < tickets.length; i += 100) await tx.db.insertInto('tickets').values(tickets.slice(i, i + 100)).execute();
  if (w.payment) await tx.db.insertInto('payments').values(w.payment).execute();
  await fanOut.inTransaction(tx.db, tx.accountId, messages, now);
  if (w.jobs.length > 0) await enqueueJobs(tx.db, w.jobs, now);
  return true;
}

/** The places an order takes or gives back, by ticket type. */
export type Places = { count: number; taken: Array<{ ticketTypeId: string; quantity: number }> };

/**
 * A pending order's held places become sold tickets (its completion): no check, the hold already
 * counted them. Under the event's lock.
 */
export async function sellHeldPlaces(tx: TenantScope, eventId: string, places: Places, now: number): Promise<void> {
  await tx
    .updateTable('events')
    .set((eb) => ({ held: eb('held', '-', places.count), sold: eb('sold', '+', places.count), ticketsIssued: eb('ticketsIssued', '+', places.count), updatedAt: now }))
    .where('id', '=', eventId)
    .execute();
  for (const item of places.taken) {
    await tx
      .updateTable('ticketTypes')
      .set((eb) => ({ held: eb('held', '-', item.quantity), sold: eb('sold', '+', item.quantity), updatedAt: now }))
      .where('id', '=', item.ticketTypeId)
      .execute();
  }
}

/**
 * An expired or cancelled order's places sold after all (its money arrived late), if they are
 * still free: the same conditional updates as a new order's, its voucher's uses taken again. False
 * when they are not (the caller rolls back).
 */
export async function sellFreePlaces(tx: TenantScope, eventId: string, places: Places, now: number, voucher: OrderVoucher | null): Promise<boolean> {
  if (!(await takePlaces(tx, eventId, places, 'sold', now, voucher))) return false;
  return voucher === null || takeVoucherUses(tx, voucher, now);
}

/** The voucher's uses taken (conditional update) and its waiting-list offer, if it is one, redeemed. False if it has too few left. */
async function takeVoucherUses(tx: TenantScope, voucher: OrderVoucher, now: number): Promise<boolean> {
  if (!(await redeemVoucher(tx, voucher.id, voucher.places, now))) return false;
  if (voucher.waitlistEntryId !== null) await markOfferRedeemed(tx, voucher.waitlistEntryId, now);
  return true;
}

/**
 * Takes places with the conditional updates every order uses, as `sold` (tickets issued) or
 * `held` (a pending order's hold), one statement each: the event's `sold + held + n +
 * reservedActive(E) + waiting(E) <= capacity` and each type's `sold + held + n + reservedActive(T)
 * + waiting(T) <= quantity` (docs/events.md, "Vouchers"; an order with a reserving voucher leaves
 * that voucher's places out and its type's waiting list, and the event's waiting list when all its
 * places are the voucher's). False as soon as one refuses (the
 * caller rolls back).
 */
async function takePlaces(tx: TenantScope, eventId: string, places: Places, as: 'sold' | 'held', now: number, voucher: OrderVoucher | null): Promise<boolean> {
  const sold = as === 'sold' ? places.count : 0;
  const except = reservingId(voucher);
  const fromEvent = await tx
    .updateTable('events')
    .set((eb) => ({ sold: eb('sold', '+', sold), held: eb('held', '+', places.count - sold), ticketsIssued: eb('ticketsIssued', '+', sold), updatedAt: now }))
    .where('id', '=', eventId)
    .where((eb) =>
      eb.or([
        eb('capacity', 'is', null),
        eb(sql<number>`${eb.ref('sold')} + ${eb.ref('held')} + ${places.count} + ${reservedOfEvent(eb.ref('events.id'), now, except)} + ${waitingOfEvent(eb.ref('events.id'), reservingAll(voucher, places.count))}`, '<=', eb.ref('capacity')),
      ]),
    )
    .executeTakeFirst();
  if (Number(fromEvent.numUpdatedRows) !== 1) return false;
  for (const item of places.taken) {
    const fromType = await tx
      .updateTable('ticketTypes')
      .set((eb) => (as === 'held' ? { held: eb('held', '+', item.quantity), updatedAt: now } : { sold: eb('sold', '+', item.quantity), updatedAt: now }))
      .where('id', '=', item.ticketTypeId)
      .where((eb) =>
        eb(sql<number>`${eb.ref('sold')} + ${eb.ref('held')} + ${item.quantity} + ${reservedOfType(eb.ref('ticketTypes.id'), now, except)} + ${waitingOfType(eb.ref('ticketTypes.id'), reservingType(voucher))}`, '<=', eb.ref('quantity')),
      )
      .executeTakeFirst();
    if (Number(fromType.numUpdatedRows) !== 1) return false;
  }
  return true;
}

/** A pending order's held places back into inventory (its expiry or cancellation). Under the event's lock. */
export async function releaseHeldPlaces(tx: TenantScope, eventId: string, places: Places, now: number): Promise<void> {
  await tx.updateTable('events').set((eb) => ({ held: eb('held', '-', places.count), updatedAt: now })).where('id', '=', eventId).execute();
  for (const item of places.taken) {
    await tx.updateTable('ticketTypes').set((eb) => ({ held: eb('held', '-', item.quantity), updatedAt: now })).where('id', '=', item.ticketTypeId).execute();
  }
}

/**
 * Pending → `status` (expired or cancelled), if it is still pending (and, for an expiry, its hold
 * has run out by `expiredBy`): the order as it is now, or undefined.
 */
export function endPendingOrder(tx: TenantScope, id: string, status: 'expired' | 'cancelled', now: number, expiredBy?: number): Promise<OrderRow | undefined> {
  let query = tx.updateTable('orders').set({ status, paymentStatus: 'none', updatedAt: now }).where('id', '=', id).where('status', '=', 'pending');
  if (expiredBy !== undefined) query = query.where('expiresAt', '<=', expiredBy);
  return query.returningAll().executeTakeFirst();
}

/** Pending orders of every account whose hold ran out before `before` (their expiry job gave up, or never ran), oldest first. */
export function overduePendingOrders(db: Db, before: number, limit: number): Promise<Pick<OrderRow, 'id' | 'accountId' | 'eventId'>[]> {
  return db.selectFrom('orders').select(['id', 'accountId', 'eventId']).where('status', '=', 'pending').where('expiresAt', '<', before).orderBy('expiresAt').limit(limit).execute();
}

/** Forgets the plan (attendees' names and e-mails, answers) of orders that ended unpaid before `before`; how many. */
export async function forgetEndedPlans(db: Db, before: number): Promise<number> {
  const result = await db.updateTable('orders').set({ plan: null }).where('status', 'in', ['expired', 'cancelled']).where('plan', 'is not', null).where('updatedAt', '<', before).executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Every pending order of the event → cancelled (the event is being cancelled, under its lock; its cancel clears `held`). */
export function endPendingOrdersOfEvent(tx: TenantScope, eventId: string, now: number): Promise<OrderRow[]> {
  return tx.updateTable('orders').set({ status: 'cancelled', paymentStatus: 'none', updatedAt: now }).where('eventId', '=', eventId).where('status', '=', 'pending').returningAll().execute();
}

/** The order completed (by the time it is read under its event's lock, nobody else changes it). */
export function markCompleted(tx: TenantScope, id: string, changes: Pick<OrderRow, 'provider' | 'paymentStatus' | 'paymentReference' | 'completedAt' | 'updatedAt'>): Promise<OrderRow> {
  return tx
    .updateTable('orders')
    .set({ ...changes, status: 'completed', plan: null })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Where the buyer of a pending order pays, once its provider began the payment. */
/**
 * Where a pending order is paid; false if it is pending no more (the provider's webhook completed it
 * first, or it was cancelled meanwhile): its reference is then the completion's, left as it is.
 */
export async function saveCheckout(scope: TenantScope, id: string, checkout: { reference: string | null; checkoutUrl: string | null }, now: number): Promise<boolean> {
  const result = await scope.updateTable('orders').set({ paymentReference: checkout.reference, checkoutUrl: checkout.checkoutUrl, updatedAt: now }).where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * A payment Montage could not honour (Stripe's late or second payment, refunded at once): its
 * charge and refund carry a reason of this prefix. They are a trace on the order, not its money:
 * what it was paid, what is left to refund and the event's figures leave them out.
 */
export const UNHONOURED_REASON = 'unhonoured: ';

/** Payment rows that are the order's own money (not the trace of a payment not honoured). */
export const ownMoney = sql<boolean>`coalesce(reason, '') not like ${`${UNHONOURED_REASON}%`}`;

export async function insertPayment(scope: TenantScope, row: PaymentRow): Promise<void> {
  await scope.db.insertInto('payments').values(row).execute();
}

/** An order's money movements, oldest first. */
export function paymentsOfOrder(scope: TenantScope, orderId: string): Promise<PaymentRow[]> {
  return scope.selectFrom('payments').selectAll().where('orderId', '=', orderId).orderBy('id').execute();
}

/** One page of an event's orders, newest first, optionally of one state. */
export function pageOrders(scope: TenantScope, eventId: string, status: string | undefined, page: KeysetPage): Promise<OrderRow[]> {
  let query = scope.selectFrom('orders').selectAll().where('eventId', '=', eventId);
  if (status !== undefined) query = query.where('status', '=', status);
  return keysetPage(query, page, 'orders.id', 'orders.id', 'desc').execute();
}

/** The tickets of these orders, by id. */
export function ticketsOfOrders(scope: TenantScope, orderIds: string[]): Promise<TicketRow[]> {
  if (orderIds.length === 0) return Promise.resolve([]);
  return scope.selectFrom('tickets').selectAll().where('orderId', 'in', orderIds).orderBy('id').execute();
}

/** The money movements of these orders, oldest first. */
export function paymentsOfOrders(scope: TenantScope, orderIds: string[]): Promise<PaymentRow[]> {
  if (orderIds.length === 0) return Promise.resolve([]);
  return scope.selectFrom('payments').selectAll().where('orderId', 'in', orderIds).orderBy('id').execute();
}
