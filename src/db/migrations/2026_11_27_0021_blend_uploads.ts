import type { Kysely } from 'kysely';

// Frozen in time: imports nothing from the app. Images sent to the blend area instead of linked
// (docs/blend.md, "Uploads"): the bytes live in the object store under
// `uploads/<account id>/<upload id>`; this row says what they are and until when they may be used.
// A row exists only for an upload stored whole and checked (an image, within the byte and pixel
// limits): the object is written first and the row inserted after.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('blend_uploads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('bytes', 'bigint', (c) => c.notNull())
    .addColumn('width', 'integer', (c) => c.notNull())
    .addColumn('height', 'integer', (c) => c.notNull())
    // As told by the image's first bytes: jpeg, png, webp, gif, tiff, heif.
    .addColumn('format', 'text', (c) => c.notNull())
    // Hex SHA-256 of the bytes, so a client can check what was stored.
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    // After this the upload is gone for the client; the sweep removes it once no unfinished job uses it.
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blend_uploads_account_id').on('blend_uploads').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('blend_uploads_expires_at').on('blend_uploads').columns(['expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('blend_uploads').execute();
}
