import { createHash, type KeyObject, sign } from 'node:crypto';
import type { TenantScope } from '../db/tenant.js';
import { AppError, notFound } from '../errors.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { listSettingsOfEvent, NO_COUNTS, withCounts } from './checkin-lists.repository.js';
import { type PresentedList, presentList } from './checkin-lists.service.js';
import * as repo from './door.repository.js';
import { lockEvent, requireEvent, requireLockedEvent } from './events.repository.js';
import { type CodeRefusal, decodeCode, newKeyPair, newSerial, privateKeyObject, revocationText, signCode, type VerifyingKey, verifyCode, windowRefusal } from './ticket-codes.js';

/**
 * The door's keys and codes (docs/events.md, "At the door"): each event's Ed25519 signing keys,
 * the signed codes of its tickets, the revocation list, and the data a scanner downloads to check
 * tickets offline. Every change of an event's keys or codes holds the event's lock.
 */

export type KeyStatus = 'active' | 'retiring' | 'retired';

export function presentSigningKey(row: repo.PublicKeyRow) {
  return {
    object: 'signing_key' as const,
    kid: row.kid,
    algorithm: 'Ed25519' as const,
    publicKey: row.publicKey,
    status: row.status as KeyStatus,
    createdAt: iso(row.createdAt)!,
    retiredAt: iso(row.retiredAt),
  };
}

// Private keys as key objects, by event and kid: a key's private half never changes, so the cache
// needs no invalidation, only a bound.
const privateKeys = new Map<string, KeyObject>();
const PRIVATE_KEY_CACHE = 1000;

function privateKeyOf(row: repo.SigningKeyRow): KeyObject {
  const name = `${row.eventId}/${row.kid}`;
  let key = privateKeys.get(name);
  if (!key) {
    if (privateKeys.size >= PRIVATE_KEY_CACHE) privateKeys.clear();
    key = privateKeyObject(row.privateKey);
    privateKeys.set(name, key);
  }
  return key;
}

/** What signs an event's new codes: its active key. */
export interface Signer {
  kid: string;
  key: KeyObject;
}

/**
 * A code's window (docs/events.md, "Validity window"): from an hour before it was issued (a
 * scanner's clock may be behind; no code admits before it existed), with no end. The event's end
 * moves (`PATCH /events/:id`), a code printed or mailed does not: an end signed into it would void
 * the tickets of a postponed event, or take reissuing every code in circulation. Entry ends where
 * the check-in lists' windows end. Not from the event's start either: tickets are checked in early
 * (a venue's own early entry, a test before the doors open), which the lists' windows govern.
 */
export const CODE_VALID_BEFORE_ISSUE_S = 3600;

/** A new active key of the event, written in the transaction (which holds the event's lock). */
async function createActiveKey(tx: TenantScope, eventId: string, now: number): Promise<repo.SigningKeyRow> {
  const pair = newKeyPair();
  const row: repo.SigningKeyRow = { id: newId('signingKey'), accountId: tx.accountId, eventId, ...pair, status: 'active', createdAt: now, retiredAt: null };
  await repo.insertSigningKey(tx, row);
  return row;
}

/** The event's signer, its first key made now if it has none (events made before signed codes). Needs the event's lock. */
export async function eventSigner(tx: TenantScope, eventId: string): Promise<Signer> {
  const found = await repo.signerOf(tx, eventId);
  if (!found) throw notFound('event', eventId);
  const row = found.key ?? (await createActiveKey(tx, eventId, Date.now()));
  return { kid: row.kid, key: privateKeyOf(row) };
}

/** The first key of a new event, in the transaction that creates it. */
export async function firstSigningKey(tx: TenantScope, eventId: string, now: number): Promise<void> {
  await createActiveKey(tx, eventId, now);
}

/** A new signed code (new serial) for a ticket, valid from an hour before now, without an end. */
export function issueCode(signer: Signer, ticket: { id: string; eventId: string; ticketTypeId: string }, now = Date.now()): string {
  const validFrom = Math.floor(now / 1000) - CODE_VALID_BEFORE_ISSUE_S;
  const claims = { kid: signer.kid, serial: newSerial(), ticketId: ticket.id, eventId: ticket.eventId, ticketTypeId: ticket.ticketTypeId, validFrom, validUntil: 0 };
  return signCode(claims, signer.key);
}

export type RevocationReason = 'cancelled' | 'transferred' | 'reissued';

