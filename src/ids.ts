import { randomBytes, randomFillSync } from 'node:crypto';

/** TypeID prefixes of every resource (API.md section 2). */
export const ID_PREFIXES = {
  account: 'acct',
  apiKey: 'key',
  event: 'evt',
  ticketType: 'tt',
  order: 'ord',
  ticket: 'tkt',
  checkin: 'chk',
  webhook: 'wh',
  message: 'msg',
  delivery: 'whd',
  job: 'job',
  payout: 'pay',
  queuedJob: 'qjob',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

// TypeID's alphabet: Crockford base32, lower case.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const SUFFIX = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

let lastMs = 0;
let counter = 0;
// Random bytes are drawn from the CSPRNG in blocks: one call per 409 IDs instead of one per ID.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function randomSlice(): Buffer {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 10;
  return pool.subarray(poolOffset - 10, poolOffset);
}

/**
 * A UUIDv7 as 16 bytes. Within one millisecond a 12-bit counter (rand_a) keeps
 * IDs from this process in creation order, so "newest first by id" is exact.
 */
function uuidv7(): Buffer {
  const bytes = Buffer.alloc(16);
  let ms = Date.now();
  const random = randomSlice();
  if (ms <= lastMs) {
    counter++;
    if (counter > 0xfff) {
      lastMs++;
      counter = random.readUInt16BE(0) & 0x7ff;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    counter = random.readUInt16BE(0) & 0x7ff;
  }
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | ((counter >> 8) & 0x0f);
  bytes[7] = counter & 0xff;
  random.copy(bytes, 8, 2, 10);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  return bytes;
}

/** Encodes 128 bits as 26 base32 characters: two zero bits in front, so the first holds 3 bits. */
function encodeBase32(bytes: Buffer): string {
  let out = '';
  for (let i = 0; i < 26; i++) {
    const bit = i * 5 - 2;
    let value = 0;
    for (let b = bit; b < bit + 5; b++) {
      value = (value << 1) | (b < 0 ? 0 : (bytes[b >> 3]! >> (7 - (b & 7))) & 1);
    }
    out += ALPHABET[value];
  }
  return out;
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${encodeBase32(uuidv7())}`;
}

/** True when `id` has the shape of a `kind` ID; a wrong shape is answered 404 like an unknown ID. */
export function isId(kind: IdKind, id: string): boolean {
  const prefix = ID_PREFIXES[kind];
  return id.length === prefix.length + 27 && id.startsWith(`${prefix}_`) && SUFFIX.test(id.slice(prefix.length + 1));
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
