import type { Db } from '../../db/database.js';
import type { StripeAccountTable, StripeEventTable } from './stripe.table.js';
import './stripe.table.js';

export function findStripeAccount(db: Db, accountId: string): Promise<StripeAccountTable | undefined> {
  return db.selectFrom('stripeAccounts').selectAll().where('accountId', '=', accountId).executeTakeFirst();
}

/** Sets the account's keys in one statement, whether or not it had some: two PUTs at once leave one of them whole. */
export async function saveStripeAccount(db: Db, row: StripeAccountTable): Promise<StripeAccountTable> {
  return db
    .insertInto('stripeAccounts')
    .values(row)
    .onConflict((oc) => oc.column('accountId').doUpdateSet({ secretKey: row.secretKey, webhookSecret: row.webhookSecret, updatedAt: row.updatedAt }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteStripeAccount(db: Db, accountId: string): Promise<boolean> {
  const result = await db.deleteFrom('stripeAccounts').where('accountId', '=', accountId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export function findStripeEvent(db: Db, accountId: string, eventId: string): Promise<Pick<StripeEventTable, 'outcome' | 'orderId'> | undefined> {
  return db.selectFrom('stripeEvents').select(['outcome', 'orderId']).where('accountId', '=', accountId).where('eventId', '=', eventId).executeTakeFirst();
}

/** Notes that an event was acted on; a delivery of the same event racing this one noted it first, and that is fine. */
export async function recordStripeEvent(db: Db, row: StripeEventTable): Promise<void> {
  await db.insertInto('stripeEvents').values(row).onConflict((oc) => oc.columns(['accountId', 'eventId']).doNothing()).execute();
}

export async function deleteStripeEventsBefore(db: Db, before: number): Promise<number> {
  const result = await db.deleteFrom('stripeEvents').where('createdAt', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
