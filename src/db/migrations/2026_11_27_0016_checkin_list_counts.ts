import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. A check-in list's counts leave its row:
// every scan updated that one row, so on PostgreSQL the scans through a busy list queued on its
// lock and left a dead version of it each. They are kept in a few counter rows per list instead
// (`slot`), each scan adding to one of them, and summed on read. The counts so far move to slot 0.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('checkin_list_counts')
    .addColumn('list_id', 'text', (c) => c.notNull().references('checkin_lists.id').onDelete('cascade'))
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('inside', 'integer', (c) => c.notNull())
    .addColumn('entries', 'integer', (c) => c.notNull())
    .addColumn('exits', 'integer', (c) => c.notNull())
    .addColumn('admitted_tickets', 'integer', (c) => c.notNull())
    .addColumn('conflicts', 'integer', (c) => c.notNull())
    .addColumn('scans', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('checkin_list_counts_pk', ['list_id', 'slot'])
    .execute();
  // Deleting an account cascades here: without an index each deletion would read the whole table.
  await db.schema.createIndex('checkin_list_counts_account').on('checkin_list_counts').column('account_id').execute();
  await db
    .insertInto('checkin_list_counts')
    .columns(['list_id', 'slot', 'account_id', 'inside', 'entries', 'exits', 'admitted_tickets', 'conflicts', 'scans'])
    .expression(
      db
        .selectFrom('checkin_lists')
        .select(['id', (eb) => eb.lit(0).as('slot'), 'account_id', 'inside', 'entries', 'exits', 'admitted_tickets', 'conflicts', 'scans'])
        .where('scans', '>', 0),
    )
    .execute();
  for (const column of ['inside', 'entries', 'exits', 'admitted_tickets', 'conflicts', 'scans']) {
    await db.schema.alterTable('checkin_lists').dropColumn(column).execute();
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['inside', 'entries', 'exits', 'admitted_tickets', 'conflicts', 'scans']) {
    await db.schema.alterTable('checkin_lists').addColumn(column, 'integer', (c) => c.notNull().defaultTo(0)).execute();
  }
  for (const column of ['inside', 'entries', 'exits', 'admitted_tickets', 'conflicts', 'scans']) {
    const sum = (eb: any) => eb.selectFrom('checkin_list_counts as c').select((s: any) => s.fn.coalesce(s.fn.sum(`c.${column}`), s.lit(0)).as('n')).whereRef('c.list_id', '=', 'checkin_lists.id');
    await db.updateTable('checkin_lists').set((eb: any) => ({ [column]: sum(eb) })).execute();
  }
  await db.schema.dropTable('checkin_list_counts').execute();
}
