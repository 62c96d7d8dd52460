import { typeIdBytes, typeIdFromBytes } from '../typeid.js';

/**
 * Signed ticket codes, format v1 (docs/events.md, "Signed ticket codes"): what a ticket's QR code
 * holds, so that a scanner with the event's public keys can check a ticket offline. The layout
 * alone, pure (no Node imports, no signing): the server (ticket-codes.ts) and the scanner page
 * (web/scanner/src/verify.ts) both read and write codes with it.
 *
 *   code    = "M1" + base64url, no padding, of payload || signature   (133 bytes, 180 characters)
 *   payload = 69 bytes, big-endian:
 *     [0]       version, 1
 *     [1..4]    key id (kid: these 4 bytes as 8 lowercase hex characters)
 *     [5..12]   serial, random, new every time a code is issued
 *     [13..28]  ticket id (the UUID behind `tkt_...`)
 *     [29..44]  event id (`evt_...`)
 *     [45..60]  ticket type id (`tt_...`)
 *     [61..64]  validFrom, unix seconds, 0: no lower bound
 *     [65..68]  validUntil, unix seconds, 0: no upper bound
 *   signature = Ed25519 by the key `kid` over the payload (64 bytes).
 */

export const CODE_PREFIX = 'M1';
export const CODE_VERSION = 1;
export const PAYLOAD_BYTES = 69;
export const SIGNATURE_BYTES = 64;
/** "M1" and the base64url of 133 bytes without padding: 180 characters. */
export const CODE_LENGTH = CODE_PREFIX.length + Math.ceil(((PAYLOAD_BYTES + SIGNATURE_BYTES) * 4) / 3);
export const REVOCATIONS_CONTEXT = 'montage-revocations-v1';
/**
 * The longest text taken as a ticket's code anywhere: the check-in's body, a synced scan, the door
 * page (a signed code has 180 characters, an older one 22). A longer text (a foreign QR code, a
 * paste) is no ticket's code and is refused before it is looked up, queued or stored.
 */
export const MAX_CODE_CHARS = 256;

/** What a signed code says. Times are unix seconds (0: no bound). */
export interface CodeClaims {
  kid: string;
  /** base64url of the 8 serial bytes (11 characters): what the revocation list holds. */
  serial: string;
  ticketId: string;
  eventId: string;
  ticketTypeId: string;
  validFrom: number;
  validUntil: number;
}

/** A code taken apart: its claims, and the bytes its signature covers. */
export interface DecodedCode {
  claims: CodeClaims;
  payload: Uint8Array;
  signature: Uint8Array;
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const B64URL_INDEX = new Int16Array(128).fill(-1);
/** The bits of a code's last character that carry no bit of its bytes (4 of 6: 133 bytes are 177 characters and 2 bits). */
const SPARE_BITS = (1 << ((6 - (((PAYLOAD_BYTES + SIGNATURE_BYTES) * 8) % 6)) % 6)) - 1;
for (let i = 0; i < B64URL.length; i++) B64URL_INDEX[B64URL.charCodeAt(i)] = i;

/** base64url without padding to bytes; null on any character outside the alphabet or a bad length. */
export function fromBase64url(text: string): Uint8Array | null {
  if (text.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((text.length * 3) / 4));
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const v = c < 128 ? B64URL_INDEX[c]! : -1;
    if (v < 0) return null;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

export function toBase64url(bytes: Uint8Array): string {
  let out = '';
  let acc = 0;
  let bits = 0;
  for (const byte of bytes) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += B64URL[(acc >> bits) & 63];
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += B64URL[(acc << (6 - bits)) & 63];
  return out;
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
function hex(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]!];
  return out;
}
const u32 = (b: Uint8Array, at: number) => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
function putU32(b: Uint8Array, at: number, value: number): void {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`not a 32-bit unix time: ${value}`);
  b[at] = value >>> 24;
  b[at + 1] = (value >>> 16) & 0xff;
  b[at + 2] = (value >>> 8) & 0xff;
  b[at + 3] = value & 0xff;
}

/** Whether `code` has the shape of a signed code (tickets issued before signing have 22 base62 characters). */
export const isSignedCode = (code: string) => code.length === CODE_LENGTH && code.startsWith(CODE_PREFIX);

/** The payload bytes of `claims`, laid out as above; throws on a claim that does not fit it. */
export function encodePayload(claims: CodeClaims): Uint8Array {
  const payload = new Uint8Array(PAYLOAD_BYTES);
  payload[0] = CODE_VERSION;
  if (!/^[0-9a-f]{8}$/.test(claims.kid)) throw new Error(`kid must be 8 lowercase hex characters: ${claims.kid}`);
  for (let i = 0; i < 4; i++) payload[1 + i] = parseInt(claims.kid.slice(2 * i, 2 * i + 2), 16);
  const serial = fromBase64url(claims.serial);
  if (!serial || serial.length !== 8) throw new Error(`serial must be 8 bytes: ${claims.serial}`);
  payload.set(serial, 5);
  const ids: Array<[string, number]> = [[claims.ticketId, 13], [claims.eventId, 29], [claims.ticketTypeId, 45]];
  for (const [id, at] of ids) {
    const bytes = typeIdBytes(id);
    if (!bytes) throw new Error(`not an id: ${id}`);
    payload.set(bytes, at);
  }
  putU32(payload, 61, claims.validFrom);
  putU32(payload, 65, claims.validUntil);
  return payload;
}

/** The code of a payload and its signature. */
export const encodeCode = (payload: Uint8Array, signature: Uint8Array) => {
  const bytes = new Uint8Array(PAYLOAD_BYTES + SIGNATURE_BYTES);
  bytes.set(payload, 0);
  bytes.set(signature, PAYLOAD_BYTES);
  return CODE_PREFIX + toBase64url(bytes);
};

/** The parts of a code of the signed shape (prefix, length, version, spelling), without checking its signature; null when it is not one. */
export function decodeCode(code: string): DecodedCode | null {
  if (!isSignedCode(code)) return null;
  const bytes = fromBase64url(code.slice(CODE_PREFIX.length));
  if (!bytes || bytes.length !== PAYLOAD_BYTES + SIGNATURE_BYTES || bytes[0] !== CODE_VERSION) return null;
  // The last character carries 2 bits of the last byte and 4 spare bits: only the spelling with
  // zero spare bits is the code, so that two doors (and the server) see one ticket as one code.
  // (The length and the alphabet are checked above, so this is the same as encoding the bytes
  // again and comparing, at a fraction of the cost: a door decodes every code it scans.)
  if ((B64URL_INDEX[code.charCodeAt(code.length - 1)]! & SPARE_BITS) !== 0) return null;
  const payload = bytes.subarray(0, PAYLOAD_BYTES);
  return {
    payload,
    signature: bytes.subarray(PAYLOAD_BYTES),
    claims: {
      kid: hex(payload.subarray(1, 5)),
      serial: toBase64url(payload.subarray(5, 13)),
      ticketId: typeIdFromBytes('tkt', payload.subarray(13, 29)),
      eventId: typeIdFromBytes('evt', payload.subarray(29, 45)),
      ticketTypeId: typeIdFromBytes('tt', payload.subarray(45, 61)),
      validFrom: u32(payload, 61),
      validUntil: u32(payload, 65),
    },
  };
}

/** The text a revocation list's signature covers (docs/events.md, "Revocation list"). */
export const revocationText = (eventId: string, issuedAt: string, serials: readonly string[]) => `${REVOCATIONS_CONTEXT}\n${eventId}\n${issuedAt}\n${serials.join('\n')}`;
