export interface DashboardSessionTable {
  id: string;
  accountId: string;
  /** SHA-256 of the cookie's token, hex. The token itself is never stored. */
  tokenHash: string;
  /** Sent back in `X-CSRF-Token` on every state-changing request of the session. */
  csrfToken: string;
  createdAt: number;
  expiresAt: number;
  lastSeenAt: number;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    dashboardSessions: DashboardSessionTable;
  }
}