/** Puts the codes on the event's revocation list (a code from before signing has no serial and needs none). */
export async function revokeCodes(tx: TenantScope, tickets: Array<{ id: string; eventId: string; code: string }>, reason: RevocationReason, now: number): Promise<void> {
  const rows: repo.RevocationRow[] = [];
  for (const ticket of tickets) {
    const parsed = decodeCode(ticket.code);
    if (parsed) rows.push({ accountId: tx.accountId, eventId: ticket.eventId, serial: parsed.claims.serial, ticketId: ticket.id, kid: parsed.claims.kid, reason, createdAt: now });
  }
  if (rows.length > 0) await repo.insertRevocations(tx, rows);
}

export async function listSigningKeys(scope: TenantScope, eventId: string, query: PageParams): Promise<Page<ReturnType<typeof presentSigningKey>>> {
  const page = pageRequest(query, listTag('signingKeys', { eventId }));
  await requireEvent(scope, eventId);
  const rows = await repo.pageSigningKeys(scope, eventId, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentSigningKey);
}

/** A new active key; the former active one becomes `retiring` (its codes still verify). */
export async function rotateSigningKey(scope: TenantScope, eventId: string) {
  return scope.transaction(async (tx) => {
    await requireLockedEvent(tx, eventId);
    const now = Date.now();
    const active = await repo.activeSigningKey(tx, eventId);
    if (active) await repo.setKeyStatus(tx, eventId, active.kid, 'retiring', now);
    return presentSigningKey(await createActiveKey(tx, eventId, now));
  });
}

const REISSUE_BATCH = 500;

/**
 * Retires a key: its codes stop verifying, and every valid ticket whose code it signed gets a new
 * code (new serial) from the active key, the old serial going on the revocation list, all in one
 * transaction. The active key cannot be retired (rotate first).
 */
export async function retireSigningKey(scope: TenantScope, eventId: string, kid: string) {
  return scope.transaction(async (tx) => {
    await requireLockedEvent(tx, eventId);
    const key = await repo.findSigningKey(tx, eventId, kid);
    if (!key) throw new AppError('not_found', `No signing key ${kid} for event ${eventId}.`);
    if (key.status === 'retired') return presentSigningKey(key);
    if (key.status === 'active') {
      throw new AppError('signing_key_active', `Key ${kid} is the active key of event ${eventId}; rotate first, then retire it.`, { kid });
    }
    const now = Date.now();
    const retired = await repo.setKeyStatus(tx, eventId, kid, 'retired', now);
    const signer = await eventSigner(tx, eventId);
    let after = '';
    for (;;) {
      const batch = await repo.signedTicketsOfEvent(tx, eventId, after, REISSUE_BATCH);
      if (batch.length === 0) break;
      after = batch[batch.length - 1]!.id;
      const signedByKey = batch.filter((ticket) => decodeCode(ticket.code)?.claims.kid === kid);
      await revokeCodes(tx, signedByKey, 'reissued', now);
      await repo.replaceCodes(tx, signedByKey.map((ticket) => ({ id: ticket.id, code: issueCode(signer, ticket) })), now);
    }
    return presentSigningKey(retired);
  });
}

// Public keys as key objects, by account, event and kid: a kid's public key never changes, so
// check-in verifies a signature without a query once the key was read (its status is asked only
// when a code is refused, below).
const publicKeys = new Map<string, VerifyingKey>();
const PUBLIC_KEY_CACHE = 10_000;

async function verifyingKey(scope: TenantScope, eventId: string, kid: string): Promise<VerifyingKey | undefined> {
  const name = `${scope.accountId}/${eventId}/${kid}`;
  let key = publicKeys.get(name);
  if (!key) {
    const row = await repo.findSigningKey(scope, eventId, kid);
    if (!row) return undefined;
    if (publicKeys.size >= PUBLIC_KEY_CACHE) publicKeys.clear();
    // As a key that verifies: whether it is retired now is asked when its code is refused.
    key = { kid: row.kid, publicKey: row.publicKey, status: 'active' };
    publicKeys.set(name, key);
  }
  return key;
}

/** The code verified against the event's key that its claims name (checkInByCode, checkScanCodes). */
async function verified(scope: TenantScope, eventId: string, code: string, kid: string, nowSeconds: number) {
  const key = await verifyingKey(scope, eventId, kid);
  return verifyCode(code, { eventId, keys: key ? [key] : [], nowSeconds, revoked: () => false });
}

