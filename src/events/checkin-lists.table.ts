import type { Generated } from 'kysely';

export interface CheckinListTable {
  id: string;
  accountId: string;
  eventId: string;
  name: string;
  /** JSON array of ticket type ids; empty: every type of the event. */
  ticketTypeIds: string;
  validFrom: number | null;
  validUntil: number | null;
  /** 0 | 1 */
  allowMultipleEntries: number;
  /** 0 | 1 */
  scanExits: number;
  createdAt: number;
  /** When its settings last changed (its counts are not on its row: CheckinListCountsTable). */
  updatedAt: number;
}

/**
 * A list's counts, spread over rows (`slot`) that scans add to, summed on read: one row updated by
 * every scan of a busy list would make them wait for each other on PostgreSQL
 * (checkin-lists.repository.ts, FOLD_EVERY says how).
 */
export interface CheckinListCountsTable {
  listId: string;
  /** 0 for the folded counts, else time-ordered (checkin-lists.repository.ts, countSlot); bigint on PostgreSQL, read as a number (db/database.ts). */
  slot: number;
  accountId: string;
  /** Tickets inside now. */
  inside: number;
  /** Admitted entry scans. */
  entries: number;
  /** Accepted exit scans. */
  exits: number;
  /** Tickets admitted at least once. */
  admittedTickets: number;
  /** Scans recorded as conflicts (a second admission of a ticket on a list that admits once). */
  conflicts: number;
  /** Scans of any outcome recorded on the list. */
  scans: number;
  /** Row 0 only, on PostgreSQL: the highest slot folded into it (foldCounts); 0 elsewhere. */
  foldedThrough: Generated<number>;
}

/** Per list and ticket: inside or not, its admitted entries, and its kept admission (the earliest). */
export interface CheckinListTicketTable {
  listId: string;
  ticketId: string;
  accountId: string;
  /** 0 | 1 */
  inside: number;
  entries: number;
  keptScanId: string | null;
  keptScannedAt: number | null;
  keptDeviceId: string | null;
  /** The kept admission's row in checkin_scans. */
  keptRowId: string | null;
}

/** Every scan through a list, by its client-made scan id (unique per list). */
export interface CheckinScanTable {
  id: string;
  accountId: string;
  eventId: string;
  listId: string;
  scanId: string;
  ticketId: string | null;
  /** `entry` | `exit` */
  direction: string;
  scannedAt: number;
  deviceId: string | null;
  gate: string | null;
  keyId: string | null;
  /** What the scanner showed, for a synced scan: `admitted` | `refused`; null for an online scan. */
  localResult: string | null;
  /** `admitted` | `refused` | `conflict` | `undone` */
  outcome: string;
  /** The refusal's code, for a refused scan. */
  reason: string | null;
  /** For a conflict: the admission that was kept. */
  keptScanId: string | null;
  keptScannedAt: number | null;
  keptDeviceId: string | null;
  /** When the scan became a conflict (on arrival, or later when an earlier admission arrived). */
  conflictedAt: number | null;
  createdAt: number;
}

declare module '../db/database.js' {
  interface Database {
    checkinLists: CheckinListTable;
    checkinListCounts: CheckinListCountsTable;
    checkinListTickets: CheckinListTicketTable;
    checkinScans: CheckinScanTable;
  }
}
