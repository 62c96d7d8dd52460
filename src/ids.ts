import { randomBytes, randomFillSync } from 'node:crypto';
import { TYPEID_SUFFIX, typeIdBytes, typeIdFromBytes, typeIdSuffix } from './typeid.js';

/** TypeID prefixes of every resource (docs/api.md, IDs and times). */
export const ID_PREFIXES = {
  account: 'acct',
  apiKey: 'key',
  event: 'evt',
  ticketType: 'tt',
  order: 'ord',
  ticket: 'tkt',
  signingKey: 'sk',
  checkin: 'chk',
  checkinList: 'cl',
  question: 'qst',
  webhook: 'wh',
  message: 'msg',
  delivery: 'whd',
  job: 'job',
  blendUpload: 'upl',
  payout: 'pay',
  payment: 'pmt',
  voucher: 'vch',
  waitlistEntry: 'wle',
  queuedJob: 'qjob',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;


let lastMs = 0;
let counter = 0;
// Random bytes are drawn from the CSPRNG in blocks: one call per 409 IDs instead of one per ID.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
/** The offset in `pool` of 10 fresh random bytes. */
function randomOffset(): number {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 10;
  return poolOffset - 10;
}

/**
 * A UUIDv7 as 16 bytes, written over `bytes`. Within one millisecond a 12-bit counter (rand_a)
 * keeps IDs from this process in creation order, so "newest first by id" is exact.
 */
function uuidv7(bytes: Buffer): Buffer {
  let ms = Date.now();
  const r = randomOffset();
  if (ms <= lastMs) {
    counter++;
    if (counter > 0xfff) {
      lastMs++;
      counter = ((pool[r]! << 8) | pool[r + 1]!) & 0x7ff;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    counter = ((pool[r]! << 8) | pool[r + 1]!) & 0x7ff;
  }
  // 48 bits of milliseconds, big-endian: the high 16 and the low 32 (bit operators work on 32).
  const high = Math.floor(ms / 0x1_0000_0000);
  const low = ms - high * 0x1_0000_0000;
  bytes[0] = high >>> 8;
  bytes[1] = high & 0xff;
  bytes[2] = low >>> 24;
  bytes[3] = (low >>> 16) & 0xff;
  bytes[4] = (low >>> 8) & 0xff;
  bytes[5] = low & 0xff;
  bytes[6] = 0x70 | ((counter >> 8) & 0x0f);
  bytes[7] = counter & 0xff;
  for (let i = 8; i < 16; i++) bytes[i] = pool[r + i - 6]!;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  return bytes;
}

// One buffer for every ID: an ID is encoded before the next one is made.
const scratch = Buffer.alloc(16);

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${typeIdSuffix(uuidv7(scratch))}`;
}

/** True when `id` has the shape of a `kind` ID; a wrong shape is answered 404 like an unknown ID. */
export function isId(kind: IdKind, id: string): boolean {
  const prefix = ID_PREFIXES[kind];
  return id.length === prefix.length + 27 && id.startsWith(`${prefix}_`) && TYPEID_SUFFIX.test(id.slice(prefix.length + 1));
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` base62 characters from a CSPRNG, without modulo bias. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/**
 * The 16 bytes (the UUID) behind an ID of `kind`: the inverse of `newId`'s encoding. Signed ticket
 * codes carry IDs this way (src/events/ticket-code-format.ts). Throws on an ID not of that shape.
 */
export function idBytes(kind: IdKind, id: string): Buffer {
  if (!isId(kind, id)) throw new Error(`not a ${kind} id: ${id}`);
  return Buffer.from(typeIdBytes(id)!);
}

/** The ID of `kind` whose UUID is `bytes` (16 bytes). */
export function idFromBytes(kind: IdKind, bytes: Uint8Array): string {
  return typeIdFromBytes(ID_PREFIXES[kind], bytes);
}
