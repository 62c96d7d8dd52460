import { Type } from 'typebox';
import { PageQuery, pageSchema } from '../http/paging.js';
import { CheckinCounts } from './checkin-lists.schemas.js';
import { AnswerSchema, AnswersInput } from './questions.schemas.js';
import { MAX_CODE_CHARS } from './ticket-code-format.js';
import { Currency, CurrencyCode, Email, Money, Name, Nullable, NullableTimestamp, PathId, Person, ref, StringEnum, Timestamp } from '../schemas.js';

const Description = Type.String({ maxLength: 5000 });
const Metadata = Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,40}$' }), Type.String({ maxLength: 500 }), {
  maxProperties: 50,
  description: 'Your own string key-value pairs (up to 50 keys).',
  examples: [{ crmId: '4711' }],
});
const Venue = Type.Object(
  {
    name: Name,
    address: Type.Optional(Type.String({ maxLength: 500 })),
    city: Type.Optional(Type.String({ maxLength: 200 })),
    country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$', maxLength: 2, description: 'ISO 3166-1 alpha-2' })),
  },
  { additionalProperties: false },
);
const HttpUrl = Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2000 });
const Capacity = Type.Integer({ format: 'int32', minimum: 1, maximum: 1_000_000 });
const Quantity = Type.Integer({ format: 'int32', minimum: 1, maximum: 1_000_000 });
const MaxPerOrder = Type.Integer({ format: 'int32', minimum: 1, maximum: 100 });
/** A count of places or orders (at most an event's largest capacity). */
const Count = (description?: string) => Type.Integer({ format: 'int32', minimum: 0, maximum: 1_000_000, ...(description ? { description } : {}) });
const HoldMinutes = Type.Integer({ format: 'int32', minimum: 1, maximum: 1440, description: 'How long a pending order (one paid through a provider) holds its places, in minutes; 15 unless set.' });
const WaitlistOfferMinutes = Type.Integer({ format: 'int32', minimum: 5, maximum: 10080, description: 'How long a waiting-list offer stands, in minutes (5 to 10080, a week); 1440 unless set.' });

export const EventStatus = StringEnum(['draft', 'published', 'cancelled']);

export const EventSchema = Type.Object(
  {
    id: Type.String({ examples: ['evt_01m80eg3tperaacsapew6ns732'] }),
    name: Type.String(),
    description: Nullable(Type.String()),
    startsAt: Timestamp,
    endsAt: Timestamp,
    timezone: Type.String({ examples: ['Europe/Berlin'] }),
    venue: Nullable(Venue),
    onlineUrl: Nullable(Type.String()),
    capacity: Nullable(Type.Integer()),
    currency: Currency,
    status: EventStatus,
    metadata: Type.Record(Type.String(), Type.String()),
    ticketsSold: Type.Integer({ description: 'Valid tickets across every ticket type.' }),
    ticketsHeld: Count('Places held by pending orders: taken from the capacity until they complete, expire or are cancelled.'),
    holdMinutes: HoldMinutes,
    waitlistOfferMinutes: WaitlistOfferMinutes,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    publishedAt: NullableTimestamp,
    cancelledAt: NullableTimestamp,
  },
  { $id: 'Event' },
);

export const CreateEventBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    startsAt: Timestamp,
    endsAt: Timestamp,
    timezone: Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, matched ignoring case and stored as given, its case as the time-zone database spells it (`utc` → `UTC`, `europe/berlin` → `Europe/Berlin`; `US/Pacific` and `Europe/Kyiv` stay as written)', examples: ['Europe/Berlin'] }),
    venue: Type.Optional(Venue),
    onlineUrl: Type.Optional(HttpUrl),
    capacity: Type.Optional(Capacity),
    currency: CurrencyCode,
    metadata: Type.Optional(Metadata),
    holdMinutes: Type.Optional(HoldMinutes),
    waitlistOfferMinutes: Type.Optional(WaitlistOfferMinutes),
  },
  { $id: 'CreateEventRequest', examples: [{ name: 'Launch night', startsAt: '2027-05-01T18:00:00+02:00', endsAt: '2027-05-01T23:00:00+02:00', timezone: 'Europe/Berlin', currency: 'EUR', capacity: 300, venue: { name: 'Hall 7', city: 'Berlin', country: 'DE' } }], additionalProperties: false },
);

