import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, sign, verify } from 'node:crypto';
import { idBytes, idFromBytes } from '../ids.js';

/**
 * Signed ticket codes, format v1 (docs/events.md, "Signed ticket codes"): what a ticket's QR code
 * holds, so that a scanner with the event's public keys can check a ticket offline.
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
 *
 * This file holds the format alone (no database): door.service.ts issues and checks codes.
 */

export const CODE_PREFIX = 'M1';
export const CODE_VERSION = 1;
export const PAYLOAD_BYTES = 69;
export const SIGNATURE_BYTES = 64;
export const CODE_LENGTH = CODE_PREFIX.length + Math.ceil(((PAYLOAD_BYTES + SIGNATURE_BYTES) * 4) / 3);

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
export interface ParsedCode {
  claims: CodeClaims;
  payload: Buffer;
  signature: Buffer;
}

/** Whether `code` has the shape of a signed code (tickets issued before signing have 22 base62 characters). */
export const isSignedCode = (code: string) => code.length === CODE_LENGTH && code.startsWith(CODE_PREFIX);

export const newSerial = () => randomBytes(8).toString('base64url');

/** The payload bytes of `claims`, laid out as above. */
export function encodePayload(claims: CodeClaims): Buffer {
  const payload = Buffer.alloc(PAYLOAD_BYTES);
  payload[0] = CODE_VERSION;
  const kid = Buffer.from(claims.kid, 'hex');
  const serial = Buffer.from(claims.serial, 'base64url');
  if (kid.length !== 4 || claims.kid !== kid.toString('hex')) throw new Error(`kid must be 8 lowercase hex characters: ${claims.kid}`);
  if (serial.length !== 8) throw new Error(`serial must be 8 bytes: ${claims.serial}`);
  kid.copy(payload, 1);
  serial.copy(payload, 5);
  idBytes('ticket', claims.ticketId).copy(payload, 13);
  idBytes('event', claims.eventId).copy(payload, 29);
  idBytes('ticketType', claims.ticketTypeId).copy(payload, 45);
  payload.writeUInt32BE(claims.validFrom, 61);
  payload.writeUInt32BE(claims.validUntil, 65);
  return payload;
}

/** A code for `claims`, signed by `privateKey` (whose kid the claims name). */
export function signCode(claims: CodeClaims, privateKey: KeyObject): string {
  const payload = encodePayload(claims);
  return CODE_PREFIX + Buffer.concat([payload, sign(null, payload, privateKey)]).toString('base64url');
}

/** The parts of a code of the signed shape, or undefined when it is not one (prefix, length, version). */
export function parseCode(code: string): ParsedCode | undefined {
  if (!isSignedCode(code)) return undefined;
  const bytes = Buffer.from(code.slice(CODE_PREFIX.length), 'base64url');
  // Buffer's decoder skips characters outside the alphabet: only a clean code gives 133 bytes that encode back to it.
  if (bytes.length !== PAYLOAD_BYTES + SIGNATURE_BYTES || bytes.toString('base64url') !== code.slice(CODE_PREFIX.length)) return undefined;
  if (bytes[0] !== CODE_VERSION) return undefined;
  const payload = bytes.subarray(0, PAYLOAD_BYTES);
  return {
    payload,
    signature: bytes.subarray(PAYLOAD_BYTES),
    claims: {
      kid: payload.subarray(1, 5).toString('hex'),
      serial: payload.subarray(5, 13).toString('base64url'),
      ticketId: idFromBytes('ticket', payload.subarray(13, 29)),
      eventId: idFromBytes('event', payload.subarray(29, 45)),
      ticketTypeId: idFromBytes('ticketType', payload.subarray(45, 61)),
      validFrom: payload.readUInt32BE(61),
      validUntil: payload.readUInt32BE(65),
    },
  };
}

/** Why a verifier refuses a code, in the order it checks (see verifyCode). */
export type CodeRefusal = 'malformed' | 'unknown_key' | 'key_retired' | 'bad_signature' | 'wrong_event' | 'not_yet_valid' | 'expired' | 'revoked';

/** A public key as a verifier holds it. */
export interface VerifyingKey {
  kid: string;
  /** base64url of the raw 32 bytes. */
  publicKey: string;
  status: 'active' | 'retiring' | 'retired';
}

/**
 * The contract's verifier: prefix, length and version; the kid among the keys, not retired; the
 * signature; the event; the validity window at `nowSeconds`; the serial not revoked. The claims,
 * or the first rule the code breaks.
 */
export function verifyCode(
  code: string,
  input: { eventId: string; keys: VerifyingKey[]; nowSeconds: number; revoked: (serial: string) => boolean },
): { ok: true; claims: CodeClaims } | { ok: false; reason: CodeRefusal; claims?: CodeClaims } {
  const parsed = parseCode(code);
  if (!parsed) return { ok: false, reason: 'malformed' };
  const { claims } = parsed;
  const key = input.keys.find((k) => k.kid === claims.kid);
  if (!key) return { ok: false, reason: 'unknown_key', claims };
  if (key.status === 'retired') return { ok: false, reason: 'key_retired', claims };
  if (!verify(null, parsed.payload, publicKeyObject(key.publicKey), parsed.signature)) return { ok: false, reason: 'bad_signature', claims };
  if (claims.eventId !== input.eventId) return { ok: false, reason: 'wrong_event', claims };
  if (claims.validFrom !== 0 && input.nowSeconds < claims.validFrom) return { ok: false, reason: 'not_yet_valid', claims };
  if (claims.validUntil !== 0 && input.nowSeconds > claims.validUntil) return { ok: false, reason: 'expired', claims };
  if (input.revoked(claims.serial)) return { ok: false, reason: 'revoked', claims };
  return { ok: true, claims };
}

// An Ed25519 public key in SPKI DER is this 12-byte header and the raw 32 bytes.
const ED25519_SPKI_HEADER = Buffer.from('302a300506032b6570032100', 'hex');

/** A public key from its raw 32 bytes in base64url. */
export function publicKeyObject(raw: string): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_HEADER, Buffer.from(raw, 'base64url')]), format: 'der', type: 'spki' });
}

/** A new Ed25519 key pair: its kid (4 random bytes, hex), the raw public key (base64url) and the private key (PKCS #8 DER, base64). */
export function newKeyPair(): { kid: string; publicKey: string; privateKey: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  return {
    kid: randomBytes(4).toString('hex'),
    publicKey: spki.subarray(ED25519_SPKI_HEADER.length).toString('base64url'),
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  };
}

export const privateKeyObject = (pkcs8: string) => createPrivateKey({ key: Buffer.from(pkcs8, 'base64'), format: 'der', type: 'pkcs8' });

/** The text a revocation list's signature covers (docs/events.md, "Revocation list"). */
export const revocationText = (eventId: string, issuedAt: string, serials: string[]) => `montage-revocations-v1\n${eventId}\n${issuedAt}\n${serials.join('\n')}`;
