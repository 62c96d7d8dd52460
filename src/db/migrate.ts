import { type Migration, type MigrationProvider, Migrator } from 'kysely';
import { type DatabaseHandle, ensureSchema } from './database.js';
import * as m0001 from './migrations/2026_11_22_0001_accounts.js';
import * as m0002 from './migrations/2026_11_22_0002_events.js';
import * as m0003 from './migrations/2026_11_22_0003_jobs_webhooks.js';
import * as m0004 from './migrations/2026_11_22_0004_blend.js';
import * as m0005 from './migrations/2026_11_22_0005_sessions.js';
import * as m0006 from './migrations/2026_11_23_0006_blend_retention.js';
import * as m0007 from './migrations/2026_11_26_0007_search_statistics.js';
import * as m0008 from './migrations/2026_11_26_0008_email_nfkc.js';
import * as m0009 from './migrations/2026_11_26_0009_webhook_secret_rotation.js';
import * as m0010 from './migrations/2026_11_26_0010_blend_alignment.js';
import * as m0011 from './migrations/2026_11_27_0011_ticket_signing.js';
import * as m0012 from './migrations/2026_11_27_0012_checkin_lists.js';
import * as m0013 from './migrations/2026_11_27_0013_box_office_orders.js';
import * as m0014 from './migrations/2026_11_27_0014_questions.js';
import * as m0015 from './migrations/2026_11_27_0015_order_balance.js';
import * as m0016 from './migrations/2026_11_27_0016_checkin_list_counts.js';
import * as m0017 from './migrations/2026_11_27_0017_stripe.js';
import * as m0018 from './migrations/2026_11_27_0018_vouchers_waitlist.js';
import * as m0021 from './migrations/2026_11_27_0021_blend_uploads.js';
import * as m0022 from './migrations/2026_11_27_0022_blend_progress_cancel.js';
import * as m0023 from './migrations/2026_11_27_0023_checkin_conflicts_index.js';
import * as m0024 from './migrations/2026_11_27_0024_tickets_fillfactor.js';
import * as m0025 from './migrations/2026_11_27_0025_checkin_counts_time_slots.js';
import * as m0026 from './migrations/2026_11_28_0026_checkin_composite_foreign_keys.js';

const MIGRATIONS: Record<string, Migration> = {
  '2026_11_22_0001_accounts': m0001,
  '2026_11_22_0002_events': m0002,
  '2026_11_22_0003_jobs_webhooks': m0003,
  '2026_11_22_0004_blend': m0004,
  '2026_11_22_0005_sessions': m0005,
  '2026_11_23_0006_blend_retention': m0006,
  '2026_11_26_0007_search_statistics': m0007,
  '2026_11_26_0008_email_nfkc': m0008,
  '2026_11_26_0009_webhook_secret_rotation': m0009,
  '2026_11_26_0010_blend_alignment': m0010,
  '2026_11_27_0011_ticket_signing': m0011,
  '2026_11_27_0012_checkin_lists': m0012,
  '2026_11_27_0013_box_office_orders': m0013,
  '2026_11_27_0014_questions': m0014,
  '2026_11_27_0015_order_balance': m0015,
  '2026_11_27_0016_checkin_list_counts': m0016,
  '2026_11_27_0017_stripe': m0017,
  '2026_11_27_0018_vouchers_waitlist': m0018,
  '2026_11_27_0021_blend_uploads': m0021,
  '2026_11_27_0022_blend_progress_cancel': m0022,
  '2026_11_27_0023_checkin_conflicts_index': m0023,
  '2026_11_27_0024_tickets_fillfactor': m0024,
  '2026_11_27_0025_checkin_counts_time_slots': m0025,
  '2026_11_28_0026_checkin_composite_foreign_keys': m0026,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/** Applies the migrations up to and including `name` only: an older schema, for tests of a migration's backfill. */
export async function migrateUpTo(handle: DatabaseHandle, name: string): Promise<void> {
  await ensureSchema(handle);
  const migrator = new Migrator({ db: handle.db, provider, ...(handle.schema ? { migrationTableSchema: handle.schema } : {}) });
  const { error } = await migrator.migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

/**
 * Applies every pending migration; several processes starting at once take turns
 * (Kysely's migration lock). The bookkeeping tables live in the same schema as the data.
 */
export async function migrateToLatest(handle: DatabaseHandle): Promise<string[]> {
  await ensureSchema(handle);
  const migrator = new Migrator({ db: handle.db, provider, ...(handle.schema ? { migrationTableSchema: handle.schema } : {}) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`migration ${failed ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
