/**
 * A person waiting for a sold-out ticket type (migration 0018; docs/events.md, "Waiting list"),
 * served in order of `createdAt`, then `id`. An offer is a single-use reserving voucher.
 */
export interface WaitlistEntryTable {
  id: string;
  accountId: string;
  eventId: string;
  ticketTypeId: string;
  name: string;
  /** Lower case; one waiting or offered entry per address and ticket type. */
  email: string;
  /** `waiting` | `offered` | `redeemed` | `expired` (the offer was not taken) | `removed` */
  status: string;
  /** The offer (vouchers.table.ts), once made. */
  voucherId: string | null;
  offeredAt: number | null;
  offerExpiresAt: number | null;
  createdAt: number;
  updatedAt: number;
}

declare module '../db/database.js' {
  interface Database {
    waitlistEntries: WaitlistEntryTable;
  }
}
