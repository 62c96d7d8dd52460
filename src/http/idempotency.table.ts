export interface IdempotencyKeyTable {
  accountId: string;
  method: string;
  /** Path without the `/api` alias prefix and without the query string. */
  path: string;
  idempotencyKey: string;
  /** SHA-256 of the canonical JSON body. */
  requestHash: string;
  /** `in_progress` while the first request runs, then `completed`. */
  state: string;
  responseStatus: number | null;
  responseHeaders: string | null;
  responseBody: string | null;
  createdAt: number;
  /** While in progress: when another request may take the key over (the first one died). */
  lockedUntil: number;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    idempotencyKeys: IdempotencyKeyTable;
  }
}
