import type { Kysely } from 'kysely';

// Frozen in time: this file imports nothing from the app. Questions an event asks of each attendee
// or once per order, and their answers. A question is never deleted, only retired (`deleted_at`):
// answers keep their question, and a pending order validated against it can still be completed.
export async function up(db: Kysely<any>): Promise<void> {
  // How many live questions the event has, read with the event's row under its lock: an order of
  // an event that asks nothing reads no questions (no round trip while the event is locked).
  await db.schema.alterTable('events').addColumn('questions', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema
    .createTable('questions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('help', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('options', 'text')
    .addColumn('required', 'integer', (c) => c.notNull())
    .addColumn('asked_per', 'text', (c) => c.notNull())
    .addColumn('ticket_type_ids', 'text')
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('max_length', 'integer')
    .addColumn('min_value', 'double precision')
    .addColumn('max_value', 'double precision')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('questions_event_position').on('questions').columns(['event_id', 'position', 'id']).execute();

  // One answer per question and subject: the ticket for a question asked per attendee, the order
  // for one asked per order (ticket_id null). `value` is the answer as JSON.
  await db.schema
    .createTable('answers')
    .addColumn('question_id', 'text', (c) => c.notNull().references('questions.id').onDelete('cascade'))
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('order_id', 'text', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('ticket_id', 'text', (c) => c.references('tickets.id').onDelete('cascade'))
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('answers_pk', ['question_id', 'subject_id'])
    .execute();
  // An event's answers by ticket: a page's tickets by id, an export's batch by the range it spans,
  // without reading other events' (or accounts') answers on the way.
  await db.schema.createIndex('answers_event_ticket').on('answers').columns(['event_id', 'ticket_id']).execute();
  await db.schema.createIndex('answers_order').on('answers').columns(['order_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['answers', 'questions']) await db.schema.dropTable(table).execute();
  await db.schema.alterTable('events').dropColumn('questions').execute();
}