export const UpdateEventBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    startsAt: Type.Optional(Timestamp),
    endsAt: Type.Optional(Timestamp),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, stored as given, its case as the time-zone database spells it (see CreateEventRequest)' })),
    venue: Type.Optional(Type.Union([Venue, Type.Null()])),
    onlineUrl: Type.Optional(Type.Union([HttpUrl, Type.Null()])),
    capacity: Type.Optional(Type.Union([Capacity, Type.Null()])),
    currency: Type.Optional(CurrencyCode),
    metadata: Type.Optional(Metadata),
    holdMinutes: Type.Optional(HoldMinutes),
    waitlistOfferMinutes: Type.Optional(WaitlistOfferMinutes),
  },
  { $id: 'UpdateEventRequest', examples: [{ capacity: 350, metadata: { crmId: '4711' } }], additionalProperties: false, minProperties: 1 },
);

export const EventListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(EventStatus),
    startsAfter: Type.Optional(Timestamp),
    startsBefore: Type.Optional(Timestamp),
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Matches name and description, case-insensitive.' })),
  },
  { additionalProperties: false },
);

export const TicketTypeSchema = Type.Object(
  {
    id: Type.String({ examples: ['tt_01m80eg3tperaacsapew6ns732'] }),
    eventId: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    price: Money,
    currency: Currency,
    quantity: Type.Integer(),
    sold: Type.Integer(),
    held: Count('Places held by pending orders: taken until they complete, expire or are cancelled.'),
    available: Type.Integer({
      description: 'What a buyer without a reserving voucher can still get: quantity less sold, held, reserved by vouchers and wanted by the waiting list, within the event capacity left (docs/events.md, "Vouchers").',
    }),
    salesStartAt: NullableTimestamp,
    salesEndAt: NullableTimestamp,
    maxPerOrder: Nullable(Type.Integer()),
    hidden: Type.Boolean({ description: 'Sold only to orders with a voucher that names this type; to everyone else it is as if it did not exist.' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'TicketType' },
);

export const CreateTicketTypeBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    price: Money,
    currency: Type.Optional(CurrencyCode),
    quantity: Quantity,
    salesStartAt: Type.Optional(Timestamp),
    salesEndAt: Type.Optional(Timestamp),
    maxPerOrder: Type.Optional(MaxPerOrder),
    hidden: Type.Optional(Type.Boolean({ default: false, description: 'Sold only with a voucher that names this type.' })),
  },
  { $id: 'CreateTicketTypeRequest', examples: [{ name: 'Early bird', price: 2500, quantity: 100, maxPerOrder: 4, salesEndAt: '2027-04-01T00:00:00Z' }], additionalProperties: false },
);

export const UpdateTicketTypeBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    price: Type.Optional(Money),
    quantity: Type.Optional(Quantity),
    salesStartAt: Type.Optional(Type.Union([Timestamp, Type.Null()])),
    salesEndAt: Type.Optional(Type.Union([Timestamp, Type.Null()])),
    maxPerOrder: Type.Optional(Type.Union([MaxPerOrder, Type.Null()])),
    hidden: Type.Optional(Type.Boolean({ description: 'Sold only with a voucher that names this type.' })),
  },
  { $id: 'UpdateTicketTypeRequest', examples: [{ quantity: 150, salesEndAt: '2027-04-15T00:00:00Z' }], additionalProperties: false, minProperties: 1 },
);

export const TicketSchema = Type.Object(
  {
    id: Type.String({ examples: ['tkt_01m80eg3tperaacsapew6ns732'] }),
    eventId: Type.String(),
    ticketTypeId: Type.String(),
    orderId: Type.String(),
    status: StringEnum(['valid', 'cancelled']),
    attendee: Person,
    code: Type.String({
      maxLength: 200,
      description: 'The secret printed in the QR code: a signed code (`M1` and 178 base64url characters, docs/events.md "Signed ticket codes") for tickets issued since codes are signed, 22 base62 characters before. Changes on transfer.',
    }),
    links: Type.Object(
      {
        qrSvg: Type.String({ description: 'The QR code as SVG.', examples: ['/v1/tickets/tkt_01m80eg3tperaacsapew6ns732/qr.svg'] }),
        qrPng: Type.String({ description: 'The QR code as PNG.' }),
        pdf: Type.String({ description: 'A printable ticket (A6 PDF) with the QR code.' }),
      },
      { description: 'The ticket as QR code and PDF (same scopes as reading the ticket).' },
    ),
    price: Money,
    currency: Currency,
    refundedAmount: Money,
    checkedIn: Type.Boolean(),
    checkedInAt: NullableTimestamp,
    createdAt: Timestamp,
    cancelledAt: NullableTimestamp,
  },
  { $id: 'Ticket' },
);

