import type { Static } from 'typebox';
import type { Db } from '../db/database.js';
import { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import type { NewJob } from '../jobs/queue.js';
import { iso } from '../time.js';
import { fanOut, type OutboxMessage } from '../webhooks/outbox.js';
import { eventSigner, issueCode } from './door.service.js';
import { type EventRow, requireEvent, requireLockedEvent, type TicketTypeRow } from './events.repository.js';
import type { ConfirmOrderBody, CreateOrderBody, OrderListQuery } from './events.schemas.js';
import { confirmBalance } from './order-changes.service.js';
import * as repo from './orders.repository.js';
import { offeredAnswers, type PreparedAnswers, prepareAnswers, ticketPlaces, writeAnswers } from './questions.answers.js';
import { type Checkout, type PaymentProvider, PROVIDER_NAMES, type ProviderName } from './payments/provider.js';
import { providerFor } from './payments/providers.js';
import { ticketsOfOrder, type TicketRow } from './tickets.repository.js';
import { presentTicket } from './tickets.service.js';
import { queueWaitlistOffers } from './waitlist.service.js';
import { checkVoucherFits, discountOf, freePlaces, giveBackUses, orderVoucherOf, voucherForOrder, voucherOfEndedOrder } from './vouchers.service.js';
import { keptOfEvent, type Kept, voucherById, type VoucherRow } from './vouchers.repository.js';

const MAX_TICKETS_PER_ORDER = 100;

/** The job that ends a pending order's hold at its `expiresAt` (orders.job.ts works it). */
export const EXPIRE_ORDER_KIND = 'order.expire';
export const EXPIRE_ORDER_MAX_ATTEMPTS = 10;
export type ExpireOrderPayload = { accountId: string; eventId: string; orderId: string };

type OrderRow = repo.OrderRow;
type PaymentRow = repo.PaymentRow;
type SoldItem = { quantity: number; type: TicketTypeRow };
type Person = { name: string; email: string };
/** `unitPrice`: what each ticket costs the buyer, its type's price less `discount` (a voucher's, per ticket). */
type OrderItem = { ticketTypeId: string; quantity: number; unitPrice: number; discount?: number; amount: number };

/**
 * What an order issues when it completes, beside its items: each item's attendees (tickets past
 * the list go to the buyer), index for index. A pending order stores it (`orders.plan`, JSON) and
 * issues its tickets from it at completion.
 */
export interface OrderPlan {
  attendees: Person[][];
  /** The question answers, validated when the order was placed (docs/events.md, "Questions"). */
  answers?: PreparedAnswers;
}

/**
 * Why an order's inventory was refused: the first of the event's capacity, then its ticket types
 * by id, that cannot hold it. From the rows as read under the event's lock, which every change of
 * `sold` and `held`, of vouchers and of the waiting list takes first (so they are current); the
 * database's conditional updates did the refusing. Held places, reserved places and people
 * waiting count as taken (docs/events.md, "Vouchers"), except the places of the order's own
 * reserving voucher.
 */
function soldOut(event: EventRow, types: TicketTypeRow[], sorted: SoldItem[], count: number, kept: Kept, voucher: VoucherRow | null): AppError {
  const outside = sorted.reduce((sum, item) => sum + (item.type.id === voucher?.ticketTypeId ? 0 : item.quantity), 0);
  const free = freePlaces(event, types, kept, voucher, outside);
  const available = Math.max(0, free.event ?? 0);
  if (free.event !== null && count > free.event) {
    return new AppError('sold_out', `Event ${event.id} has ${available} of ${event.capacity} places left.`, { available });
  }
  for (const item of sorted) {
    const left = Math.max(0, free.types.get(item.type.id) ?? 0);
    if (item.quantity > left) {
      return new AppError('sold_out', `Ticket type ${item.type.id} has ${left} of ${item.type.quantity} left.`, { ticketTypeId: item.type.id, available: left });
    }
  }
  return new AppError('sold_out', `Event ${event.id} has no places left for this order.`, { available });
}

/** The tickets an order issues at `now`, each signed by the event's active key (docs/events.md, "Signed ticket codes"). */
async function issueTickets(tx: TenantScope, order: Pick<OrderRow, 'id' | 'eventId' | 'currency' | 'buyerName' | 'buyerEmail'>, items: OrderItem[], plan: OrderPlan, now: number): Promise<TicketRow[]> {
  const signer = await eventSigner(tx, order.eventId);
  return items.flatMap((item, i) =>
    Array.from({ length: item.quantity }, (_, n): TicketRow => {
      const holder = plan.attendees[i]?.[n] ?? { name: order.buyerName, email: order.buyerEmail };
      const id = newId('ticket');
      return {
        id,
        accountId: tx.accountId,
        eventId: order.eventId,
        ticketTypeId: item.ticketTypeId,
        orderId: order.id,
        status: 'valid',
        attendeeName: holder.name,
        attendeeEmail: holder.email,
        code: issueCode(signer, { id, eventId: order.eventId, ticketTypeId: item.ticketTypeId }),
        price: item.unitPrice,
        currency: order.currency,
        refundedAmount: 0,
        checkedInAt: null,
        checkinId: null,
        createdAt: now,
        updatedAt: now,
        cancelledAt: null,
      };
    }),
  );
}

export function presentPayment(row: PaymentRow) {
  return {
    id: row.id,
    kind: row.kind as 'charge' | 'refund',
    provider: row.provider as ProviderName | 'external',
    amount: row.amount,
    currency: row.currency,
    status: row.status as 'pending' | 'succeeded' | 'failed',
    ticketId: row.ticketId,
    reference: row.reference,
    createdAt: iso(row.createdAt),
  };
}

export function presentOrder(row: OrderRow, tickets: TicketRow[], payments: PaymentRow[]) {
  return {
    id: row.id,
    eventId: row.eventId,
    status: row.status as 'pending' | 'completed' | 'expired' | 'cancelled',
    buyer: { name: row.buyerName, email: row.buyerEmail },
    items: (JSON.parse(row.items) as OrderItem[]).map((item) => ({ ...item, discount: item.discount ?? 0 })),
    total: row.total,
    currency: row.currency,
    refundedAmount: row.refundedAmount,
    balanceDue: row.balanceDue,
    payment: {
      provider: row.provider as ProviderName | 'external' | null,
      status: row.paymentStatus as 'none' | 'pending' | 'paid' | 'partially_refunded' | 'refunded',
      checkoutUrl: row.status === 'pending' ? row.checkoutUrl : null,
    },
    payments: payments.map(presentPayment),
    tickets: tickets.map(presentTicket),
    voucher: row.voucherId === null ? null : { id: row.voucherId, code: row.voucherCode! },
    expiresAt: row.status === 'pending' ? iso(row.expiresAt) : null,
    completedAt: iso(row.completedAt),
    createdAt: iso(row.createdAt),
  };
}

export type PresentedOrder = ReturnType<typeof presentOrder>;

/** The places an order holds or sold, by ticket type. */
function placesOf(items: OrderItem[]): repo.Places {
  return { count: items.reduce((sum, item) => sum + item.quantity, 0), taken: items.map((item) => ({ ticketTypeId: item.ticketTypeId, quantity: item.quantity })) };
}

/** A charge that succeeded: the payment row of an order's completion. */
function chargeOf(order: Pick<OrderRow, 'id' | 'accountId' | 'eventId' | 'total' | 'currency'>, provider: string, reference: string | null, now: number): PaymentRow {
  return {
    id: newId('payment'),
    accountId: order.accountId,
    eventId: order.eventId,
    orderId: order.id,
    ticketId: null,
    provider,
    kind: 'charge',
    amount: order.total,
    currency: order.currency,
    status: 'succeeded',
    reference,
    reason: null,
    createdAt: now,
    updatedAt: now,
  };
}

/** What a completion reports: each ticket bought, then the payment (or, for a free order, the RSVP). */
function completionMessages(order: PresentedOrder): OutboxMessage[] {
  return [
    ...order.tickets.map((ticket): OutboxMessage => ({ event: 'ticket.purchased', data: ticket })),
    { event: order.total > 0 ? 'payment.completed' : 'rsvp.submitted', data: { ...order, amount: order.total, provider: order.payment.provider } },
  ];
}

/**
 * Places an order, all or nothing. Free, or paid without `payment` (its money taken elsewhere): it
 * completes at once and issues its tickets. Paid with `payment`: it is `pending`, its places held
 * until `expiresAt` (the event's `holdMinutes`), no ticket issued yet; its provider begins the
 * payment after the commit (completeOrder finishes it). Inventory is taken with conditional updates
 * inside the transaction (`sold + held + n <= capacity`, `... <= quantity`), after the event's lock,
 * which every writer of the event's inventory takes first: concurrent orders neither oversell nor
 * deadlock.
 */
export async function createOrder(scope: TenantScope, eventId: string, input: Static<typeof CreateOrderBody>): Promise<PresentedOrder> {
  const seen = new Set<string>();
  let count = 0;
  input.items.forEach((item, i) => {
    if (seen.has(item.ticketTypeId)) throw invalid(`/items/${i}/ticketTypeId`, 'appears twice; put the quantity in one item');
    seen.add(item.ticketTypeId);
    if (item.attendees && item.attendees.length > item.quantity) throw invalid(`/items/${i}/attendees`, 'has more attendees than the quantity');
    count += item.quantity;
  });
  if (count > MAX_TICKETS_PER_ORDER) throw invalid('/items', `may hold at most ${MAX_TICKETS_PER_ORDER} tickets in all`);

  // Found and checked before anything is held; a provider the account lacks (or refuses `payment`) matters only to a paid order.
  let provider: PaymentProvider | null = null;
  let providerMissing: unknown = null;
  if (input.payment) {
    try {
      provider = await providerFor(scope.db as Db, scope.accountId, input.payment.provider);
      // What the provider cannot begin with (Stripe without successUrl) is refused before anything is held.
      provider.validate?.({ successUrl: input.payment.successUrl ?? null, cancelUrl: input.payment.cancelUrl ?? null });
    } catch (err) {
      provider = null;
      providerMissing = err;
    }
  }

  const placed = await scope.transaction(async (tx) => {
    const now = Date.now();
    // Locked first, so a concurrent cancel or publish is seen before anything is sold.
    const event = await requireLockedEvent(tx, eventId);
    if (event.status === 'draft') throw new AppError('event_not_published', `Event ${eventId} is not published yet.`);
    if (event.status === 'cancelled') throw new AppError('event_cancelled', `Event ${eventId} is cancelled.`);
    if (now >= event.endsAt) throw new AppError('sales_closed', `Event ${eventId} has ended.`);

    // Read after the lock (a statement's snapshot is taken when it starts): current inventory, and
    // on PostgreSQL the subscriptions the order's one statement fans out to.
    const { types: typeRows, subscriptions } = await repo.ticketTypesForOrder(tx, eventId);
    const voucher = input.voucher === undefined ? null : await voucherForOrder(tx, eventId, input.voucher, now);
    const types = new Map(typeRows.map((t) => [t.id, t]));
    const items = input.items.map((item, i) => {
      const type = types.get(item.ticketTypeId);
      // A hidden type is unknown to whoever lacks a voucher naming it.
      if (!type || (type.hidden === 1 && voucher?.ticketTypeId !== type.id)) throw invalid(`/items/${i}/ticketTypeId`, `is not a ticket type of event ${eventId}`);
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
    const answers = await prepareAnswers(tx, eventId, input, event.questions);

    const applies = (type: TicketTypeRow) => voucher !== null && (voucher.ticketTypeId === null || voucher.ticketTypeId === type.id);
    const voucherPlaces = items.reduce((sum, item) => sum + (applies(item.type) ? item.quantity : 0), 0);
    if (voucher) checkVoucherFits(voucher, voucherPlaces);
    const orderItems: OrderItem[] = items.map((item) => {
      const discount = applies(item.type) ? discountOf(voucher!, item.type.price) : 0;
      return { ticketTypeId: item.type.id, quantity: item.quantity, unitPrice: item.type.price - discount, discount, amount: (item.type.price - discount) * item.quantity };
    });
    const total = orderItems.reduce((sum, item) => sum + item.amount, 0);
    const pending = total > 0 && input.payment !== undefined;
    if (pending && !provider) throw providerMissing;

    const orderId = newId('order');
    const buyer = { name: input.buyer.name, email: input.buyer.email.toLowerCase() };
    const plan: OrderPlan = { attendees: items.map((item) => (item.attendees ?? []).map((a) => ({ name: a.name, email: a.email.toLowerCase() }))), answers };
    const expiresAt = pending ? now + event.holdMinutes * 60_000 : null;
    const orderRow: OrderRow = {
      id: orderId,
      accountId: scope.accountId,
      eventId,
      buyerName: buyer.name,
      buyerEmail: buyer.email,
      items: JSON.stringify(orderItems),
      total,
      currency: event.currency,
      status: pending ? 'pending' : 'completed',
      createdAt: now,
      expiresAt,
      completedAt: pending ? null : now,
      refundedAmount: 0,
      balanceDue: 0,
      provider: pending ? input.payment!.provider : total > 0 ? 'external' : null,
      paymentStatus: pending ? 'pending' : total > 0 ? 'paid' : 'none',
      paymentReference: null,
      checkoutUrl: null,
      plan: pending ? JSON.stringify(plan) : null,
      updatedAt: now,
      voucherId: voucher?.id ?? null,
      voucherCode: voucher?.code ?? null,
      voucherPlaces,
    };
    // `sorted`: the order of soldOut's answer, and the order in which the types are taken.
    const sorted = [...items].sort((a, b) => (a.type.id < b.type.id ? -1 : 1));
    const orderVoucher = voucher ? orderVoucherOf(voucher, voucherPlaces, now) : null;
    // Under the event's lock the rows read are current: an order that their plain counts refuse
    // (sold + held + n above a type's quantity or the event's capacity; what vouchers and the waiting
    // list keep only takes more) is refused before its tickets are signed, as the conditional updates
    // would refuse it. A sell-out's refusals then cost no signature.
    const overType = sorted.some((item) => item.type.sold + item.type.held + item.quantity > item.type.quantity);
    if (overType || (event.capacity !== null && event.sold + event.held + count > event.capacity)) {
      throw soldOut(event, typeRows, sorted, count, await keptOfEvent(tx, eventId, now), orderVoucher?.reserving ? voucher : null);
    }
    const tickets = pending ? [] : await issueTickets(tx, orderRow, orderItems, plan, now);
    const payment = !pending && total > 0 ? chargeOf(orderRow, 'external', null, now) : null;
    const order = presentOrder(orderRow, tickets, payment ? [payment] : []);
    // A pending order reports nothing until it completes, expires or is cancelled.
    const messages = pending ? [] : completionMessages(order);
    const jobs: NewJob[] = pending
      ? [{ kind: EXPIRE_ORDER_KIND, payload: { accountId: scope.accountId, eventId, orderId } satisfies ExpireOrderPayload, maxAttempts: EXPIRE_ORDER_MAX_ATTEMPTS, runAt: expiresAt! }]
      : [];

    const taken = sorted.map((item) => ({ ticketTypeId: item.type.id, quantity: item.quantity }));
    const written = await repo.writeOrder(tx, { order: orderRow, tickets, count, holding: pending, payment, jobs, taken, messages, subscriptions, voucher: orderVoucher, now });
    // Only a refusal pays for reading what vouchers and the waiting list keep: it explains the refusal.
    // The voucher is read again beside them: PostgreSQL's one statement took its uses even as it refused.
    if (!written) throw soldOut(event, typeRows, sorted, count, await keptOfEvent(tx, eventId, now), orderVoucher?.reserving ? ((await voucherById(tx, voucher!.id)) ?? null) : null);
    if (!pending) await writeAnswers(tx, { accountId: scope.accountId, orderId, tickets: ticketPlaces(orderItems, tickets.map((t) => t.id)), prepared: answers });
    return { order, row: orderRow, event, names: items.map((item) => item.type.name) };
  });

  if (placed.order.status !== 'pending') return placed.order;
  return beginPayment(scope, provider!, placed.row, placed.event, placed.names, input.payment!);
}

/**
 * Asks the provider to begin a pending order's payment, outside any transaction (it may wait on the
 * network), and keeps where the buyer pays. If the provider fails, the order is cancelled (its
 * places returned) and the client gets 502 `payment_provider_error`.
 */
async function beginPayment(
  scope: TenantScope,
  provider: PaymentProvider,
  row: OrderRow,
  event: EventRow,
  names: string[],
  payment: NonNullable<Static<typeof CreateOrderBody>['payment']>,
): Promise<PresentedOrder> {
  const items = JSON.parse(row.items) as OrderItem[];
  let checkout: Checkout;
  try {
    checkout = await provider.begin({
      accountId: scope.accountId,
      orderId: row.id,
      eventId: row.eventId,
      eventName: event.name,
      total: row.total,
      currency: row.currency,
      buyer: { name: row.buyerName, email: row.buyerEmail },
      items: items.map((item, i) => ({ name: names[i]!, quantity: item.quantity, unitPrice: item.unitPrice })),
      expiresAt: row.expiresAt!,
      successUrl: payment.successUrl ?? null,
      cancelUrl: payment.cancelUrl ?? null,
    });
  } catch (err) {
    await endPending(scope, row.id, 'cancelled').catch(() => {});
    if (err instanceof AppError) throw err;
    throw new AppError('payment_provider_error', `The ${provider.name} provider could not begin the payment of order ${row.id}; the order was cancelled.`, { provider: provider.name, orderId: row.id });
  }
  if (checkout.reference !== null || checkout.checkoutUrl !== null) {
    // Paid (or cancelled) before the provider's answer came back: the order as it is now.
    if (!(await repo.saveCheckout(scope, row.id, checkout, Date.now()))) return getOrder(scope, row.id);
  }
  return presentOrder({ ...row, paymentReference: checkout.reference, checkoutUrl: checkout.checkoutUrl }, [], []);
}

/** An order inside a transaction, read after its event's lock (every change of an order's state takes it first): current. */
async function lockOrderUnderEvent(tx: TenantScope, id: string): Promise<{ order: OrderRow; event: EventRow }> {
  const found = await repo.findOrder(tx, id);
  if (!found) throw notFound('order', id);
  const event = await requireLockedEvent(tx, found.eventId);
  return { order: (await repo.findOrder(tx, id))!, event };
}

/**
 * Completes an order whose money arrived (a provider's report, or a manual confirmation), in one
 * transaction: its held places become sold, its tickets are issued, its charge is recorded,
 * `ticket.purchased` and `payment.completed` are sent. Idempotent: a completed order is returned
 * as it is, with no second message. An expired or cancelled order whose places are still free is
 * taken again and completed (the money arrived: honour it); otherwise 409 `order_expired` (the
 * caller refunds). `paid.amount` must be the order's total, else 409 `payment_amount_mismatch`
 * and nothing changes.
 */
export async function completeOrder(scope: TenantScope, orderId: string, paid: { provider: ProviderName; reference: string | null; amount: number }): Promise<PresentedOrder> {
  return scope.transaction(async (tx) => {
    const { order, event } = await lockOrderUnderEvent(tx, orderId);
    if (order.status === 'completed') return presentOrder(order, await ticketsOfOrder(tx, orderId), await repo.paymentsOfOrder(tx, orderId));
    if (paid.amount !== order.total) {
      throw new AppError('payment_amount_mismatch', `Order ${orderId} totals ${order.total} ${order.currency}; ${paid.amount} was reported paid.`, { total: order.total, amount: paid.amount });
    }
    return completeLocked(tx, order, event, paid);
  });
}

/** completeOrder's work, under the event's lock, for an order that is not completed. */
async function completeLocked(tx: TenantScope, order: OrderRow, event: EventRow, paid: { provider: ProviderName; reference: string | null; amount: number }): Promise<PresentedOrder> {
  const now = Date.now();
  const items = JSON.parse(order.items) as OrderItem[];
  const places = placesOf(items);
  // A cancelled event issues no more tickets (its pending orders were cancelled with it).
  if (event.status === 'cancelled') {
    throw new AppError('order_expired', `Order ${order.id} is of cancelled event ${event.id}; it cannot be completed.`, { orderStatus: order.status });
  }
  if (order.status === 'pending') {
    await repo.sellHeldPlaces(tx, order.eventId, places, now);
  } else if (!(await repo.sellFreePlaces(tx, order.eventId, places, now, await voucherOfEndedOrder(tx, order, now)))) {
    throw new AppError('order_expired', `Order ${order.id} is ${order.status} and its places are gone; it cannot be completed.`, { orderStatus: order.status });
  }
  const plan = JSON.parse(order.plan ?? '{"attendees":[]}') as OrderPlan;
  const tickets = await issueTickets(tx, order, items, plan, now);
  for (let i = 0; i < tickets.length; i += 100) await tx.db.insertInto('tickets').values(tickets.slice(i, i + 100)).execute();
  // Options removed from their questions since the order was placed are dropped from its answers (offeredAnswers).
  if (plan.answers) await writeAnswers(tx, { accountId: tx.accountId, orderId: order.id, tickets: ticketPlaces(items, tickets.map((t) => t.id)), prepared: await offeredAnswers(tx, plan.answers) });
  const completed = await repo.markCompleted(tx, order.id, {
    provider: paid.provider,
    paymentStatus: order.total > 0 ? 'paid' : 'none',
    paymentReference: paid.reference ?? order.paymentReference,
    completedAt: now,
    updatedAt: now,
  });
  const payments = await repo.paymentsOfOrder(tx, order.id);
  if (order.total > 0) {
    const charge = chargeOf(order, paid.provider, paid.reference ?? order.paymentReference, now);
    await repo.insertPayment(tx, charge);
    payments.push(charge);
  }
  const presented = presentOrder(completed, tickets, payments);
  await fanOut.inTransaction(tx.db, tx.accountId, completionMessages(presented), now);
  return presented;
}

/**
 * `POST /v1/orders/:id/confirm`: the organiser took a manual payment (bank transfer, cash). Only
 * for orders paid through `manual`; a pending order completes, an expired one as completeOrder
 * says; a completed or cancelled one is 409 `order_not_pending`.
 */
export async function confirmOrder(scope: TenantScope, orderId: string, input: Static<typeof ConfirmOrderBody>): Promise<PresentedOrder> {
  return scope.transaction(async (tx) => {
    const { order, event } = await lockOrderUnderEvent(tx, orderId);
    // A balance a change left owing is settled by hand, whoever took the order's money.
    if (order.status === 'completed' && order.balanceDue > 0) return confirmBalance(tx, order, input);
    if (order.provider !== 'manual') {
      throw new AppError('order_not_manual', `Order ${orderId} is paid through ${order.provider ?? 'no provider'}, not manually.`, { provider: order.provider });
    }
    if (order.status === 'completed' || order.status === 'cancelled') {
      throw new AppError('order_not_pending', `Order ${orderId} is ${order.status}.`, { orderStatus: order.status });
    }
    return completeLocked(tx, order, event, { provider: 'manual', reference: input.reference ?? null, amount: order.total });
  });
}

/**
 * Ends a pending order (`expired`: its hold ran out by `expiredBy`; `cancelled`), in one
 * transaction: its held places return (offered to those waiting: the waiting list's offer job is
 * queued), `order.expired` or `order.cancelled` is sent. Undefined
 * when it was not pending (or, for an expiry, not yet due), with nothing changed.
 */
async function endPending(scope: TenantScope, orderId: string, status: 'expired' | 'cancelled', expiredBy?: number): Promise<PresentedOrder | undefined> {
  const ended = await scope.transaction(async (tx) => {
    const { order } = await lockOrderUnderEvent(tx, orderId);
    const now = Date.now();
    const ended = await repo.endPendingOrder(tx, order.id, status, now, status === 'expired' ? (expiredBy ?? now) : undefined);
    if (!ended) return undefined;
    await repo.releaseHeldPlaces(tx, ended.eventId, placesOf(JSON.parse(ended.items) as OrderItem[]), now);
    await giveBackUses(tx, [ended], now);
    await queueWaitlistOffers(tx, ended.eventId, now);
    const presented = presentOrder(ended, [], await repo.paymentsOfOrder(tx, ended.id));
    await fanOut.inTransaction(tx.db, tx.accountId, [{ event: status === 'expired' ? 'order.expired' : 'order.cancelled', data: presented }], now);
    return { presented, row: ended };
  });
  if (!ended) return undefined;
  await endCheckouts(scope, [ended.row]);
  return ended.presented;
}

/**
 * Closes the provider's checkouts of orders that ended unpaid (Stripe: the Checkout Session is
 * expired), after their end committed. Best effort: a checkout that cannot be closed (the provider
 * away, its keys gone, paid meanwhile) is left; a payment that still comes is a late one, honoured
 * while the places are free and otherwise refunded at once.
 */
export async function endCheckouts(scope: TenantScope, orders: Pick<OrderRow, 'provider' | 'paymentReference'>[]): Promise<void> {
  for (const order of orders) {
    if (order.provider === null || order.paymentReference === null || !(PROVIDER_NAMES as readonly string[]).includes(order.provider)) continue;
    try {
      const provider = await providerFor(scope.db as Db, scope.accountId, order.provider as ProviderName);
      await provider.endCheckout?.(order.paymentReference);
    } catch {
      // Best effort (see above).
    }
  }
}

/**
 * A cancelled event's pending orders → cancelled, in the event's cancelling transaction (under its
 * lock): nothing is held any more, and `order.cancelled` is sent for each. The orders, whose
 * checkouts the caller closes after its commit (endCheckouts).
 */
export async function cancelPendingOrdersOfEvent(tx: TenantScope, eventId: string, now: number): Promise<OrderRow[]> {
  const cancelled = await repo.endPendingOrdersOfEvent(tx, eventId, now);
  if (cancelled.length === 0) return cancelled;
  await giveBackUses(tx, cancelled, now);
  const payments = await repo.paymentsOfOrders(tx, cancelled.map((o) => o.id));
  const messages = cancelled.map((order): OutboxMessage => ({ event: 'order.cancelled', data: presentOrder(order, [], payments.filter((p) => p.orderId === order.id)) }));
  await fanOut.inTransaction(tx.db, tx.accountId, messages, now);
  return cancelled;
}

/** `POST /v1/orders/:id/cancel`: a pending order → cancelled, its places returned; any other is 409 `order_not_pending`. */
export async function cancelOrder(scope: TenantScope, orderId: string): Promise<PresentedOrder> {
  const cancelled = await endPending(scope, orderId, 'cancelled');
  if (cancelled) return cancelled;
  const order = await repo.findOrder(scope, orderId);
  if (!order) throw notFound('order', orderId);
  throw new AppError('order_not_pending', `Order ${orderId} is ${order.status}; only a pending order can be cancelled (cancel its tickets instead).`, { orderStatus: order.status });
}

/**
 * The expiry job's work: the order expires if it is still pending and its hold has run out by
 * `asOf` (the clock; tests pass a later one). The time until its hold runs out if it is still
 * pending but not yet due (a worker's clock behind another's, or an `expiresAt` moved later), else 0.
 */
export async function expireOrder(db: Db, payload: ExpireOrderPayload, asOf = Date.now()): Promise<number> {
  const scope = new TenantScope(db, payload.accountId);
  const order = await repo.findOrder(scope, payload.orderId);
  // Gone with its account, or no longer pending: nothing to do.
  if (order?.status !== 'pending' || order.expiresAt === null) return 0;
  if (order.expiresAt > asOf) return order.expiresAt - asOf;
  if (await endPending(scope, payload.orderId, 'expired', asOf)) return 0;
  // Changed between the two reads (completed, cancelled, or its hold moved later): read it again.
  const after = await repo.findOrder(scope, payload.orderId);
  return after?.status === 'pending' && after.expiresAt !== null ? Math.max(1, after.expiresAt - asOf) : 0;
}

export async function getOrder(scope: TenantScope, id: string): Promise<PresentedOrder> {
  const order = await repo.findOrder(scope, id);
  if (!order) throw notFound('order', id);
  const [tickets, payments] = await Promise.all([ticketsOfOrder(scope, id), repo.paymentsOfOrder(scope, id)]);
  return presentOrder(order, tickets, payments);
}

/** An event's orders, newest first, optionally of one state; each with its tickets and payments. */
export async function listOrders(scope: TenantScope, eventId: string, query: Static<typeof OrderListQuery> & PageParams): Promise<Page<PresentedOrder>> {
  const request = pageRequest(query, listTag('orders', { eventId, status: query.status }));
  await requireEvent(scope, eventId);
  const rows = await repo.pageOrders(scope, eventId, query.status, request);
  const ids = rows.slice(0, request.limit).map((r) => r.id);
  const [tickets, payments] = await Promise.all([repo.ticketsOfOrders(scope, ids), repo.paymentsOfOrders(scope, ids)]);
  const group = <T extends { orderId: string }>(list: T[]) => {
    const by = new Map<string, T[]>();
    for (const row of list) by.set(row.orderId, [...(by.get(row.orderId) ?? []), row]);
    return by;
  };
  const ticketsBy = group(tickets);
  const paymentsBy = group(payments);
  return toPage(rows, request, (r) => ({ key: r.id, id: r.id }), (r) => presentOrder(r, ticketsBy.get(r.id) ?? [], paymentsBy.get(r.id) ?? []));
}
