import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { describe, test } from 'node:test';
import { signCode as serverSignCode } from '../src/events/ticket-codes.js';
import { CODE_LENGTH, decodeCode, fromBase64url, toBase64url } from '../src/events/ticket-code-format.js';
import { newId } from '../src/ids.js';
import { typeIdBytes, typeIdFromBytes } from '../src/typeid.js';
import { type CheckinList, decide, REFUSALS, refusalText } from '../web/scanner/src/rules.js';
import { type RevocationList, type SigningKey, type Verdict, Verifier, verifyRevocations } from '../web/scanner/src/verify.js';

/** A key pair as the server keeps it, and its public half as the offline data lists it. */
function keyPair(status: SigningKey['status'] = 'active') {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const kid = randomBytes(4).toString('hex');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return { kid, privateKey, listed: { kid, algorithm: 'Ed25519', publicKey: raw.toString('base64url'), status } as SigningKey };
}

interface Ticket {
  ticketId: string;
  eventId: string;
  ticketTypeId: string;
  validFrom?: number;
  validUntil?: number;
  serial?: Buffer;
}

/** A v1 code signed by node:crypto exactly as the format says, independently of the verifier. */
function signCode(key: { kid: string; privateKey: KeyObject }, t: Ticket) {
  const serial = t.serial ?? randomBytes(8);
  const payload = Buffer.alloc(69);
  payload[0] = 1;
  Buffer.from(key.kid, 'hex').copy(payload, 1);
  serial.copy(payload, 5);
  Buffer.from(typeIdBytes(t.ticketId)!).copy(payload, 13);
  Buffer.from(typeIdBytes(t.eventId)!).copy(payload, 29);
  Buffer.from(typeIdBytes(t.ticketTypeId)!).copy(payload, 45);
  payload.writeUInt32BE(t.validFrom ?? 0, 61);
  payload.writeUInt32BE(t.validUntil ?? 0, 65);
  const signature = sign(null, payload, key.privateKey);
  return { code: `M1${Buffer.concat([payload, signature]).toString('base64url')}`, serial: serial.toString('base64url') };
}

function signRevocations(key: { kid: string; privateKey: KeyObject }, eventId: string, serials: string[]): RevocationList {
  const issuedAt = new Date().toISOString();
  const sorted = [...serials].sort();
  const text = `montage-revocations-v1\n${eventId}\n${issuedAt}\n${sorted.join('\n')}`;
  return { eventId, issuedAt, serials: sorted, kid: key.kid, signature: sign(null, Buffer.from(text, 'utf8'), key.privateKey).toString('base64url') };
}

const NOW = Math.floor(Date.parse('2030-05-01T19:00:00Z') / 1000);

