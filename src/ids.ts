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
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

// TypeID's alphabet: Crockford base32, lower case.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const SUFFIX = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

let lastMs = 0;
let counter = 0;
const random = Buffer.alloc(10);

/**
 * A UUIDv7 as 16 bytes. Within one millisecond a 12-bit counter (rand_a) keeps
 * IDs from this process in creation order, so "newest first by id" is exact.
 */
function uuidv7(): Buffer {
  const bytes = Buffer.alloc(16);
  let ms = Date.now();
  randomFillSync(random);
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

/** Encodes 128 bits as 26 base32 characters (the first holds 3 bits). */
function encodeBase32(bytes: Buffer): string {
  let value = bytes.readBigUInt64BE(0) << 64n | bytes.readBigUInt64BE(8);
  const out = new Array<string>(26);
  for (let i = 25; i >= 0; i--) {
    out[i] = ALPHABET[Number(value & 31n)]!;
    value >>= 5n;
  }
  return out.join('');
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