export const OrderStatus = StringEnum(['pending', 'completed', 'expired', 'cancelled']);
export const OrderProvider = StringEnum(['manual', 'stripe']);
/** Who took an order's money: a provider, `external` (outside Montage), or null (a free order). */
const PaidThrough = (description: string) =>
  Type.Unsafe<'manual' | 'stripe' | 'external' | null>({ type: ['string', 'null'], enum: ['manual', 'stripe', 'external', null], description });

const OrderPayment = Type.Object(
  {
    provider: OrderProvider,
    successUrl: Type.Optional(HttpUrl),
    cancelUrl: Type.Optional(HttpUrl),
  },
  {
    additionalProperties: false,
    description:
      'Have Montage take the payment through a provider: an order with a total above zero is then `pending`, its places held for the event\'s `holdMinutes`, until the payment completes it (docs/events.md, "Orders and payments"). Without it, a paid order completes at once (its money was taken elsewhere). `successUrl` and `cancelUrl`: where a provider with a payment page sends the buyer back.',
  },
);

export const CreateOrderBody = Type.Object(
  {
    buyer: Person,
    items: Type.Array(
      Type.Object(
        {
          ticketTypeId: Type.String({ minLength: 1, maxLength: 64 }),
          quantity: Type.Integer({ format: 'int32', minimum: 1, maximum: 100 }),
          attendees: Type.Optional(
            Type.Array(Type.Object({ ...Person.properties, answers: Type.Optional(AnswersInput) }, { additionalProperties: false }), {
              maxItems: 100,
              description: "Holders, with their answers to the questions asked per attendee; tickets past the list go to the buyer (a required attendee question needs an entry per ticket).",
            }),
          ),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 20 },
    ),
    payment: Type.Optional(OrderPayment),
    answers: Type.Optional(AnswersInput),
    voucher: Type.Optional(
      Type.String({
        minLength: 4,
        maxLength: 64,
        pattern: '^[A-Za-z0-9-]+$',
        description: 'A voucher code of the event (any case): its discount applies to the items of its ticket type (all items if it names none), and it unlocks a hidden type it names (docs/events.md, "Vouchers").',
      }),
    ),
  },
  {
    $id: 'CreateOrderRequest',
    examples: [
      {
        buyer: { name: 'Ada Lovelace', email: 'ada@example.com' },
        items: [
          {
            ticketTypeId: 'tt_01m80eg3tperaacsapew6ns732',
            quantity: 2,
            attendees: [{ name: 'Charles Babbage', email: 'charles@example.com', answers: [{ questionId: 'qst_01m80eg3tperaacsapew6ns732', value: 'Vegan' }] }],
          },
        ],
        answers: [{ questionId: 'qst_01m80eg3tperaacsapew6ns733', value: 'Analytical Engines Ltd' }],
      },
      { buyer: { name: 'Ada Lovelace', email: 'ada@example.com' }, items: [{ ticketTypeId: 'tt_01m80eg3tperaacsapew6ns732', quantity: 1 }], payment: { provider: 'manual' } },
    ],
    additionalProperties: false,
  },
);

export const PaymentSchema = Type.Object(
  {
    id: Type.String({ maxLength: 64, examples: ['pmt_01m80eg3tperaacsapew6ns732'] }),
    kind: StringEnum(['charge', 'refund']),
    provider: StringEnum(['manual', 'stripe', 'external']),
    amount: Money,
    currency: Currency,
    status: StringEnum(['pending', 'succeeded', 'failed']),
    ticketId: Nullable(Type.String({ maxLength: 64 }), { description: 'The ticket a refund is for; null for a charge or an amount not tied to a ticket.' }),
    reference: Nullable(Type.String({ maxLength: 500 }), { description: "The provider's id of the money movement (null for `manual` and `external`)." }),
    createdAt: Timestamp,
  },
  { $id: 'Payment', description: 'One money movement of an order: its charge, or a refund.' },
);

export const OrderSchema = Type.Object(
  {
    id: Type.String({ examples: ['ord_01m80eg3tperaacsapew6ns732'] }),
    eventId: Type.String(),
    status: StringEnum(['pending', 'completed', 'expired', 'cancelled'], {
      description: '`pending`: waits for its payment, its places held until `expiresAt`; `completed`: paid or confirmed, its tickets issued; `expired`: the hold ran out, places returned; `cancelled`: cancelled while pending, places returned.',
    }),
    buyer: Person,
    items: Type.Array(
      Type.Object({
        ticketTypeId: Type.String(),
        quantity: Type.Integer(),
        unitPrice: { ...Money, description: 'What each ticket costs the buyer: the type\'s price less `discount`.' },
        discount: { ...Money, description: 'The voucher\'s discount on each ticket (0 without one).' },
        amount: Money,
      }),
    ),
    total: Money,
    currency: Currency,
    refundedAmount: Money,
    balanceDue: { ...Money, description: 'What the buyer owes after moving tickets to a dearer type; `POST /v1/orders/:id/confirm` records it paid.' },
    payment: Type.Object(
      {
        provider: PaidThrough('`external`: paid outside Montage (an order placed without `payment`); null for a free order.'),
        status: StringEnum(['none', 'pending', 'paid', 'partially_refunded', 'refunded']),
        checkoutUrl: Nullable(Type.String({ maxLength: 2000 }), { description: "Where the buyer pays a pending order (the provider's page); null when the provider has none." }),
      },
      { additionalProperties: false },
    ),
    payments: Type.Array(ref(PaymentSchema), { maxItems: 2000, description: 'Its charge and refunds, oldest first.' }),
    tickets: Type.Array(ref(TicketSchema), { maxItems: 2000, description: 'None while the order is pending: tickets are issued when it completes.' }),
    voucher: Nullable(Type.Object({ id: Type.String(), code: Type.String() }, { additionalProperties: false }), { description: 'The voucher the order used, as its code was then; null without one.' }),
    expiresAt: Nullable(Timestamp, { description: 'When the hold of a pending order ends; null in every other state.' }),
    completedAt: NullableTimestamp,
    createdAt: Timestamp,
  },
  { $id: 'Order' },
);

export const ConfirmOrderBody = Type.Object(
  { reference: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Your own reference of the payment (a bank transfer\'s, a receipt number).' })) },
  { $id: 'ConfirmOrderRequest', examples: [{ reference: 'Bank transfer 2027-04-02 #4711' }], additionalProperties: false },
);

