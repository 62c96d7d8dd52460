import { type Kysely, sql } from 'kysely';

// Frozen in time: this file imports nothing from the app. An order change that moves a ticket to a
// dearer type leaves the buyer owing the difference: the order keeps it (`balance_due`, minor
// units) until the organiser confirms it paid, or a cheaper change or a cancel offsets it.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('orders').addColumn('balance_due', 'bigint', (c) => c.notNull().defaultTo(0).check(sql`balance_due >= 0`)).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('orders').dropColumn('balance_due').execute();
}
