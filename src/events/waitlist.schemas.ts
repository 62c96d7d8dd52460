import { Type } from 'typebox';
import { PageQuery, pageSchema } from '../http/paging.js';
import { Email, Name, Nullable, NullableTimestamp, PathId, StringEnum, Timestamp } from '../schemas.js';

export const WaitlistStatus = StringEnum(['waiting', 'offered', 'redeemed', 'expired', 'removed'], {
  description:
    '`waiting`: in the queue; `offered`: holds an offer (a single-use voucher) until `offerExpiresAt`; `redeemed`: an order used the offer; `expired`: the offer was not taken in time and passed to the next in line; `removed`: taken off the list.',
});

export const WaitlistEntrySchema = Type.Object(
  {
    id: Type.String({ maxLength: 64, examples: ['wle_01m80eg3tperaacsapew6ns732'] }),
    eventId: Type.String({ maxLength: 64 }),
    ticketTypeId: Type.String({ maxLength: 64 }),
    name: Type.String({ maxLength: 200 }),
    email: Email,
    status: WaitlistStatus,
    position: Nullable(Type.Integer({ format: 'int32', minimum: 1, maximum: 1_000_000 }), {
      description: 'Place in the queue of its ticket type, 1 for the next to get an offer; null unless `waiting`.',
    }),
    voucher: Nullable(
      Type.Object(
        {
          id: Type.String({ maxLength: 64, examples: ['vch_01m80eg3tperaacsapew6ns732'] }),
          code: Type.String({ maxLength: 64, examples: ['K7Q2M9XW4PZR'], description: 'The code the person orders with (`voucher` of `POST /v1/events/:id/orders`).' }),
        },
        { additionalProperties: false },
      ),
      { description: 'The offer: a single-use voucher that keeps one place of the type until `offerExpiresAt`; null before an offer is made.' },
    ),
    offeredAt: NullableTimestamp,
    offerExpiresAt: Nullable(Timestamp, { description: 'Until when the offer stands (the event\'s `waitlistOfferMinutes` after `offeredAt`).' }),
    createdAt: Timestamp,
  },
  { $id: 'WaitlistEntry', description: 'A person waiting for a sold-out ticket type (docs/events.md, "Waiting list").' },
);

export const JoinWaitlistBody = Type.Object(
  {
    ticketTypeId: Type.String({ minLength: 1, maxLength: 64 }),
    name: Name,
    email: Email,
  },
  { $id: 'JoinWaitlistRequest', examples: [{ ticketTypeId: 'tt_01m80eg3tperaacsapew6ns732', name: 'Ada Lovelace', email: 'ada@example.com' }], additionalProperties: false },
);

export const WaitlistListQuery = Type.Object(
  {
    ...PageQuery,
    ticketTypeId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the entries of this ticket type.' })),
    status: Type.Optional(WaitlistStatus),
  },
  { additionalProperties: false },
);

export const WaitlistEntryParams = Type.Object({ id: PathId('Event id (`evt_...`)'), entryId: PathId('Waiting-list entry id (`wle_...`)') }, { additionalProperties: false });

export const WaitlistEntryPage = pageSchema('WaitlistEntryPage', WaitlistEntrySchema);

/** Every named schema of the waiting list, for the OpenAPI document's components. */
export const waitlistComponents = [WaitlistEntrySchema, WaitlistEntryPage, JoinWaitlistBody];