export const OrderListQuery = Type.Object({ ...PageQuery, status: Type.Optional(OrderStatus) }, { additionalProperties: false });

export const TransferBody = Type.Object({ attendee: Person }, { $id: 'TransferTicketRequest', examples: [{ attendee: { name: 'Grace Hopper', email: 'grace@example.com' } }], additionalProperties: false });

export const AttendeeSchema = Type.Object(
  {
    ticketId: Type.String(),
    orderId: Type.String(),
    name: Type.String(),
    email: Email,
    ticketTypeId: Type.String(),
    ticketTypeName: Type.String(),
    checkedIn: Type.Boolean(),
    checkedInAt: NullableTimestamp,
    answers: Type.Array(ref(AnswerSchema), { maxItems: 100, description: "The attendee's answers to the questions asked per attendee, in the questions' order." }),
    orderAnswers: Type.Array(ref(AnswerSchema), { maxItems: 100, description: "The order's answers to the questions asked per order, in the questions' order." }),
  },
  { $id: 'Attendee' },
);

export const AttendeeFilters = {
  checkedIn: Type.Optional(Type.Boolean()),
  ticketTypeId: Type.Optional(Type.String({ maxLength: 64 })),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Matches name and email, case-insensitive.' })),
};

export const AttendeeListQuery = Type.Object({ ...PageQuery, ...AttendeeFilters }, { additionalProperties: false });

export const ExportQuery = Type.Object(
  {
    ...AttendeeFilters,
    format: Type.Optional(StringEnum(['csv', 'json'], { default: 'csv', description: '`json` is NDJSON: one attendee per line.' })),
  },
  { additionalProperties: false },
);

