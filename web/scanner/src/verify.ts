/**
 * The door's check of a signed ticket code (format v1, docs/events.md "Signed ticket codes"), without the server: pure,
 * WebCrypto only, so the scanner page and Node (test/scanner-verify.test.ts) run the same code.
 *
 * code = "M1" + base64url(payload || signature), payload 69 bytes big-endian:
 *   [0] version 1 · [1..4] key id · [5..12] serial · [13..28] ticket id · [29..44] event id ·
 *   [45..60] ticket type id · [61..64] validFrom · [65..68] validUntil (unix seconds, 0 = open)
 * signature: Ed25519 by the key named by the key id, over the payload (64 bytes).
 */

export const CODE_PREFIX = 'M1';
export const PAYLOAD_BYTES = 69;
export const SIGNATURE_BYTES = 64;
/** "M1" and the base64url of 133 bytes without padding. */
export const CODE_LENGTH = CODE_PREFIX.length + Math.ceil(((PAYLOAD_BYTES + SIGNATURE_BYTES) * 4) / 3);
export const REVOCATIONS_CONTEXT = 'montage-revocations-v1';

export type KeyStatus = 'active' | 'retiring' | 'retired';

export interface SigningKey {
  kid: string;
  algorithm: 'Ed25519';
  /** base64url of the raw 32-byte public key. */
  publicKey: string;
  status: KeyStatus;
}

export interface RevocationList {
  eventId: string;
  issuedAt: string;
  /** base64url serials (11 characters each), sorted. */
  serials: string[];
  kid: string;
  signature: string;
}

export interface SignedTicket {
  kid: string;
  /** base64url of the 8 serial bytes: what the revocation list names. */
  serial: string;
  ticketId: string;
  eventId: string;
  ticketTypeId: string;
  /** Unix seconds, 0 when open. */
  validFrom: number;
  validUntil: number;
}

/** Why a code is refused at the door without asking the server. */
export type LocalRefusal = 'invalid_code' | 'key_retired' | 'wrong_event' | 'not_yet_valid' | 'code_expired' | 'ticket_revoked';

export type Verdict = { ok: true; ticket: SignedTicket } | { ok: false; reason: LocalRefusal; ticket?: SignedTicket };

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const B64URL_INDEX = new Int16Array(128).fill(-1);
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

// TypeIDs (src/ids.ts): a prefix, "_", and the 128 bits of a UUID as 26 Crockford base32 characters.
const BASE32 = '0123456789abcdefghjkmnpqrstvwxyz';