/**
 * Check-in of a signed code (`M1...`; other codes are looked up as before), around `admit`, the
 * check-in itself, which looks the code up among the event's tickets. A code that is a ticket's
 * code now was issued by this server, so its claims are the server's own and its signature needs
 * no check: the lookup is the proof, as for any code. The signature is checked only where it
 * decides an answer: a code outside its validity window is refused (409 code_not_yet_valid or
 * code_expired) only if it verifies, and a code no ticket has now is explained only if it
 * verifies: its key retired (409 key_retired) or its serial revoked by a transfer or a reissue
 * (409 ticket_revoked). Anything else (forged, another event's, unknown) is answered like an
 * unknown code (404). A cancelled ticket keeps its code and is refused as ticket_cancelled, the
 * more precise answer. An admitted scan costs no query and no signature check beyond `admit`.
 */
export async function checkInByCode<T>(scope: TenantScope, eventId: string, code: string | undefined, admit: () => Promise<T>): Promise<T> {
  const parsed = code === undefined ? undefined : decodeCode(code);
  if (!parsed) return admit();
  const { claims } = parsed;
  const nowSeconds = Math.floor(Date.now() / 1000);
  if (windowRefusal(claims, nowSeconds)) {
    const result = await verified(scope, eventId, code!, claims.kid, nowSeconds);
    if (!result.ok && result.reason === 'not_yet_valid') {
      throw new AppError('code_not_yet_valid', `This code is valid from ${iso(claims.validFrom * 1000)}.`, { validFrom: iso(claims.validFrom * 1000) });
    }
    if (!result.ok && result.reason === 'expired') throw new AppError('code_expired', `This code was valid until ${iso(claims.validUntil * 1000)}.`, { validUntil: iso(claims.validUntil * 1000) });
    throw new AppError('not_found', `No ticket with that code for event ${eventId}.`);
  }
  try {
    return await admit();
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'not_found') throw err;
    if (!(await verified(scope, eventId, code!, claims.kid, nowSeconds)).ok) throw err;
    const found = await repo.keyForCode(scope, eventId, claims.kid, claims.serial);
    if (found?.status === 'retired') {
      throw new AppError('key_retired', `The key ${claims.kid} that signed this code is retired; the ticket has a new code.`, { kid: claims.kid });
    }
    if (found?.revokedFor) {
      throw new AppError('ticket_revoked', `This code of ticket ${claims.ticketId} was replaced (${found.revokedFor}); only its new code admits it.`, { ticketId: claims.ticketId });
    }
    throw err;
  }
}

/** Why a scan's signed code is refused before its ticket is looked up (the list-less check-in's answers). */
export type CodeScanRefusal = 'not_found' | 'code_not_yet_valid' | 'code_expired';

/**
 * The check-in lists' side of checkInByCode, for a batch of scans (an online scan through a list,
 * or a synced queue): each signed code's window is checked against the scan's own time (`at`: a
 * door that was offline scanned then, not now). A code that `issued` says is a ticket's code now
 * needs no signature check (see checkInByCode); any other signed code is verified: a forged code,
 * one of another event or of an unknown key is `not_found`; a code outside its window
 * `code_not_yet_valid` or `code_expired`; a code that verifies, or a code of another shape (looked
 * up among the tickets as before), null. Keys come from the same cache as checkInByCode's.
 */
export async function checkScanCodes(
  scope: TenantScope,
  eventId: string,
  scans: Array<{ code: string | undefined; at: number }>,
  issued: (code: string) => boolean,
): Promise<Array<CodeScanRefusal | null>> {
  const refusals: Array<CodeScanRefusal | null> = [];
  for (const { code, at } of scans) {
    const parsed = code === undefined ? undefined : decodeCode(code);
    if (!parsed) {
      refusals.push(null);
      continue;
    }
    const nowSeconds = Math.floor(at / 1000);
    let reason: CodeRefusal | null;
    if (issued(code!)) reason = windowRefusal(parsed.claims, nowSeconds);
    else {
      const result = await verified(scope, eventId, code!, parsed.claims.kid, nowSeconds);
      reason = result.ok ? null : result.reason;
    }
    refusals.push(reason === null ? null : reason === 'not_yet_valid' ? 'code_not_yet_valid' : reason === 'expired' ? 'code_expired' : 'not_found');
  }
  return refusals;
}

/**
 * Why signed codes that verified are no ticket's code now, in two queries for the batch: the key
 * that signed the code is retired (`key_retired`), or its serial was revoked by a transfer or a
 * reissue (`ticket_revoked`). A code with neither is left out (an unknown code: not_found).
 */
