import type { TenantScope } from '../db/tenant.js';
import { AppError, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { fanOut } from '../webhooks/outbox.js';
import { refundsBesideTickets } from './analytics.repository.js';
import { requireEvent, requireLockedEvent } from './events.repository.js';
import * as repo from './payouts.repository.js';

type PayoutRow = { id: string; eventId: string; amount: number; currency: string; createdAt: number };
const presentPayout = (row: PayoutRow) => ({ id: row.id, eventId: row.eventId, amount: row.amount, currency: row.currency, createdAt: iso(row.createdAt) });

/** Pays out the event's net revenue not paid out yet; the event row lock keeps two payouts from paying the same money. */
export async function createPayout(scope: TenantScope, eventId: string) {
  return scope.transaction(async (tx) => {
    const event = await requireLockedEvent(tx, eventId);
    const money = await repo.ticketMoney(tx, eventId);
    // Refunds on their way count as gone: their money is promised back.
    const amount = money.gross - money.refunded - (await refundsBesideTickets(tx, eventId, { pending: true })) - (await repo.paidOut(tx, eventId));
    if (amount <= 0) throw new AppError('nothing_to_pay_out', `Event ${eventId} has no revenue left to pay out.`);
    const now = Date.now();
    const row = { id: newId('payout'), accountId: scope.accountId, eventId, amount, currency: event.currency, createdAt: now };
    await repo.insertPayout(tx, row);
    const payout = presentPayout(row);
    await fanOut.inTransaction(tx.db, scope.accountId, [{ event: 'payout.processed', data: payout }], now);
    return payout;
  });
}

export async function listPayouts(scope: TenantScope, eventId: string, query: PageParams): Promise<Page<ReturnType<typeof presentPayout>>> {
  const page = pageRequest(query, payoutsListTag(eventId));
  await requireEvent(scope, eventId);
  const rows = await repo.pagePayouts(scope, eventId, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentPayout);
}

export async function getPayout(scope: TenantScope, eventId: string, id: string) {
  const row = await repo.findPayout(scope, eventId, id);
  if (!row) throw notFound('payout', id);
  return presentPayout(row);
}

const payoutsListTag = (eventId: string) => listTag(`payouts:${eventId}`);