describe('the scanner verifies signed codes without the server', () => {
  const eventId = newId('event');
  const ticket = (extra: Partial<Ticket> = {}): Ticket => ({ ticketId: newId('ticket'), eventId, ticketTypeId: newId('ticketType'), ...extra });

  test('TypeIDs and base64url round-trip through the bytes the code carries', () => {
    for (let i = 0; i < 200; i++) {
      const id = newId(i % 2 ? 'ticket' : 'event');
      const prefix = id.slice(0, id.indexOf('_'));
      assert.equal(typeIdFromBytes(prefix, typeIdBytes(id)!), id);
      const bytes = randomBytes(i % 40);
      assert.equal(toBase64url(bytes), bytes.toString('base64url'));
      assert.deepEqual(Buffer.from(fromBase64url(bytes.toString('base64url'))!), bytes);
    }
    assert.equal(typeIdBytes('tkt_not-an-id'), null);
    assert.equal(fromBase64url('a+b/'), null);
  });

  test('a code the server signs is one the page verifies: both read and write it with one module', async () => {
    const key = keyPair();
    const t = ticket({ validFrom: NOW - 60, validUntil: NOW + 60 });
    const claims = { kid: key.kid, serial: toBase64url(randomBytes(8)), ticketId: t.ticketId, eventId, ticketTypeId: t.ticketTypeId, validFrom: NOW - 60, validUntil: NOW + 60 };
    const code = serverSignCode(claims, key.privateKey);
    assert.deepEqual(decodeCode(code)!.claims, claims);
    const verifier = await Verifier.create(eventId, [key.listed], []);
    assert.deepEqual(await verifier.verify(code, NOW), { ok: true, ticket: claims });
  });

  test('a code signed per the format verifies, and its fields read back', async () => {
    const key = keyPair();
    const t = ticket({ validFrom: NOW - 3600, validUntil: NOW + 3600 });
    const { code, serial } = signCode(key, t);
    assert.equal(code.length, CODE_LENGTH);
    assert.equal(CODE_LENGTH, 180);
    const verifier = await Verifier.create(eventId, [key.listed], []);
    const verdict = await verifier.verify(code, NOW);
    assert.deepEqual(verdict, { ok: true, ticket: { kid: key.kid, serial, ticketId: t.ticketId, eventId, ticketTypeId: t.ticketTypeId, validFrom: NOW - 3600, validUntil: NOW + 3600 } });
    assert.equal(serial.length, 11);
    // Surrounding whitespace (a typed code, a scanner's trailing newline) does not matter.
    assert.equal((await verifier.verify(` ${code}\n`, NOW)).ok, true);
  });

  test('a revoked serial is refused; the same ticket with a new serial is admitted', async () => {
    const key = keyPair();
    const t = ticket();
    const old = signCode(key, t);
    const reissued = signCode(key, t);
    const revocations = signRevocations(key, eventId, [old.serial, toBase64url(randomBytes(8))]);
    assert.equal(await verifyRevocations(revocations, [key.listed], eventId), true);
    const verifier = await Verifier.create(eventId, [key.listed], revocations.serials);
    const refused = await verifier.verify(old.code, NOW);
    assert.equal(refused.ok, false);
    assert.equal(!refused.ok && refused.reason, 'ticket_revoked');
    assert.equal(!refused.ok && refused.ticket?.ticketId, t.ticketId, 'a refusal still names the ticket');
    assert.equal((await verifier.verify(reissued.code, NOW)).ok, true);
  });

  test('every tampered byte of payload or signature is refused', async () => {
    const key = keyPair();
    const { code } = signCode(key, ticket());
    const verifier = await Verifier.create(eventId, [key.listed], []);
    const bytes = Buffer.from(code.slice(2), 'base64url');
    for (let i = 0; i < bytes.length; i++) {
      const tampered = Buffer.from(bytes);
      tampered[i]! ^= 0x01;
      const verdict = await verifier.verify(`M1${tampered.toString('base64url')}`, NOW);
      assert.equal(verdict.ok, false, `byte ${i}`);
      // The version byte makes it unreadable; a flipped key id names an unknown key; the rest fail the signature.
      const expected = i === 0 ? 'invalid_code' : i < 5 ? 'key_retired' : 'invalid_code';
      assert.equal(!verdict.ok && verdict.reason, expected, `byte ${i}`);
    }
    for (const bad of ['', 'M1', code.slice(0, -1), `M2${code.slice(2)}`, `${code.slice(0, -1)}*`, 'h0HFNKsRHaUT6fWW9eYOuL']) {
      assert.deepEqual(await verifier.verify(bad, NOW), { ok: false, reason: 'invalid_code' });
    }
    assert.equal(decodeCode('h0HFNKsRHaUT6fWW9eYOuL'), null);
  });

  test('only the canonical spelling of a code verifies: the spare bits of its last character must be zero', async () => {
    const key = keyPair();
    const { code } = signCode(key, ticket());
    const verifier = await Verifier.create(eventId, [key.listed], []);
    const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = B64.indexOf(code.at(-1)!);
    assert.equal(last & 0b1111, 0, 'the issued spelling has zero spare bits');
    let admitted = 0;
    for (let spare = 0; spare < 16; spare++) {
      const spelling = code.slice(0, -1) + B64[last | spare];
      // Every spelling decodes to the same bytes ...
      assert.deepEqual(Buffer.from(spelling.slice(2), 'base64url'), Buffer.from(code.slice(2), 'base64url'));
      // ... but only the issued one is a code.
      const verdict = await verifier.verify(spelling, NOW);
      if (spare === 0) assert.equal(verdict.ok, true);
      else assert.deepEqual(verdict, { ok: false, reason: 'invalid_code' }, `spare bits ${spare}`);
      if (spare > 0) assert.equal(decodeCode(spelling), null);
      if (verdict.ok) admitted += 1;
    }
    assert.equal(admitted, 1);
  });

  test("another event's code is refused even when signed by a key of this event", async () => {
    const key = keyPair();
    const verifier = await Verifier.create(eventId, [key.listed], []);
    const other = signCode(key, ticket({ eventId: newId('event') }));
    const verdict = await verifier.verify(other.code, NOW);
    assert.equal(!verdict.ok && verdict.reason, 'wrong_event');
  });

  test('a retired key, or one the offline data does not list, is refused; a retiring one still verifies', async () => {
    const active = keyPair('active');
    const retiring = keyPair('retiring');
    const retired = keyPair('retired');
    const stranger = keyPair('active');
    const verifier = await Verifier.create(eventId, [active.listed, retiring.listed, retired.listed], []);
    assert.equal((await verifier.verify(signCode(active, ticket()).code, NOW)).ok, true);
    assert.equal((await verifier.verify(signCode(retiring, ticket()).code, NOW)).ok, true);
    for (const key of [retired, stranger]) {
      const verdict = await verifier.verify(signCode(key, ticket()).code, NOW);
      assert.deepEqual(verdict, { ok: false, reason: 'key_retired' });
    }
    // A code whose key id is of this event but whose signature is another key's: not a valid code.
    const forged = signCode({ kid: active.kid, privateKey: stranger.privateKey }, ticket());
    assert.deepEqual(await verifier.verify(forged.code, NOW), { ok: false, reason: 'invalid_code' });
  });

  test('the validity window is checked against the clock, 0 meaning open', async () => {
    const key = keyPair();
    const verifier = await Verifier.create(eventId, [key.listed], []);
    const window = signCode(key, ticket({ validFrom: NOW, validUntil: NOW + 60 }));
    const early = await verifier.verify(window.code, NOW - 1);
    assert.equal(!early.ok && early.reason, 'not_yet_valid');
    assert.equal((await verifier.verify(window.code, NOW)).ok, true);
    assert.equal((await verifier.verify(window.code, NOW + 60)).ok, true);
    const late = await verifier.verify(window.code, NOW + 61);
    assert.equal(!late.ok && late.reason, 'code_expired');
    const open = signCode(key, ticket());
    assert.equal((await verifier.verify(open.code, 0)).ok, true);
    assert.equal((await verifier.verify(open.code, 0xffffffff)).ok, true);
  });

  test("the revocation list's signature is checked: tampered, wrong event, retired or unknown signer refused", async () => {
    const active = keyPair();
    const other = keyPair();
    const list = signRevocations(active, eventId, [toBase64url(randomBytes(8)), toBase64url(randomBytes(8))]);
    assert.equal(await verifyRevocations(list, [active.listed], eventId), true);
    assert.equal(await verifyRevocations({ ...list, serials: list.serials.slice(1) }, [active.listed], eventId), false, 'a serial dropped');
    assert.equal(await verifyRevocations({ ...list, issuedAt: new Date(0).toISOString() }, [active.listed], eventId), false, 'an older date');
    assert.equal(await verifyRevocations(list, [active.listed], newId('event')), false, 'another event');
    assert.equal(await verifyRevocations(list, [{ ...active.listed, status: 'retired' }], eventId), false, 'a retired signer');
    assert.equal(await verifyRevocations(list, [other.listed], eventId), false, 'an unknown signer');
    assert.equal(await verifyRevocations({ ...list, kid: other.kid }, [active.listed, other.listed], eventId), false, 'signed by another key');
    const empty = signRevocations(active, eventId, []);
    assert.equal(await verifyRevocations(empty, [active.listed], eventId), true, 'an empty list');
  });
});