export const CheckinBody = Type.Object(
  {
    ticketId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    code: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_CODE_CHARS })),
    checkedInAt: Type.Optional(Timestamp),
    gate: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    listId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Scan through this check-in list (`cl_...`): its ticket types, window, entries and exits. Without it, the event-wide check-in.' })),
    direction: Type.Optional(StringEnum(['entry', 'exit'], { description: 'With `listId`: entry (the default) or exit.' })),
    scanId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\x21-\\x7e]+$', description: 'With `listId`: a unique id the scanner makes; the same scanId again answers as the first time, with no second effect.' }),
    ),
  },
  { $id: 'CheckInRequest', examples: [{ code: 'h0HFNKsRHaUT6fWW9eYOuL', gate: 'north' }], additionalProperties: false, description: 'Exactly one of ticketId and code.' },
);

export const CheckinSchema = Type.Object(
  {
    id: Type.String({ examples: ['chk_01m80eg3tperaacsapew6ns732'] }),
    action: StringEnum(['checkin', 'undo']),
    eventId: Type.String(),
    ticketId: Type.String(),
    checkedInAt: Timestamp,
    gate: Nullable(Type.String()),
    createdAt: Timestamp,
    ticket: ref(TicketSchema),
    attendee: Person,
    listId: Type.Optional(Nullable(Type.String(), { description: 'The check-in list scanned through; absent or null for the event-wide check-in.' })),
    direction: Type.Optional(StringEnum(['entry', 'exit'])),
    scanId: Type.Optional(Type.String({ description: "The scanner's own id of the scan (check-in lists)." })),
  },
  { $id: 'Checkin' },
);

/** What checkin.undone carries: the ticket as it is after the undo, and the list (null: the event-wide check-in) and direction undone. */
export const CheckinUndoneSchema = Type.Object(
  {
    ...TicketSchema.properties,
    listId: Nullable(Type.String(), { description: 'The check-in list of the undone entry; null for the event-wide check-in.' }),
    direction: StringEnum(['entry']),
    reason: Type.Optional(
      StringEnum(['displaced'], { description: 'Absent for an undo asked for. `displaced`: the admission was displaced by an earlier one of the same ticket, synced later, on a list that admits once; it became a conflict.' }),
    ),
    checkinId: Type.Optional(Type.String({ maxLength: 64, description: 'For a displaced admission: its check-in id (the `id` its checkin.completed carried).' })),
    displacedBy: Type.Optional(
      Type.Object(
        { scanId: Type.String({ maxLength: 64 }), scannedAt: Timestamp, deviceId: Nullable(Type.String({ maxLength: 64 })) },
        { description: 'For a displaced admission: the admission kept instead (the earliest by scannedAt).' },
      ),
    ),
  },
  { $id: 'CheckinUndone' },
);

export const CheckinHistorySchema = Type.Object(
  {
    id: Type.String(),
    action: StringEnum(['checkin', 'undo']),
    eventId: Type.String(),
    ticketId: Type.String(),
    at: Timestamp,
    gate: Nullable(Type.String()),
    keyId: Nullable(Type.String(), { description: 'The API key that scanned or undid.' }),
    createdAt: Timestamp,
  },
  { $id: 'CheckinHistoryEntry' },
);

export const CheckinListQuery = Type.Object({ ...PageQuery, ticketId: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: false });

export const AnalyticsSchema = Type.Object(
  {
    eventId: Type.String(),
    currency: Currency,
    ticketsSold: Type.Integer({ description: 'Valid tickets.' }),
    ticketsHeld: Count('Places held by pending orders.'),
    ordersPending: Type.Integer({ format: 'int64', minimum: 0, maximum: 1_000_000_000, description: 'Orders waiting for their payment.' }),
    ticketsCancelled: Type.Integer(),
    grossRevenue: Money,
    refunded: Money,
    netRevenue: Type.Integer(),
    paidOut: Money,
    checkedIn: Type.Integer(),
    checkInRate: Type.Number({ minimum: 0, maximum: 1 }),
    byTicketType: Type.Array(
      Type.Object({
        ticketTypeId: Type.String(),
        name: Type.String(),
        quantity: Type.Integer(),
        ticketsSold: Type.Integer(),
        ticketsHeld: Count(),
        ticketsCancelled: Type.Integer(),
        grossRevenue: Money,
        refunded: Money,
        checkedIn: Type.Integer(),
      }),
    ),
    checkinLists: Type.Array(
      Type.Object({ id: Type.String(), name: Type.String(), counts: ref(CheckinCounts) }),
      { description: "The event's check-in lists, oldest first, with their counts." },
    ),
  },
  { $id: 'Analytics' },
);

