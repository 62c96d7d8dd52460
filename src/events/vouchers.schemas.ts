import { Type } from 'typebox';
import { PageQuery, pageSchema } from '../http/paging.js';
import { Nullable, PathId, ref, StringEnum, Timestamp } from '../schemas.js';

/** The most vouchers one bulk request creates. */
export const MAX_BULK_VOUCHERS = 1000;
export const MAX_USES = 1_000_000;

const Code = Type.String({
  minLength: 4,
  maxLength: 64,
  pattern: '^[A-Za-z0-9-]+$',
  description: 'Letters, digits and `-`, 4 to 64 characters; compared ignoring case (stored upper case), unique within the event.',
  examples: ['SPRING-24'],
});
const DiscountType = StringEnum(['none', 'percent', 'fixed'], {
  description: '`none`: no discount (the voucher unlocks or reserves); `percent`: `discountValue` percent off each ticket, rounded to the minor unit; `fixed`: `discountValue` minor units off each ticket, never below 0.',
});
const DiscountValue = Type.Integer({ format: 'int64', minimum: 0, maximum: 100_000_000_00, description: 'percent: 1 to 100; fixed: minor units off each ticket; none: 0 (or absent).' });
const MaxUses = Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_USES, description: 'Places the voucher gives in all, over every order that uses it (default 1).' });
const Comment = Type.String({ maxLength: 1000, description: 'A note for the organiser; buyers never see it.' });
const TicketTypeId = Type.String({ minLength: 1, maxLength: 64 });

/** What every voucher of a create or bulk request shares. */
const settings = {
  ticketTypeId: Type.Optional(Nullable(TicketTypeId, { description: 'The one ticket type it applies to (and unlocks, if hidden); null or absent: every type of the event (a hidden type is unlocked only by a voucher naming it).' })),
  discountType: Type.Optional(DiscountType),
  discountValue: Type.Optional(DiscountValue),
  maxUses: Type.Optional(MaxUses),
  reserve: Type.Optional(Type.Boolean({ description: 'Keeps its remaining uses as places of its ticket type (needs `ticketTypeId`) from every other buyer until `validUntil`; the places must be free when it is created.' })),
  validFrom: Type.Optional(Nullable(Timestamp, { description: 'Orders may use it from this time on; null: at once.' })),
  validUntil: Type.Optional(Nullable(Timestamp, { description: 'Orders may use it until this time (exclusive); null: until the event ends. A reserving voucher stops reserving then.' })),
  comment: Type.Optional(Nullable(Comment)),
};

export const VoucherSettings = Type.Object(settings, { additionalProperties: false });

export const VoucherSchema = Type.Object(
  {
    id: Type.String({ examples: ['vch_01m80eg3tperaacsapew6ns732'] }),
    eventId: Type.String(),
    code: Type.String({ maxLength: 64 }),
    ticketTypeId: Nullable(Type.String(), { description: 'The ticket type it applies to; null: every type (hidden ones excepted).' }),
    discountType: DiscountType,
    discountValue: Type.Integer(),
    maxUses: Type.Integer(),
    redeemed: Type.Integer({ description: 'Places taken by its pending and completed orders (an unpaid order that ends gives them back).' }),
    remaining: Type.Integer({ description: '`maxUses - redeemed`.' }),
    reserve: Type.Boolean({ description: 'Whether it keeps its remaining uses as places of its ticket type while valid.' }),
    validFrom: Nullable(Timestamp),
    validUntil: Nullable(Timestamp),
    comment: Nullable(Type.String()),
    waitlistEntryId: Nullable(Type.String(), { description: 'The waiting-list entry whose offer this voucher is; null for an organiser\'s voucher.' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Voucher' },
);

export const CreateVoucherBody = Type.Object(
  { code: Type.Optional(Code), ...settings },
  {
    $id: 'CreateVoucherRequest',
    additionalProperties: false,
    description: 'Without `code`, a random 12-character code is generated.',
    examples: [
      { code: 'SPRING-24', discountType: 'percent', discountValue: 20, maxUses: 50, validUntil: '2027-04-01T00:00:00Z' },
      { ticketTypeId: 'tt_01m80eg3tperaacsapew6ns732', reserve: true, maxUses: 10, comment: 'Press' },
    ],
  },
);

export const BulkVouchersBody = Type.Object(
  {
    count: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_BULK_VOUCHERS, description: 'How many vouchers with generated codes; or give `codes`.' })),
    codePrefix: Type.Optional(Type.String({ minLength: 1, maxLength: 40, pattern: '^[A-Za-z0-9-]+$', description: 'Generated codes begin with it (then 10 random characters).' })),
    codes: Type.Optional(Type.Array(Code, { minItems: 1, maxItems: MAX_BULK_VOUCHERS, description: 'The codes to create, each once; or give `count`.' })),
    ...settings,
  },
  {
    $id: 'BulkVouchersRequest',
    additionalProperties: false,
    description: 'Creates every voucher or none, with the same settings; either `count` (with an optional `codePrefix`) or `codes`.',
    examples: [{ count: 200, codePrefix: 'SPONSOR-', discountType: 'fixed', discountValue: 1000 }],
  },
);

export const UpdateVoucherBody = Type.Object(
  {
    discountType: Type.Optional(DiscountType),
    discountValue: Type.Optional(DiscountValue),
    maxUses: Type.Optional(MaxUses),
    reserve: Type.Optional(Type.Boolean()),
    validFrom: Type.Optional(Nullable(Timestamp)),
    validUntil: Type.Optional(Nullable(Timestamp)),
    comment: Type.Optional(Nullable(Comment)),
  },
  {
    $id: 'UpdateVoucherRequest',
    additionalProperties: false,
    minProperties: 1,
    description: '`maxUses` not below `redeemed`; the discount only while unused; more reserved places only if they are free; a waiting-list offer changes only its validity and comment.',
    examples: [{ validUntil: '2027-04-15T00:00:00Z' }],
  },
);

export const VoucherBatchSchema = Type.Object(
  { data: Type.Array(ref(VoucherSchema), { maxItems: MAX_BULK_VOUCHERS }) },
  { $id: 'VoucherBatch', description: 'The vouchers created, in the order of their codes.' },
);

export const VoucherParams = Type.Object({ id: PathId(), voucherId: PathId() }, { additionalProperties: false });
export const VoucherListQuery = Type.Object(
  {
    ...PageQuery,
    code: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the voucher of this code (any case).' })),
    ticketTypeId: Type.Optional(TicketTypeId),
  },
  { additionalProperties: false },
);
export const VoucherPage = pageSchema('VoucherPage', VoucherSchema);

export const voucherComponents = [VoucherSchema, CreateVoucherBody, BulkVouchersBody, UpdateVoucherBody, VoucherBatchSchema, VoucherPage];