describe("the door's own decision when the server cannot be asked", () => {
  const eventId = newId('event');
  const typeA = newId('ticketType');
  const typeB = newId('ticketType');
  const ok = (ticketTypeId = typeA): Verdict => ({ ok: true, ticket: { kid: 'abcd0123', serial: 'AAAAAAAAAAA', ticketId: newId('ticket'), eventId, ticketTypeId, validFrom: 0, validUntil: 0 } });
  const list = (extra: Partial<CheckinList> = {}): CheckinList => ({
    object: 'checkin_list',
    id: 'cl_01kb0000000000000000000001',
    eventId,
    name: 'Main door',
    ticketTypeIds: [],
    validFrom: null,
    validUntil: null,
    allowMultipleEntries: false,
    scanExits: false,
    counts: { inside: 0, entries: 0, exits: 0, admittedTickets: 0, conflicts: 0 },
    createdAt: '2030-05-01T00:00:00.000Z',
    updatedAt: '2030-05-01T00:00:00.000Z',
    ...extra,
  });
  const at = new Date('2030-05-01T19:00:00Z');
  const entry = { direction: 'entry', scannedAt: '2030-05-01T18:30:00.000Z' } as const;
  const exit = { direction: 'exit', scannedAt: '2030-05-01T18:40:00.000Z' } as const;

  test("the verifier's refusal stands; a first entry is admitted, a second refused unless the list allows it", () => {
    assert.deepEqual(decide({ ok: false, reason: 'ticket_revoked' }, list(), [], 'entry', at), { result: 'refused', reason: 'ticket_revoked' });
    assert.deepEqual(decide(ok(), list(), [], 'entry', at), { result: 'admitted' });
    assert.deepEqual(decide(ok(), list(), [entry], 'entry', at), { result: 'refused', reason: 'already_inside' });
    assert.deepEqual(decide(ok(), list({ allowMultipleEntries: true }), [entry, entry], 'entry', at), { result: 'admitted' });
    // Without a list: today's single check-in, no exits.
    assert.deepEqual(decide(ok(), null, [], 'entry', at), { result: 'admitted' });
    assert.deepEqual(decide(ok(), null, [entry], 'entry', at), { result: 'refused', reason: 'already_checked_in' });
    assert.deepEqual(decide(ok(), null, [], 'exit', at), { result: 'refused', reason: 'exits_not_scanned' });
  });

  test("the list's ticket types and hours", () => {
    assert.deepEqual(decide(ok(typeB), list({ ticketTypeIds: [typeA] }), [], 'entry', at), { result: 'refused', reason: 'wrong_list' });
    assert.deepEqual(decide(ok(typeA), list({ ticketTypeIds: [typeA] }), [], 'entry', at), { result: 'admitted' });
    assert.deepEqual(decide(ok(), list({ validFrom: '2030-05-01T19:00:01Z' }), [], 'entry', at), { result: 'refused', reason: 'not_yet_valid' });
    assert.deepEqual(decide(ok(), list({ validUntil: '2030-05-01T18:59:59Z' }), [], 'entry', at), { result: 'refused', reason: 'list_expired' });
    assert.deepEqual(decide(ok(), list({ validFrom: '2030-05-01T19:00:00Z', validUntil: '2030-05-01T19:00:00Z' }), [], 'entry', at), { result: 'admitted' });
  });

  test('exits: only on a list that scans them; in, out and in again; an exit after an exit refused', () => {
    assert.deepEqual(decide(ok(), list(), [entry], 'exit', at), { result: 'refused', reason: 'exits_not_scanned' });
    const exits = list({ scanExits: true, allowMultipleEntries: true });
    assert.deepEqual(decide(ok(), exits, [entry], 'exit', at), { result: 'admitted' });
    assert.deepEqual(decide(ok(), exits, [entry], 'entry', at), { result: 'refused', reason: 'already_inside' });
    assert.deepEqual(decide(ok(), exits, [entry, exit], 'entry', at), { result: 'admitted' });
    assert.deepEqual(decide(ok(), exits, [entry, exit], 'exit', at), { result: 'refused', reason: 'not_inside' });
    // An entry at another door is unknown here: the exit is let through and the server settles it.
    assert.deepEqual(decide(ok(), exits, [], 'exit', at), { result: 'admitted' });
    // One entry only: back in after going out is refused.
    assert.deepEqual(decide(ok(), list({ scanExits: true }), [entry, exit], 'entry', at), { result: 'refused', reason: 'already_inside' });
  });

  test("every refusal the server's sync answers has words on the page", () => {
    for (const code of ['invalid_scan', 'not_found', 'wrong_list', 'not_inside', 'already_inside', 'already_checked_in', 'ticket_cancelled', 'list_expired', 'not_yet_valid']) {
      assert.ok(Object.hasOwn(REFUSALS, code), code);
    }
    assert.equal(refusalText('invalid_scan'), 'Not a scan the server could take');
  });
});
