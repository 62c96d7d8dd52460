export interface EventTable {
  id: string;
  accountId: string;
  name: string;
  description: string | null;
  startsAt: number;
  endsAt: number;
  timezone: string;
  /** JSON `{name, address, city, country}` or null. */
  venue: string | null;
  onlineUrl: string | null;
  capacity: number | null;
  currency: string;
  /** `draft` | `published` | `cancelled` */
  status: string;
  /** JSON string map. */
  metadata: string;
  /** Valid tickets across every type (checked against `capacity`). */
  sold: number;
  /** Places held by pending orders (checked against `capacity` with `sold`). */
  held: number;
  /** How long a pending order holds its places. */
  holdMinutes: number;
  /** How long a waiting-list offer stands (waitlist.table.ts). */
  waitlistOfferMinutes: number;
  /** Tickets ever issued, cancelled ones included: an event that issued one cannot be deleted. */
  ticketsIssued: number;
  /** Live questions (questions.service.ts keeps it, under the event's lock); 0: orders read none. */
  questions: number;
  createdAt: number;
  updatedAt: number;
  publishedAt: number | null;
  cancelledAt: number | null;
}

/** Every column by name, for prepared queries (see TICKET_COLUMNS). */
export const EVENT_COLUMNS = [
  'id',
  'accountId',
  'name',
  'description',
  'startsAt',
  'endsAt',
  'timezone',
  'venue',
  'onlineUrl',
  'capacity',
  'currency',
  'status',
  'metadata',
  'sold',
  'held',
  'holdMinutes',
  'waitlistOfferMinutes',
  'ticketsIssued',
  'questions',
  'createdAt',
  'updatedAt',
  'publishedAt',
  'cancelledAt',
] as const satisfies ReadonlyArray<keyof EventTable>;

export interface TicketTypeTable {
  id: string;
  accountId: string;
  eventId: string;
  name: string;
  description: string | null;
  price: number;
  currency: string;
  quantity: number;
  /** Valid tickets of this type. */
  sold: number;
  /** Places of this type held by pending orders (checked against `quantity` with `sold`). */
  held: number;
  salesStartAt: number | null;
  salesEndAt: number | null;
  maxPerOrder: number | null;
  /** 0 | 1: sold only with a voucher that names this type (vouchers.table.ts). */
  hidden: number;
  createdAt: number;
  updatedAt: number;
}

/** Every column by name, for prepared queries (see TICKET_COLUMNS). */
export const TICKET_TYPE_COLUMNS = [
  'id',
  'accountId',
  'eventId',
  'name',
  'description',
  'price',
  'currency',
  'quantity',
  'sold',
  'held',
  'salesStartAt',
  'salesEndAt',
  'maxPerOrder',
  'hidden',
  'createdAt',
  'updatedAt',
] as const satisfies ReadonlyArray<keyof TicketTypeTable>;

export interface OrderTable {
  id: string;
  accountId: string;
  eventId: string;
  buyerName: string;
  buyerEmail: string;
  /** JSON `[{ticketTypeId, quantity, unitPrice}]`. */
  items: string;
  total: number;
  currency: string;
  /** `pending` | `completed` | `expired` | `cancelled` */
  status: string;
  createdAt: number;
  /** When a pending order's hold ends; null once it is no longer pending, and for orders never pending. */
  expiresAt: number | null;
  completedAt: number | null;
  /** Money given back, in all (the order's refund payments that succeeded). */
  refundedAmount: number;
  /** What the buyer owes after a change to a dearer ticket type (docs/events.md, "Refunds and order changes"). */
  balanceDue: number;
  /** `manual` | `stripe` | `external` (paid outside Montage) | null (free). */
  provider: string | null;
  /** `none` | `pending` | `paid` | `partially_refunded` | `refunded` */
  paymentStatus: string;
  /** The provider's id of the payment attempt (a Checkout Session), once begun. */
  paymentReference: string | null;
  checkoutUrl: string | null;
  /** A pending order's JSON OrderPlan (orders.service.ts): what it issues at completion. */
  plan: string | null;
  updatedAt: number | null;
  /** The voucher the order used (no foreign key: history outlives an unused voucher's deletion), its code then, and how many of the order's places it gave. */
  voucherId: string | null;
  voucherCode: string | null;
  voucherPlaces: number;
}

export interface PaymentTable {
  id: string;
  accountId: string;
  eventId: string;
  orderId: string;
  /** The ticket a refund is for; null for a charge or an amount not tied to a ticket. */
  ticketId: string | null;
  /** `manual` | `stripe` | `external` */
  provider: string;
  /** `charge` | `refund` */
  kind: string;
  amount: number;
  currency: string;
  /** `pending` | `succeeded` | `failed` */
  status: string;
  /** The provider's id of the money movement. */
  reference: string | null;
  reason: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface TicketTable {
  id: string;
  accountId: string;
  eventId: string;
  ticketTypeId: string;
  orderId: string;
  /** `valid` | `cancelled` */
  status: string;
  attendeeName: string;
  attendeeEmail: string;
  /** The secret printed in the QR code; replaced on transfer. */
  code: string;
  price: number;
  currency: string;
  refundedAmount: number;
  checkedInAt: number | null;
  checkinId: string | null;
  createdAt: number;
  updatedAt: number;
  cancelledAt: number | null;
}

/** Every column by name, for prepared queries (a named PostgreSQL statement must not say `*`: db/prepared.ts). */
export const TICKET_COLUMNS = [
  'id',
  'accountId',
  'eventId',
  'ticketTypeId',
  'orderId',
  'status',
  'attendeeName',
  'attendeeEmail',
  'code',
  'price',
  'currency',
  'refundedAmount',
  'checkedInAt',
  'checkinId',
  'createdAt',
  'updatedAt',
  'cancelledAt',
] as const satisfies ReadonlyArray<keyof TicketTable>;

export interface CheckinTable {
  id: string;
  accountId: string;
  eventId: string;
  ticketId: string;
  /** `checkin` | `undo` */
  action: string;
  gate: string | null;
  /** When the scan happened (an offline scanner's own time), or when the undo did. */
  scannedAt: number;
  /** The API key that did it. */
  keyId: string | null;
  createdAt: number;
}

export interface PayoutTable {
  id: string;
  accountId: string;
  eventId: string;
  amount: number;
  currency: string;
  createdAt: number;
}

// The tables of this file, in the database's type (db/database.ts).
declare module '../db/database.js' {
  interface Database {
    events: EventTable;
    ticketTypes: TicketTypeTable;
    orders: OrderTable;
    tickets: TicketTable;
    checkins: CheckinTable;
    payouts: PayoutTable;
    payments: PaymentTable;
  }
}
