import { Type } from 'typebox';
import { pageSchema } from '../http/paging.js';
import { CheckinListSchema } from './checkin-lists.schemas.js';
import { Nullable, NullableTimestamp, PathId, StringEnum, Timestamp } from '../schemas.js';

const Kid = Type.String({ pattern: '^[0-9a-f]{8}$', maxLength: 8, description: 'Key id: 4 bytes as 8 lowercase hex characters, as in the codes it signs.', examples: ['9f2c04ab'] });
const PublicKey = Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', maxLength: 43, description: 'The raw 32-byte Ed25519 public key, base64url without padding.' });

export const SigningKeySchema = Type.Object(
  {
    object: Type.Literal('signing_key'),
    kid: Kid,
    algorithm: Type.Literal('Ed25519'),
    publicKey: PublicKey,
    status: StringEnum(['active', 'retiring', 'retired'], {
      description: '`active` signs new codes (one per event); `retiring` no longer signs, its codes still verify; `retired`: its codes are refused.',
    }),
    createdAt: Timestamp,
    retiredAt: NullableTimestamp,
  },
  { $id: 'SigningKey' },
);

export const SigningKeyPage = pageSchema('SigningKeyPage', SigningKeySchema);

export const SigningKeyParams = Type.Object({ id: PathId('Event id (`evt_...`)'), kid: PathId('Key id (8 hex characters)') }, { additionalProperties: false });

const OfflineVenue = Type.Object({
  name: Type.String(),
  address: Type.Optional(Type.String()),
  city: Type.Optional(Type.String()),
  country: Type.Optional(Type.String()),
});

export const CheckinOfflineDataSchema = Type.Object(
  {
    object: Type.Literal('checkin_offline_data'),
    eventId: Type.String(),
    generatedAt: Timestamp,
    event: Type.Object({ id: Type.String(), name: Type.String(), timezone: Type.String(), startsAt: Timestamp, endsAt: Timestamp, venue: Nullable(OfflineVenue) }),
    keys: Type.Array(Type.Object({ kid: Kid, algorithm: Type.Literal('Ed25519'), publicKey: PublicKey, status: StringEnum(['active', 'retiring']) }), {
      maxItems: 1000,
      description: 'The keys whose codes still verify (retired keys are left out: their codes are refused).',
    }),
    revocations: Type.Object(
      {
        eventId: Type.String(),
        issuedAt: Timestamp,
        serials: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_-]{11}$', maxLength: 11 }), { maxItems: 10_000_000, description: 'Serials of codes that no longer admit their ticket, base64url, sorted.' }),
        kid: Kid,
        signature: Type.String({
          maxLength: 86,
          description: 'base64url Ed25519 signature by key `kid` over the UTF-8 of "montage-revocations-v1\\n" + eventId + "\\n" + issuedAt + "\\n" + serials joined by "\\n".',
        }),
      },
      { description: 'The revocation list, signed by the active key.' },
    ),
    ticketTypes: Type.Array(Type.Object({ id: Type.String(), name: Type.String() }), { maxItems: 100_000 }),
    checkinLists: Type.Array(CheckinListSchema, {
      maxItems: 1000,
      description: "The event's check-in lists, oldest first, with their counts as of generatedAt. The ETag covers each list's settings, not its counts: a 304 may carry older counts (a door's own count follows its sync answers).",
    }),
  },
  { $id: 'CheckinOfflineData', description: 'What a door scanner needs to check this event\'s signed ticket codes offline.' },
);

export const doorComponents = [SigningKeySchema, SigningKeyPage, CheckinOfflineDataSchema];