export async function whyCodesUnknown(scope: TenantScope, eventId: string, codes: string[]): Promise<Map<string, 'key_retired' | 'ticket_revoked'>> {
  const claims = codes.flatMap((code) => {
    const parsed = decodeCode(code);
    return parsed ? [{ code, ...parsed.claims }] : [];
  });
  const why = new Map<string, 'key_retired' | 'ticket_revoked'>();
  if (claims.length === 0) return why;
  const [statuses, revoked] = await Promise.all([
    repo.keyStatuses(scope, eventId, [...new Set(claims.map((c) => c.kid))]),
    repo.revocationsOf(scope, eventId, [...new Set(claims.map((c) => c.serial))]),
  ]);
  const retired = new Set(statuses.filter((k) => k.status === 'retired').map((k) => k.kid));
  const revokedSerials = new Set(revoked.map((r) => r.serial));
  for (const c of claims) {
    if (retired.has(c.kid)) why.set(c.code, 'key_retired');
    else if (revokedSerials.has(c.serial)) why.set(c.code, 'ticket_revoked');
  }
  return why;
}

/**
 * What a scanner downloads to check this event's tickets offline: the event, its keys that still
 * verify, the signed revocation list, its ticket types, its check-in lists. `etag` is computed
 * first, from what the answer holds but the revocation list, which it stands for by its version
 * (repo.revocationsVersion: a count and a time, not the serials), and without the lists' counts:
 * the same tag means the same keys, revocations, names and list settings. So a scanner's refresh
 * that gets a 304 costs a few small reads; `body()` reads the serials, counts and signs.
 */
export async function offlineData(scope: TenantScope, eventId: string): Promise<{ etag: string; body(): Promise<OfflineData> }> {
  const [event, keys, ticketTypes, lists, revocations] = await Promise.all([
    requireEvent(scope, eventId),
    repo.verifyingKeys(scope, eventId),
    repo.ticketTypeNames(scope, eventId),
    listSettingsOfEvent(scope, eventId),
    repo.revocationsVersion(scope, eventId),
  ]);
  const active = keys.find((k) => k.status === 'active');
  if (!active) {
    // An event made before signed codes, that never issued a ticket since: its first key, now.
    await scope.transaction(async (tx) => {
      await lockEvent(tx, eventId);
      await eventSigner(tx, eventId);
    });
    return offlineData(scope, eventId);
  }
  const presentedEvent = {
    id: event.id,
    name: event.name,
    timezone: event.timezone,
    startsAt: iso(event.startsAt)!,
    endsAt: iso(event.endsAt)!,
    venue: event.venue === null ? null : (JSON.parse(event.venue) as { name: string; address?: string; city?: string; country?: string }),
  };
  const presentedKeys = keys.map((k) => ({ kid: k.kid, algorithm: 'Ed25519' as const, publicKey: k.publicKey, status: k.status as 'active' | 'retiring' }));
  // A list's settings are in the tag, its counts are not: a busy door's scans change counts every
  // second, and the scanners' minute refresh must not download the whole revocation list again for
  // them. Counts reach a door through its sync answers.
  const listSettings = lists.map((list) => {
    const { counts: _counts, updatedAt: _updatedAt, ...settings } = presentList({ ...list, ...NO_COUNTS });
    return settings;
  });
  const etag = `"${createHash('sha256').update(JSON.stringify([presentedEvent, presentedKeys, revocations, ticketTypes, listSettings])).digest('base64url').slice(0, 27)}"`;
  const signer = active;
  return {
    etag,
    /** The answer, read, made and signed now (not needed for a 304). */
    async body() {
      const [serials, counted] = await Promise.all([repo.revokedSerials(scope, eventId), withCounts(scope, lists)]);
      // Sorted by code unit (base64url is ASCII), so the list signs the same every time.
      serials.sort();
      const issuedAt = iso(Date.now())!;
      const signature = sign(null, Buffer.from(revocationText(eventId, issuedAt, serials), 'utf8'), privateKeyOf(signer)).toString('base64url');
      return {
        object: 'checkin_offline_data' as const,
        eventId,
        generatedAt: issuedAt,
        event: presentedEvent,
        keys: presentedKeys,
        revocations: { eventId, issuedAt, serials, kid: signer.kid, signature },
        ticketTypes,
        checkinLists: counted.map(presentList),
      };
    },
  };
}

export interface OfflineData {
  object: 'checkin_offline_data';
  eventId: string;
  generatedAt: string;
  event: { id: string; name: string; timezone: string; startsAt: string; endsAt: string; venue: { name: string; address?: string; city?: string; country?: string } | null };
  keys: Array<{ kid: string; algorithm: 'Ed25519'; publicKey: string; status: 'active' | 'retiring' }>;
  revocations: { eventId: string; issuedAt: string; serials: string[]; kid: string; signature: string };
  ticketTypes: Array<{ id: string; name: string }>;
  checkinLists: PresentedList[];
}
