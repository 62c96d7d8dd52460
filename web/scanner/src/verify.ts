/**
 * The door's check of a signed ticket code (docs/events.md "Signed ticket codes"), without the
 * server: WebCrypto only, so the scanner page and Node (test/scanner-verify.test.ts) run the same
 * code. The code's layout is the server's own (src/events/ticket-code-format.ts, pure).
 */
import { type CodeClaims, decodeCode, fromBase64url, revocationText, SIGNATURE_BYTES } from '../../../src/events/ticket-code-format.js';

export { isSignedCode } from '../../../src/events/ticket-code-format.js';

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

/** What a signed code says (its claims). */
export type SignedTicket = CodeClaims;

/** Why a code is refused at the door without asking the server. */
export type LocalRefusal = 'invalid_code' | 'key_retired' | 'wrong_event' | 'not_yet_valid' | 'code_expired' | 'ticket_revoked';

export type Verdict = { ok: true; ticket: SignedTicket } | { ok: false; reason: LocalRefusal; ticket?: SignedTicket };

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
  return globalThis.crypto.subtle.verify(ED25519, publicKey, view(signature), new TextEncoder().encode(revocationText(revocations.eventId, revocations.issuedAt, revocations.serials)));
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
    const ticket = decoded.claims;
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