export const SeriesQuery = Type.Object(
  {
    interval: Type.Optional(StringEnum(['minute', 'hour', 'day'], { default: 'day' })),
    from: Type.Optional(Timestamp),
    to: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
);

const seriesSchema = (id: string, bucket: Record<string, ReturnType<typeof Type.Integer>>) =>
  Type.Object(
    {
      interval: Type.String(),
      from: Timestamp,
      to: Timestamp,
      buckets: Type.Array(Type.Object({ start: Timestamp, ...bucket })),
    },
    { $id: id },
  );

export const SalesSeriesSchema = seriesSchema('SalesSeries', {
  ticketsSold: Type.Integer({ description: 'Tickets issued in the bucket (cancelled later or not).' }),
  ticketsCancelled: Type.Integer(),
  grossRevenue: Type.Integer(),
  refunded: Type.Integer(),
});

export const CheckinSeriesSchema = seriesSchema('CheckinSeries', {
  checkIns: Type.Integer(),
  undos: Type.Integer(),
});

export const PayoutSchema = Type.Object(
  {
    id: Type.String({ examples: ['pay_01m80eg3tperaacsapew6ns732'] }),
    eventId: Type.String(),
    amount: Money,
    currency: Currency,
    createdAt: Timestamp,
  },
  { $id: 'Payout' },
);

export const EventTicketParams = Type.Object({ id: PathId(), ticketTypeId: PathId() }, { additionalProperties: false });
export const EventCheckinParams = Type.Object({ id: PathId(), ticketId: PathId() }, { additionalProperties: false });
export const EventChildParams = Type.Object({ id: PathId(), childId: PathId() }, { additionalProperties: false });
export { Email };

export const EventPage = pageSchema('EventPage', EventSchema);
export const TicketTypePage = pageSchema('TicketTypePage', TicketTypeSchema);
export const AttendeePage = pageSchema('AttendeePage', AttendeeSchema);
export const CheckinHistoryPage = pageSchema('CheckinHistoryPage', CheckinHistorySchema);
export const PayoutPage = pageSchema('PayoutPage', PayoutSchema);
export const OrderPage = pageSchema('OrderPage', OrderSchema);

/** What payment.completed and rsvp.submitted carry: the order, the amount paid (0 for an RSVP) and whom through (null for an RSVP). */
export const OrderPaymentSchema = Type.Object(
  {
    ...OrderSchema.properties,
    amount: Money,
    provider: PaidThrough('Who took the money: `external` for an order placed without `payment` (paid outside Montage); null for an RSVP.'),
  },
  { $id: 'OrderPayment' },
);

/** What payment.refunded carries: money that went back (docs/events.md, "Refunds and order changes"). */
export const RefundSchema = Type.Object(
  {
    orderId: Type.String(),
    ticketId: Nullable(Type.String(), { description: 'The ticket refunded; null for an amount of the order not tied to a ticket.' }),
    amount: Money,
    currency: Currency,
    provider: Type.Unsafe<'manual' | 'stripe' | 'external' | null>({ type: ['string', 'null'], enum: ['manual', 'stripe', 'external', null], description: 'Who gave the money back; null for the refunds of an event\'s cancellation, recorded on its tickets.' }),
    paymentId: Nullable(Type.String(), { description: 'The refund among the order\'s `payments`; null for the refunds of an event\'s cancellation.' }),
  },
  { $id: 'Refund' },
);

/** Every named schema of the event area, for the OpenAPI document's components. */
export const eventComponents = [
  EventSchema, EventPage, CreateEventBody, UpdateEventBody,
  TicketTypeSchema, TicketTypePage, CreateTicketTypeBody, UpdateTicketTypeBody,
  TicketSchema, OrderSchema, OrderPage, CreateOrderBody, ConfirmOrderBody, PaymentSchema, TransferBody, OrderPaymentSchema, RefundSchema,
  AttendeeSchema, AttendeePage, CheckinBody, CheckinSchema, CheckinUndoneSchema, CheckinHistorySchema, CheckinHistoryPage,
  AnalyticsSchema, SalesSeriesSchema, CheckinSeriesSchema, PayoutSchema, PayoutPage,
];
