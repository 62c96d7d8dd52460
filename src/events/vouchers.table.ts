/**
 * A voucher of one event (migration 0018; docs/events.md, "Vouchers"): a code that discounts,
 * unlocks a hidden ticket type, or reserves places of one ticket type, for at most `maxUses` places.
 */
export interface VoucherTable {
  id: string;
  accountId: string;
  eventId: string;
  /** Upper case; unique within the event. */
  code: string;
  /** null: every ticket type of the event (a hidden type is unlocked only by a voucher naming it). */
  ticketTypeId: string | null;
  /** `none` | `percent` | `fixed` */
  discountType: string;
  /** percent: 1..100; fixed: minor units off each ticket's price (never below 0); none: 0. */
  discountValue: number;
  /** Places it may give, in all. */
  maxUses: number;
  /** Places taken by its pending and completed orders (an expired or cancelled pending order gives them back). */
  redeemed: number;
  /** 0 | 1: keeps `maxUses - redeemed` places of its ticket type (and of the event's capacity) from everyone else while valid. */
  reserve: number;
  validFrom: number | null;
  validUntil: number | null;
  comment: string | null;
  /** The waiting-list entry this voucher is the offer of; null for an organiser's voucher. */
  waitlistEntryId: string | null;
  createdAt: number;
  updatedAt: number;
}

declare module '../db/database.js' {
  interface Database {
    vouchers: VoucherTable;
  }
}
