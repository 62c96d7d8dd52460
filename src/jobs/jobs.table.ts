export interface JobTable {
  id: string;
  /** Which handler works it, e.g. `webhook.deliver`. */
  kind: string;
  /** JSON for the handler. */
  payload: string;
  /** `queued` → `running` → `done` | `failed` (and back to `queued` for a retry). */
  status: string;
  attempts: number;
  maxAttempts: number;
  /** Not before this time (a retry's delay). */
  runAt: number;
  /** The worker holding the lease, and until when; an expired lease lets another take the job over. */
  lockedBy: string | null;
  lockedUntil: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    jobs: JobTable;
  }
}