export function typeIdFromBytes(prefix: string, bytes: Uint8Array): string {
  let out = '';
  let acc = 0;
  let bits = 2;
  for (let i = 0; i < 16; i++) {
    acc = (acc << 8) | bytes[i]!;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return `${prefix}_${out}`;
}

/** The 16 UUID bytes behind a TypeID, or null when `id` is not one. */
export function typeIdBytes(id: string): Uint8Array | null {
  const suffix = id.slice(id.lastIndexOf('_') + 1);
  if (suffix.length !== 26 || !/^[0-7][0-9a-hjkmnp-tv-z]{25}$/.test(suffix)) return null;
  const out = new Uint8Array(16);
  let acc = 0;
  let bits = -2;
  let o = 0;
  for (const ch of suffix) {
    acc = (acc << 5) | BASE32.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
    acc &= (1 << Math.max(bits, 0)) - 1;
  }
  return out;
}

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
const u32 = (b: Uint8Array, at: number) => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;

export interface DecodedCode {
  ticket: SignedTicket;
  payload: Uint8Array;
  signature: Uint8Array;
}

/** Reads a code's fields without checking its signature; null when it is not a v1 signed code. */
export function decodeCode(code: string): DecodedCode | null {
  if (code.length !== CODE_LENGTH || !code.startsWith(CODE_PREFIX)) return null;
  const bytes = fromBase64url(code.slice(CODE_PREFIX.length));
  if (!bytes || bytes.length !== PAYLOAD_BYTES + SIGNATURE_BYTES || bytes[0] !== 1) return null;
  // The last character carries 2 bits of the last byte and 4 spare bits: only the spelling with
  // zero spare bits is the code (the server's parser refuses the 15 others), so that two doors see
  // one ticket as one code.
  if (toBase64url(bytes) !== code.slice(CODE_PREFIX.length)) return null;
  const payload = bytes.subarray(0, PAYLOAD_BYTES);
  return {
    payload,
    signature: bytes.subarray(PAYLOAD_BYTES),
    ticket: {
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

/** Whether `code` looks like a signed code at all (typed codes may also be the older 22-character secrets). */
export const isSignedCode = (code: string) => code.startsWith(CODE_PREFIX) && code.length === CODE_LENGTH;

type Subtle = typeof globalThis.crypto.subtle;
type PublicKey = Awaited<ReturnType<Subtle['importKey']>>;
const ED25519 = { name: 'Ed25519' } as const;

// WebCrypto wants an ArrayBuffer-backed view; subarrays of a decoded code are.
const view = (bytes: Uint8Array) => bytes as Uint8Array<ArrayBuffer>;

async function importPublicKey(key: SigningKey): Promise<PublicKey | null> {
  const raw = fromBase64url(key.publicKey);
  if (key.algorithm !== 'Ed25519' || !raw || raw.length !== 32) return null;
  return globalThis.crypto.subtle.importKey('raw', view(raw), ED25519, false, ['verify']);
}

/**
 * Checks the revocation list's signature (by `revocations.kid`, a key that is not retired) over
 * "montage-revocations-v1\n" + eventId + "\n" + issuedAt + "\n" + serials joined by "\n".
 */
export async function verifyRevocations(revocations: RevocationList, keys: readonly SigningKey[], eventId: string): Promise<boolean> {
  if (revocations.eventId !== eventId) return false;
  const key = keys.find((k) => k.kid === revocations.kid && k.status !== 'retired');
  const publicKey = key && (await importPublicKey(key));
  const signature = fromBase64url(revocations.signature);
  if (!publicKey || !signature || signature.length !== SIGNATURE_BYTES) return false;
  const text = `${REVOCATIONS_CONTEXT}\n${revocations.eventId}\n${revocations.issuedAt}\n${revocations.serials.join('\n')}`;
  return globalThis.crypto.subtle.verify(ED25519, publicKey, view(signature), new TextEncoder().encode(text));
}

/** One event's keys and revocations, ready to check codes: keys are imported once. */
export class Verifier {
  private constructor(
    readonly eventId: string,
    private readonly keys: ReadonlyMap<string, PublicKey>,
    private readonly revoked: ReadonlySet<string>,
  ) {}

  /** Keys whose status is "retired" (or that cannot be read) are left out: their codes are refused. */
  static async create(eventId: string, keys: readonly SigningKey[], revokedSerials: readonly string[]): Promise<Verifier> {
    const imported = new Map<string, PublicKey>();
    for (const key of keys) {
      if (key.status === 'retired') continue;
      const publicKey = await importPublicKey(key);
      if (publicKey) imported.set(key.kid, publicKey);
    }
    return new Verifier(eventId, imported, new Set(revokedSerials));
  }

  /** The contract's order: shape, key, signature, event, validity window at `nowSeconds`, revocation. */
  async verify(code: string, nowSeconds: number): Promise<Verdict> {
    const decoded = decodeCode(code.trim());
    if (!decoded) return { ok: false, reason: 'invalid_code' };
    const { ticket } = decoded;
    const key = this.keys.get(ticket.kid);
    if (!key) return { ok: false, reason: 'key_retired' };
    if (!(await globalThis.crypto.subtle.verify(ED25519, key, view(decoded.signature), view(decoded.payload)))) return { ok: false, reason: 'invalid_code' };
    if (ticket.eventId !== this.eventId) return { ok: false, reason: 'wrong_event', ticket };
    if (ticket.validFrom !== 0 && nowSeconds < ticket.validFrom) return { ok: false, reason: 'not_yet_valid', ticket };
    if (ticket.validUntil !== 0 && nowSeconds > ticket.validUntil) return { ok: false, reason: 'code_expired', ticket };
    if (this.revoked.has(ticket.serial)) return { ok: false, reason: 'ticket_revoked', ticket };
    return { ok: true, ticket };
  }
}
