import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, sign, verify } from 'node:crypto';

import { type CodeClaims, decodeCode, encodeCode, encodePayload } from './ticket-code-format.js';

// Signing and verifying signed ticket codes with Node's crypto; their layout is in
// ticket-code-format.ts, which the scanner page shares. This file holds no database: door.service.ts
// issues and checks codes.

export { CODE_LENGTH, type CodeClaims, decodeCode, encodePayload, isSignedCode, revocationText } from './ticket-code-format.js';

export const newSerial = () => randomBytes(8).toString('base64url');

/** A code for `claims`, signed by `privateKey` (whose kid the claims name). */
export function signCode(claims: CodeClaims, privateKey: KeyObject): string {
  const payload = encodePayload(claims);
  return encodeCode(payload, sign(null, payload, privateKey));
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
  const parsed = decodeCode(code);
  if (!parsed) return { ok: false, reason: 'malformed' };
  const { claims } = parsed;
  const key = input.keys.find((k) => k.kid === claims.kid);
  if (!key) return { ok: false, reason: 'unknown_key', claims };
  if (key.status === 'retired') return { ok: false, reason: 'key_retired', claims };
  if (!verify(null, parsed.payload, publicKeyObject(key.publicKey), parsed.signature)) return { ok: false, reason: 'bad_signature', claims };
  if (claims.eventId !== input.eventId) return { ok: false, reason: 'wrong_event', claims };
  const outside = windowRefusal(claims, input.nowSeconds);
  if (outside) return { ok: false, reason: outside, claims };
  if (input.revoked(claims.serial)) return { ok: false, reason: 'revoked', claims };
  return { ok: true, claims };
}

/** Whether the claims' validity window excludes `nowSeconds` (0 at either end: no bound). */
export function windowRefusal(claims: CodeClaims, nowSeconds: number): 'not_yet_valid' | 'expired' | null {
  if (claims.validFrom !== 0 && nowSeconds < claims.validFrom) return 'not_yet_valid';
  if (claims.validUntil !== 0 && nowSeconds > claims.validUntil) return 'expired';
  return null;
}

// An Ed25519 public key in SPKI DER is this 12-byte header and the raw 32 bytes.
const ED25519_SPKI_HEADER = Buffer.from('302a300506032b6570032100', 'hex');

// Key objects by their raw public key: making one parses DER and costs as much as a verification,
// and an event signs with one or two keys. Bounded, as a cache of keys read from the database.
const keyObjects = new Map<string, KeyObject>();
const KEY_OBJECT_CACHE = 10_000;

/** A public key from its raw 32 bytes in base64url. */
export function publicKeyObject(raw: string): KeyObject {
  let key = keyObjects.get(raw);
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_HEADER, Buffer.from(raw, 'base64url')]), format: 'der', type: 'spki' });
    if (keyObjects.size >= KEY_OBJECT_CACHE) keyObjects.clear();
    keyObjects.set(raw, key);
  }
  return key;
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
