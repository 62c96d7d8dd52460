/**
 * At the door (docs/events.md, "At the door"): signed ticket codes (the byte layout of format v1,
 * signing and verifying), each event's signing keys (rotation keeps old codes valid, retiring
 * reissues), the revocation list (cancel and transfer put serials on it, its signature verifies),
 * the offline data a scanner downloads, and tickets as QR and PDF (the QR in the PDF decodes to a
 * code that verifies with the event's public key). Real HTTP over loopback, on every engine.
 */
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { describe, test } from 'node:test';
import jsQRModule from 'jsqr';
import { PDFDict, PDFDocument, PDFName, PDFNumber, PDFRawStream } from 'pdf-lib';
import sharp from 'sharp';
import { idBytes, idFromBytes, newId } from '../src/ids.js';
import { CODE_LENGTH, decodeCode, encodePayload, newKeyPair, privateKeyObject, publicKeyObject, revocationText, signCode, verifyCode } from '../src/events/ticket-codes.js';
import { Verifier } from '../web/scanner/src/verify.js';
import { AccountClient as Client, ENGINES, problem, sharedServer } from './helpers.js';

type Json = any;

// jsqr is CommonJS whose types declare an ES default export: the function is that default.
const jsQR = jsQRModule.default;

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

// ---------------------------------------------------------------------------------------------
// The code format, without a server
// ---------------------------------------------------------------------------------------------

describe('signed ticket code, format v1', () => {
  const ticketId = 'tkt_01m80eg3tperaacsapew6ns732';
  const eventId = 'evt_01m80eg3tperaacsapew6ns733';
  const ticketTypeId = 'tt_01m80eg3tperaacsapew6ns734';

  test('IDs go to their 16 UUID bytes and back', () => {
    for (const kind of ['ticket', 'event', 'ticketType'] as const) {
      for (let i = 0; i < 50; i++) {
        const id = newId(kind);
        const bytes = idBytes(kind, id);
        assert.equal(bytes.length, 16);
        assert.equal(bytes[6]! >> 4, 7, 'a UUIDv7');
        assert.equal(idFromBytes(kind, bytes), id);
      }
    }
    assert.equal(idBytes('ticket', 'tkt_00000000000000000000000001').toString('hex'), '00000000000000000000000000000001');
    assert.equal(idBytes('ticket', 'tkt_7zzzzzzzzzzzzzzzzzzzzzzzzz').toString('hex'), 'ff'.repeat(16));
    assert.throws(() => idBytes('ticket', eventId));
  });

  test('the payload is the contract\'s 69 bytes, big-endian, and the code 180 characters', () => {
    const claims = { kid: '0a1b2c3d', serial: Buffer.from('0102030405060708', 'hex').toString('base64url'), ticketId, eventId, ticketTypeId, validFrom: 0x01020304, validUntil: 0xfffffffe };
    const payload = Buffer.from(encodePayload(claims));
    assert.equal(payload.length, 69);
    assert.equal(payload[0], 1, '[0] version');
    assert.equal(payload.subarray(1, 5).toString('hex'), '0a1b2c3d', '[1..4] kid');
    assert.equal(payload.subarray(5, 13).toString('hex'), '0102030405060708', '[5..12] serial');
    assert.deepEqual(payload.subarray(13, 29), idBytes('ticket', ticketId), '[13..28] ticket id');
    assert.deepEqual(payload.subarray(29, 45), idBytes('event', eventId), '[29..44] event id');
    assert.deepEqual(payload.subarray(45, 61), idBytes('ticketType', ticketTypeId), '[45..60] ticket type id');
    assert.equal(payload.subarray(61, 65).toString('hex'), '01020304', '[61..64] validFrom, big-endian');
    assert.equal(payload.subarray(65, 69).toString('hex'), 'fffffffe', '[65..68] validUntil, big-endian');

    const pair = newKeyPair();
    assert.match(pair.kid, /^[0-9a-f]{8}$/);
    const code = signCode({ ...claims, kid: pair.kid }, privateKeyObject(pair.privateKey));
    assert.equal(code.length, 180);
    assert.equal(CODE_LENGTH, 180);
    assert.match(code, /^M1[A-Za-z0-9_-]{178}$/);
    const bytes = Buffer.from(code.slice(2), 'base64url');
    assert.equal(bytes.length, 133);
    assert.deepEqual(bytes.subarray(0, 69), Buffer.from(encodePayload({ ...claims, kid: pair.kid })));
    // The signature is plain Ed25519 over the payload: any verifier can check it.
    assert.ok(verify(null, bytes.subarray(0, 69), publicKeyObject(pair.publicKey), bytes.subarray(69)));
    assert.deepEqual(decodeCode(code)!.claims, { ...claims, kid: pair.kid });
  });

  test('the parser takes only the canonical spelling: the spare bits of the last character must be zero', () => {
    const pair = newKeyPair();
    const serial = Buffer.alloc(8, 9).toString('base64url');
    const code = signCode({ kid: pair.kid, serial, ticketId, eventId, ticketTypeId, validFrom: 0, validUntil: 0 }, privateKeyObject(pair.privateKey));
    const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = B64.indexOf(code.at(-1)!);
    assert.equal(last & 0b1111, 0);
    for (let spare = 1; spare < 16; spare++) {
      const spelling = code.slice(0, -1) + B64[last | spare];
      assert.deepEqual(Buffer.from(spelling.slice(2), 'base64url'), Buffer.from(code.slice(2), 'base64url'), 'the same bytes');
      assert.equal(decodeCode(spelling), null, `spare bits ${spare}`);
    }
    assert.ok(decodeCode(code));
  });

  test('the verifier checks key, signature, event, window and revocation, in that order', () => {
    const pair = newKeyPair();
    const other = newKeyPair();
    const key = { kid: pair.kid, publicKey: pair.publicKey, status: 'active' as const };
    const serial = Buffer.alloc(8, 7).toString('base64url');
    const code = signCode({ kid: pair.kid, serial, ticketId, eventId, ticketTypeId, validFrom: 1000, validUntil: 2000 }, privateKeyObject(pair.privateKey));
    const check = (c: string, over: Partial<Parameters<typeof verifyCode>[1]> = {}) =>
      verifyCode(c, { eventId, keys: [key], nowSeconds: 1500, revoked: () => false, ...over });
    assert.equal(check(code).ok, true);
    const reason = (result: ReturnType<typeof verifyCode>) => (result.ok ? 'ok' : result.reason);
    assert.equal(reason(check('M1short')), 'malformed');
    assert.equal(reason(check(`X1${code.slice(2)}`)), 'malformed');
    assert.equal(reason(check(code, { keys: [] })), 'unknown_key');
    assert.equal(reason(check(code, { keys: [{ ...key, status: 'retired' }] })), 'key_retired');
    assert.equal(reason(check(code, { keys: [{ ...key, status: 'retiring' }] })), 'ok');
    assert.equal(reason(check(code, { keys: [{ ...key, publicKey: other.publicKey }] })), 'bad_signature');
    assert.equal(reason(check(code, { eventId: 'evt_01m80eg3tperaacsapew6ns799' })), 'wrong_event');
    assert.equal(reason(check(code, { nowSeconds: 999 })), 'not_yet_valid');
    assert.equal(reason(check(code, { nowSeconds: 2001 })), 'expired');
    assert.equal(reason(check(code, { revoked: (s) => s === serial })), 'revoked');
    // Every byte of payload and signature counts.
    const bytes = Buffer.from(code.slice(2), 'base64url');
    for (const at of [5, 13, 30, 50, 62, 68, 69, 100, 132]) {
      const tampered = Buffer.from(bytes);
      tampered[at]! ^= 0x01;
      assert.notEqual(reason(check(`M1${tampered.toString('base64url')}`)), 'ok', `byte ${at} flipped`);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Over HTTP
// ---------------------------------------------------------------------------------------------

/** Every body this test file was answered, to search for private keys at the end. */
const answered: string[] = [];

let sequence = 0;

async function publishedEvent(c: Client, types = [{ name: 'General', price: 2500, quantity: 100 }]) {
  const startsAt = Date.UTC(2031, 5, 12, 17, 0);
  const draft = await c.expect(201, 'POST', '/events', {
    name: `Door night ${++sequence}`,
    startsAt: iso(startsAt),
    endsAt: iso(startsAt + 3 * HOUR),
    timezone: 'Europe/Berlin',
    currency: 'EUR',
    venue: { name: 'Halle Süd', address: 'Hafenstraße 1', city: 'Hamburg', country: 'DE' },
  });
  const made: Json[] = [];
  for (const type of types) made.push(await c.expect(201, 'POST', `/events/${draft.id}/tickets`, type));
  const event = await c.expect(200, 'POST', `/events/${draft.id}/publish`);
  return { event, types: made };
}

const buy = async (c: Client, eventId: string, ticketTypeId: string, quantity = 1): Promise<Json[]> =>
  (await c.expect(201, 'POST', `/events/${eventId}/orders`, { buyer: { name: 'Ada Lovelace', email: 'ada@example.com' }, items: [{ ticketTypeId, quantity }] })).tickets;

const keysOf = async (c: Client, eventId: string): Promise<Json[]> => (await c.expect(200, 'GET', `/events/${eventId}/signing-keys`)).data;
const offline = (c: Client, eventId: string) => c.expect(200, 'GET', `/events/${eventId}/checkin/offline`);

/** Verifies a code the way a scanner does, with the offline data's keys and revocation list only. */
function verifyOffline(data: Json, code: string) {
  return verifyCode(code, { eventId: data.eventId, keys: data.keys, nowSeconds: Math.floor(Date.now() / 1000), revoked: (s) => data.revocations.serials.includes(s) });
}

/** The revocation list's signature, checked with node:crypto and the raw public key of the key it names. */
function assertRevocationsSigned(data: Json) {
  const { revocations } = data;
  assert.equal(revocations.eventId, data.eventId);
  assert.deepEqual(revocations.serials, [...revocations.serials].sort(), 'serials sorted');
  const key = data.keys.find((k: Json) => k.kid === revocations.kid);
  assert.equal(key?.status, 'active', 'signed by the active key');
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.publicKey }, format: 'jwk' });
  const text = `montage-revocations-v1\n${revocations.eventId}\n${revocations.issuedAt}\n${revocations.serials.join('\n')}`;
  assert.equal(text, revocationText(revocations.eventId, revocations.issuedAt, revocations.serials));
  assert.ok(verify(null, Buffer.from(text, 'utf8'), publicKey, Buffer.from(revocations.signature, 'base64url')), 'revocation list signature verifies');
  const forged = { ...revocations, serials: revocations.serials.slice(1) };
  if (revocations.serials.length > 0) {
    assert.ok(!verify(null, Buffer.from(revocationText(forged.eventId, forged.issuedAt, forged.serials)), publicKey, Buffer.from(revocations.signature, 'base64url')));
  }
}

const serialOf = (code: string) => decodeCode(code)!.claims.serial;

/** RGBA pixels of a PNG, read by jsQR. */
async function decodeQrPng(png: Buffer): Promise<string | undefined> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.length), info.width, info.height)?.data;
}

/** The QR code image embedded in a ticket PDF (pdf-lib stores it as deflated RGB samples), decoded. */
async function decodeQrInPdf(pdf: Buffer): Promise<string | undefined> {
  const doc = await PDFDocument.load(pdf);
  for (const [, object] of doc.context.enumerateIndirectObjects()) {
    if (!(object instanceof PDFRawStream) || object.dict.get(PDFName.of('Subtype')) !== PDFName.of('Image')) continue;
    const dict: PDFDict = object.dict;
    if (dict.get(PDFName.of('ColorSpace')) !== PDFName.of('DeviceRGB')) continue;
    const width = (dict.get(PDFName.of('Width')) as PDFNumber).asNumber();
    const height = (dict.get(PDFName.of('Height')) as PDFNumber).asNumber();
    assert.equal(dict.get(PDFName.of('Filter')), PDFName.of('FlateDecode'));
    const rgb = inflateSync(object.contents);
    assert.equal(rgb.length, width * height * 3);
    const rgba = new Uint8ClampedArray(width * height * 4);
    for (let i = 0, j = 0; i < rgb.length; i += 3, j += 4) {
      rgba[j] = rgb[i]!;
      rgba[j + 1] = rgb[i + 1]!;
      rgba[j + 2] = rgb[i + 2]!;
      rgba[j + 3] = 255;
    }
    return jsQR(rgba, width, height)?.data;
  }
  return undefined;
}

for (const engine of ENGINES) {
  describe(`at the door (${engine})`, () => {
    const api = sharedServer(engine);
    const client = () => Client.create(api(), (body, headers) => answered.push(body, headers));

    test('a new event has one active key; its tickets carry codes it signed, which check in; a tampered or other event\'s code is 404', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c);
      const keys = await keysOf(c, event.id);
      assert.equal(keys.length, 1);
      assert.deepEqual(Object.keys(keys[0]).sort(), ['algorithm', 'createdAt', 'kid', 'object', 'publicKey', 'retiredAt', 'status']);
      assert.deepEqual({ object: keys[0].object, algorithm: keys[0].algorithm, status: keys[0].status, retiredAt: keys[0].retiredAt }, { object: 'signing_key', algorithm: 'Ed25519', status: 'active', retiredAt: null });
      assert.match(keys[0].kid, /^[0-9a-f]{8}$/);
      assert.equal(Buffer.from(keys[0].publicKey, 'base64url').length, 32);

      const issuedFrom = Math.floor(Date.now() / 1000);
      const [ticket, second] = await buy(c, event.id, types[0].id, 2);
      const issuedTo = Math.floor(Date.now() / 1000);
      assert.equal(ticket.code.length, 180);
      const claims = decodeCode(ticket.code)!.claims;
      // The window: from an hour before the code was issued, without an end (the lists' windows end entry).
      assert.deepEqual({ ...claims, serial: undefined, validFrom: undefined }, { kid: keys[0].kid, serial: undefined, ticketId: ticket.id, eventId: event.id, ticketTypeId: types[0].id, validFrom: undefined, validUntil: 0 });
      assert.ok(claims.validFrom >= issuedFrom - 3600 && claims.validFrom <= issuedTo - 3600, `validFrom ${claims.validFrom}`);
      assert.notEqual(serialOf(second.code), claims.serial, 'a serial per code');
      assert.equal(verifyCode(ticket.code, { eventId: event.id, keys, nowSeconds: Math.floor(Date.now() / 1000), revoked: () => false }).ok, true);

      // One byte changed in the signed part: refused as an unknown code, and nothing is checked in.
      const bytes = Buffer.from(ticket.code.slice(2), 'base64url');
      bytes[20]! ^= 0x40;
      await problem(await c.post(`/events/${event.id}/checkin`, { code: `M1${bytes.toString('base64url')}` }), 404, 'not_found');
      assert.equal((await c.expect(200, 'GET', `/tickets/${ticket.id}`)).checkedIn, false);

      // Another event's valid code at this event's door.
      const other = await publishedEvent(c);
      const [foreign] = await buy(c, other.event.id, other.types[0].id);
      await problem(await c.post(`/events/${event.id}/checkin`, { code: foreign.code }), 404, 'not_found');

      // Another spelling of the same bytes (the last character's spare bits set) is no code.
      const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const respelled = ticket.code.slice(0, -1) + B64[B64.indexOf(ticket.code.at(-1)!) | 0b0101];
      assert.notEqual(respelled, ticket.code);
      await problem(await c.post(`/events/${event.id}/checkin`, { code: respelled }), 404, 'not_found');
      assert.equal((await c.expect(200, 'GET', `/tickets/${ticket.id}`)).checkedIn, false);

      const admitted = await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code: ticket.code });
      assert.equal(admitted.ticketId, ticket.id);
      await problem(await c.post(`/events/${event.id}/checkin`, { code: ticket.code }), 409, 'already_checked_in');
    });

    test('rotation: a new active key, the old one retiring; old codes still check in, new tickets use the new key', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c);
      const [before1, before2] = await buy(c, event.id, types[0].id, 2);
      const [first] = await keysOf(c, event.id);
      const res = await c.post(`/events/${event.id}/signing-keys/rotate`);
      assert.equal(res.status, 201);
      const rotated = await res.json();
      assert.equal(rotated.status, 'active');
      assert.notEqual(rotated.kid, first.kid);
      const keys = await keysOf(c, event.id);
      assert.deepEqual(keys.map((k: Json) => [k.kid, k.status]), [[first.kid, 'retiring'], [rotated.kid, 'active']]);

      const [after] = await buy(c, event.id, types[0].id);
      assert.equal(decodeCode(after.code)!.claims.kid, rotated.kid);
      assert.equal(decodeCode(before1.code)!.claims.kid, first.kid);
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code: before1.code });
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code: after.code });
      const data = await offline(c, event.id);
      assert.deepEqual(data.keys.map((k: Json) => k.kid), [first.kid, rotated.kid]);
      assert.equal(verifyOffline(data, before2.code).ok, true, 'a retiring key\'s codes verify offline');
      assertRevocationsSigned(data);

      // Paging: one key a page.
      const page = await c.expect(200, 'GET', `/events/${event.id}/signing-keys?limit=1`);
      assert.equal(page.hasMore, true);
      const next = await c.expect(200, 'GET', `/events/${event.id}/signing-keys?limit=1&cursor=${page.nextCursor}`);
      assert.deepEqual([...page.data, ...next.data].map((k: Json) => k.kid), [first.kid, rotated.kid]);
      assert.equal(next.hasMore, false);
    });

    test('an event moved later keeps its codes: they have no end, and admit online and offline after the old end', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c);
      const [ticket] = await buy(c, event.id, types[0].id, 1);
      const oldEnd = Date.parse(event.endsAt);
      // Postponed by ten days: the code mailed before is the ticket's code still, and admits past the old end's day.
      await c.expect(200, 'PATCH', `/events/${event.id}`, { startsAt: iso(oldEnd + 10 * 24 * HOUR - 3 * HOUR), endsAt: iso(oldEnd + 10 * 24 * HOUR) });
      const { code } = await c.expect(200, 'GET', `/tickets/${ticket.id}`);
      assert.equal(code, ticket.code);
      assert.equal(decodeCode(code)!.claims.validUntil, 0);
      const afterOldEnd = Math.floor(oldEnd / 1000) + 2 * 86_400;
      const keys = await keysOf(c, event.id);
      assert.equal(verifyCode(code, { eventId: event.id, keys, nowSeconds: afterOldEnd, revoked: () => false }).ok, true);
      const data = await offline(c, event.id);
      const verifier = await Verifier.create(event.id, data.keys, data.revocations.serials);
      assert.equal((await verifier.verify(code, afterOldEnd)).ok, true);
      assert.equal((await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code })).ticketId, ticket.id);
      // A code signed with an end (as codes once were) is refused past it, online and offline.
      const row = await c.api.database.db.selectFrom('signingKeys').select(['kid', 'privateKey']).where('eventId', '=', event.id).where('status', '=', 'active').executeTakeFirstOrThrow();
      const [other] = await buy(c, event.id, types[0].id, 1);
      const ended = Math.floor(Date.now() / 1000) - 3600;
      const bounded = signCode({ ...decodeCode(other.code)!.claims, validUntil: ended }, privateKeyObject(row.privateKey));
      const refused = await problem(await c.post(`/events/${event.id}/checkin`, { code: bounded }), 409, 'code_expired');
      assert.equal(refused.validUntil, iso(ended * 1000));
      assert.deepEqual(await verifier.verify(bounded, Math.floor(Date.now() / 1000)), { ok: false, reason: 'code_expired', ticket: decodeCode(bounded)!.claims });
    });

    test('retiring: 409 for the active key; a retiring key\'s tickets get new codes in one go, the old codes are refused key_retired', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c);
      const [first] = await keysOf(c, event.id);
      await problem(await c.post(`/events/${event.id}/signing-keys/${first.kid}/retire`), 409, 'signing_key_active');
      const old = await buy(c, event.id, types[0].id, 3);
      await c.expect(200, 'POST', `/tickets/${old[2].id}/cancel`);
      const rotated = await c.expect(201, 'POST', `/events/${event.id}/signing-keys/rotate`);
      const retired = await c.expect(200, 'POST', `/events/${event.id}/signing-keys/${first.kid}/retire`);
      assert.equal(retired.status, 'retired');
      assert.ok(Date.parse(retired.retiredAt) <= Date.now());
      assert.deepEqual(await c.expect(200, 'POST', `/events/${event.id}/signing-keys/${first.kid}/retire`), retired, 'retiring again changes nothing');
      await problem(await c.post(`/events/${event.id}/signing-keys/00000000/retire`), 404, 'not_found');

      for (const ticket of old.slice(0, 2)) {
        const now = await c.expect(200, 'GET', `/tickets/${ticket.id}`);
        assert.notEqual(now.code, ticket.code, 'reissued');
        assert.equal(decodeCode(now.code)!.claims.kid, rotated.kid);
        assert.equal(decodeCode(now.code)!.claims.ticketId, ticket.id);
        const refused = await problem(await c.post(`/events/${event.id}/checkin`, { code: ticket.code }), 409, 'key_retired');
        assert.equal(refused.kid, first.kid);
      }
      const cancelled = await c.expect(200, 'GET', `/tickets/${old[2].id}`);
      assert.equal(cancelled.code, old[2].code, 'a cancelled ticket is not reissued');
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code: (await c.expect(200, 'GET', `/tickets/${old[0].id}`)).code });

      const data = await offline(c, event.id);
      assert.deepEqual(data.keys.map((k: Json) => k.kid), [rotated.kid], 'retired keys are left out');
      assert.deepEqual(data.revocations.serials, [...old.map((t) => serialOf(t.code))].sort(), 'reissued and cancelled serials');
      assertRevocationsSigned(data);
      const reissued = await c.expect(200, 'GET', `/tickets/${old[1].id}`);
      assert.equal(verifyOffline(data, reissued.code).ok, true);
      const refused = verifyOffline(data, old[1].code);
      assert.equal(refused.ok ? 'ok' : refused.reason, 'unknown_key');
    });

    test('retiring a key with more tickets than one batch reissues every one of them', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c, [{ name: 'General', price: 0, quantity: 1000 }]);
      const [first] = await keysOf(c, event.id);
      const tickets: Json[] = [];
      for (let i = 0; i < 6; i++) tickets.push(...(await buy(c, event.id, types[0].id, i === 5 ? 50 : 100)));
      const rotated = await c.expect(201, 'POST', `/events/${event.id}/signing-keys/rotate`);
      const [late] = await buy(c, event.id, types[0].id);
      await c.expect(200, 'POST', `/events/${event.id}/signing-keys/${first.kid}/retire`);
      const rows = await c.api.database.db.selectFrom('tickets').select(['id', 'code']).where('eventId', '=', event.id).execute();
      const now = new Map(rows.map((r) => [r.id, r.code]));
      assert.equal(now.size, 551);
      for (const ticket of tickets) {
        const code = now.get(ticket.id)!;
        assert.notEqual(code, ticket.code);
        assert.deepEqual([decodeCode(code)!.claims.kid, decodeCode(code)!.claims.ticketId], [rotated.kid, ticket.id]);
      }
      assert.equal(now.get(late.id), late.code, 'a ticket of the active key keeps its code');
      const data = await offline(c, event.id);
      assert.deepEqual(data.revocations.serials, tickets.map((t) => serialOf(t.code)).sort());
      assertRevocationsSigned(data);
    });

    test('cancel and transfer put the serial on the signed revocation list; the offline data answers 304 until it changes', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c, [
        { name: 'General', price: 2500, quantity: 100 },
        { name: 'VIP', price: 9900, quantity: 10 },
      ]);
      const [toCancel, toTransfer, kept] = await buy(c, event.id, types[0].id, 3);
      const first = await c.send('GET', `/events/${event.id}/checkin/offline`);
      assert.equal(first.status, 200);
      const etag = first.headers.get('etag')!;
      assert.match(etag, /^"[\w-]+"$/);
      const initial = await first.json();
      assert.deepEqual(initial.revocations.serials, []);
      assertRevocationsSigned(initial);
      assert.deepEqual(Object.keys(initial).sort(), ['checkinLists', 'event', 'eventId', 'generatedAt', 'keys', 'object', 'revocations', 'ticketTypes']);
      assert.deepEqual(initial.checkinLists, []);
      assert.equal(initial.object, 'checkin_offline_data');
      assert.deepEqual(initial.event, { id: event.id, name: event.name, timezone: 'Europe/Berlin', startsAt: event.startsAt, endsAt: event.endsAt, venue: event.venue });
      assert.deepEqual(initial.ticketTypes, types.map((t) => ({ id: t.id, name: t.name })));
      const same = await c.send('GET', `/events/${event.id}/checkin/offline`, undefined, { 'if-none-match': etag });
      assert.equal(same.status, 304);
      assert.equal(await same.text(), '');

      await c.expect(200, 'POST', `/tickets/${toCancel.id}/cancel`);
      const transferred = await c.expect(200, 'POST', `/tickets/${toTransfer.id}/transfer`, { attendee: { name: 'Grace Hopper', email: 'grace@example.com' } });
      assert.notEqual(serialOf(transferred.code), serialOf(toTransfer.code));
      const changed = await c.send('GET', `/events/${event.id}/checkin/offline`, undefined, { 'if-none-match': etag });
      assert.equal(changed.status, 200);
      const data = await changed.json();
      assert.deepEqual(data.revocations.serials, [serialOf(toCancel.code), serialOf(toTransfer.code)].sort());
      assertRevocationsSigned(data);
      const reason = (code: string) => {
        const result = verifyOffline(data, code);
        return result.ok ? 'ok' : result.reason;
      };
      assert.equal(reason(toCancel.code), 'revoked');
      assert.equal(reason(toTransfer.code), 'revoked');
      assert.equal(reason(transferred.code), 'ok');
      assert.equal(reason(kept.code), 'ok');

      // The server refuses them as precisely as it can.
      await problem(await c.post(`/events/${event.id}/checkin`, { code: toCancel.code }), 409, 'ticket_cancelled');
      await problem(await c.post(`/events/${event.id}/checkin`, { code: toTransfer.code }), 409, 'ticket_revoked');
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code: transferred.code });

      // Cancelling the event revokes every valid ticket's code.
      await c.expect(200, 'POST', `/events/${event.id}/cancel`);
      const afterCancel = await offline(c, event.id);
      assert.deepEqual(afterCancel.revocations.serials, [serialOf(toCancel.code), serialOf(toTransfer.code), serialOf(transferred.code), serialOf(kept.code)].sort());
    });

    test('scopes: a checkin key reads the offline data but neither keys nor rotation; tenants see only their own events', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c);
      const [ticket] = await buy(c, event.id, types[0].id);
      const door = await c.withScopes(['checkin']);
      const data = await door.expect(200, 'GET', `/events/${event.id}/checkin/offline`);
      assert.equal(data.eventId, event.id);
      const { kid } = data.keys[0];
      await problem(await door.get(`/events/${event.id}/signing-keys`), 403, 'insufficient_scope');
      await problem(await door.post(`/events/${event.id}/signing-keys/rotate`), 403, 'insufficient_scope');
      await problem(await door.post(`/events/${event.id}/signing-keys/${kid}/retire`), 403, 'insufficient_scope');
      await problem(await door.get(`/tickets/${ticket.id}/qr.svg`), 403, 'insufficient_scope');
      const reader = await c.withScopes(['events:read']);
      await reader.expect(200, 'GET', `/events/${event.id}/signing-keys`);
      await reader.expect(200, 'GET', `/events/${event.id}/checkin/offline`);
      await problem(await reader.post(`/events/${event.id}/signing-keys/rotate`), 403, 'insufficient_scope');

      const stranger = await client();
      for (const [method, path] of [
        ['GET', `/events/${event.id}/checkin/offline`],
        ['GET', `/events/${event.id}/signing-keys`],
        ['POST', `/events/${event.id}/signing-keys/rotate`],
        ['POST', `/events/${event.id}/signing-keys/${kid}/retire`],
        ['GET', `/tickets/${ticket.id}/qr.svg`],
        ['GET', `/tickets/${ticket.id}/qr.png`],
        ['GET', `/tickets/${ticket.id}/pdf`],
      ] as const) {
        await problem(await stranger.send(method, path), 404, 'not_found');
      }
      // The stranger's door cannot check in this event's codes either.
      await problem(await stranger.post(`/events/${event.id}/checkin`, { code: ticket.code }), 404, 'not_found');
      assert.deepEqual((await keysOf(c, event.id)).map((k: Json) => [k.kid, k.status]), [[kid, 'active']], 'the stranger rotated and retired nothing');
    });

    test('QR as SVG and PNG, and a PDF whose QR decodes to a code that verifies with the event\'s public key', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c);
      const order = await c.expect(201, 'POST', `/events/${event.id}/orders`, {
        buyer: { name: 'Ada Lovelace', email: 'ada@example.com' },
        items: [{ ticketTypeId: types[0].id, quantity: 1, attendees: [{ name: 'Zoë Łukasiewicz 李', email: 'zoe@example.com' }] }],
      });
      const [ticket] = order.tickets;
      assert.deepEqual(ticket.links, { qrSvg: `/v1/tickets/${ticket.id}/qr.svg`, qrPng: `/v1/tickets/${ticket.id}/qr.png`, pdf: `/v1/tickets/${ticket.id}/pdf` });
      const purchased = await c.api.database.db.selectFrom('webhookMessages').select('payload').where('accountId', '=', c.accountId).where('eventType', '=', 'ticket.purchased').executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(purchased.payload).data.links, ticket.links, 'ticket.purchased carries the links');

      const svg = await c.get(ticket.links.qrSvg.slice(3));
      assert.equal(svg.status, 200);
      assert.match(svg.headers.get('content-type')!, /^image\/svg\+xml/);
      const svgText = await svg.text();
      assert.match(svgText, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      const fromSvg = await decodeQrPng(await sharp(Buffer.from(svgText), { density: 300 }).png().toBuffer());
      assert.equal(fromSvg, ticket.code);

      const png = await c.get(ticket.links.qrPng.slice(3));
      assert.equal(png.status, 200);
      assert.equal(png.headers.get('content-type'), 'image/png');
      assert.equal(await decodeQrPng(Buffer.from(await png.arrayBuffer())), ticket.code);

      const pdf = await c.get(ticket.links.pdf.slice(3));
      assert.equal(pdf.status, 200);
      assert.equal(pdf.headers.get('content-type'), 'application/pdf');
      assert.match(pdf.headers.get('content-disposition')!, /^inline; filename="ticket-tkt_[0-9a-z]{26}\.pdf"$/);
      const bytes = Buffer.from(await pdf.arrayBuffer());
      assert.equal(bytes.subarray(0, 5).toString(), '%PDF-');
      const decoded = await decodeQrInPdf(bytes);
      assert.equal(decoded, ticket.code, 'the QR in the PDF is the ticket\'s code');
      const keys = await keysOf(c, event.id);
      assert.equal(verifyCode(decoded!, { eventId: event.id, keys, nowSeconds: Math.floor(Date.now() / 1000), revoked: () => false }).ok, true);
      const doc = await PDFDocument.load(bytes);
      assert.equal(doc.getPageCount(), 1);
      assert.equal(doc.getTitle(), `Ticket: ${event.name}`);

      await problem(await c.get(`/tickets/tkt_${'0'.repeat(26)}/pdf`), 404, 'not_found');
      await problem(await c.get('/tickets/nope/qr.png'), 404, 'not_found');
    });

    test('through a check-in list and its sync, a signed code is verified as on the event-wide check-in: replaced, retired, out of its window, tampered or foreign codes are refused with the same codes', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c);
      const [cancelled, transferred, ofRetired, fine, windowed, synced] = await buy(c, event.id, types[0].id, 6);
      const list = await c.expect(201, 'POST', `/events/${event.id}/checkin-lists`, { name: 'Main door' });
      const [first] = await keysOf(c, event.id);
      await c.expect(200, 'POST', `/tickets/${cancelled.id}/cancel`);
      const newCode = (await c.expect(200, 'POST', `/tickets/${transferred.id}/transfer`, { attendee: { name: 'Grace Hopper', email: 'grace@example.com' } })).code;
      await c.expect(201, 'POST', `/events/${event.id}/signing-keys/rotate`);
      await c.expect(200, 'POST', `/events/${event.id}/signing-keys/${first.kid}/retire`);
      // Every ticket was reissued by the retirement: their first codes are a retired key's.
      const current = async (ticket: Json) => (await c.expect(200, 'GET', `/tickets/${ticket.id}`)).code as string;
      // A code of a valid key, signed with a window that has not begun, and one whose window has ended.
      const row = await c.api.database.db.selectFrom('signingKeys').select(['kid', 'privateKey']).where('eventId', '=', event.id).where('status', '=', 'active').executeTakeFirstOrThrow();
      const now = Math.floor(Date.now() / 1000);
      const claims = { ...decodeCode(await current(windowed))!.claims, serial: Buffer.alloc(8, 7).toString('base64url') };
      const early = signCode({ ...claims, validFrom: now + 3600, validUntil: 0 }, privateKeyObject(row.privateKey));
      const late = signCode({ ...claims, validFrom: 0, validUntil: now - 3600 }, privateKeyObject(row.privateKey));
      const tamperedBytes = Buffer.from((await current(fine)).slice(2), 'base64url');
      tamperedBytes[20]! ^= 0x40;
      const tampered = `M1${tamperedBytes.toString('base64url')}`;
      // The signature's last byte flipped: a forged code is unknown (404), whatever its claims say.
      const forge = (code: string) => {
        const bytes = Buffer.from(code.slice(2), 'base64url');
        bytes[bytes.length - 1]! ^= 0x01;
        return `M1${bytes.toString('base64url')}`;
      };
      const forgedEarly = forge(early);
      const other = await publishedEvent(c);
      const [foreign] = await buy(c, other.event.id, other.types[0].id);

      const refusals: Array<[string, string, number]> = [
        [cancelled.code, 'ticket_cancelled', 409],
        [transferred.code, 'key_retired', 409],
        [ofRetired.code, 'key_retired', 409],
        [early, 'code_not_yet_valid', 409],
        [late, 'code_expired', 409],
        [tampered, 'not_found', 404],
        [forgedEarly, 'not_found', 404],
        [foreign.code, 'not_found', 404],
      ];
      for (const [code, why, status] of refusals) {
        const refused = await problem(await c.post(`/events/${event.id}/checkin`, { code, listId: list.id }), status, why);
        assert.equal(refused.listId, list.id);
        // The event-wide check-in answers the same.
        await problem(await c.post(`/events/${event.id}/checkin`, { code }), status, why);
      }
      // A transferred ticket's replaced code, under the active key: ticket_revoked on both paths.
      const beforeTransfer = await current(transferred);
      await c.expect(200, 'POST', `/tickets/${transferred.id}/transfer`, { attendee: { name: 'Barbara Liskov', email: 'barbara@example.com' } });
      await problem(await c.post(`/events/${event.id}/checkin`, { code: beforeTransfer, listId: list.id }), 409, 'ticket_revoked');
      await problem(await c.post(`/events/${event.id}/checkin`, { code: beforeTransfer }), 409, 'ticket_revoked');
      // The same claims under a forged signature explain nothing: 404 on both paths.
      await problem(await c.post(`/events/${event.id}/checkin`, { code: forge(beforeTransfer), listId: list.id }), 404, 'not_found');
      await problem(await c.post(`/events/${event.id}/checkin`, { code: forge(beforeTransfer) }), 404, 'not_found');
      assert.notEqual(newCode, beforeTransfer, 'the retirement reissued the transferred code too');
      assert.equal((await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code: await current(fine), listId: list.id })).ticketId, fine.id);

      // The sync: every one of them refused, even when the door admitted it offline; the valid code admitted.
      const scannedAt = iso(Date.now() - 60_000);
      const codes = [...refusals.map(([code]) => code), beforeTransfer, await current(synced)];
      const answer = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, {
        deviceId: 'door-1',
        scans: codes.map((code, i) => ({ scanId: `s${i}`, code, listId: list.id, scannedAt, localResult: 'admitted' })),
      });
      assert.deepEqual(
        answer.results.map((r: Json) => [r.scanId, r.outcome, r.reason ?? null]),
        [...refusals.map(([, why], i) => [`s${i}`, 'refused', why]), [`s${refusals.length}`, 'refused', 'ticket_revoked'], [`s${refusals.length + 1}`, 'admitted', null]],
      );
      assert.equal(answer.results.at(-1).ticketId, synced.id);
      // A code window is judged at the scan's time: a door offline when the window was open admits it.
      const opened = signCode({ ...claims, validFrom: now - 7200, validUntil: now - 1800 }, privateKeyObject(row.privateKey));
      const inWindow = await c.expect(200, 'POST', `/events/${event.id}/checkin/sync`, {
        deviceId: 'door-1',
        scans: [{ scanId: 'w1', code: opened, listId: list.id, scannedAt: iso((now - 3600) * 1000), localResult: 'admitted' }],
      });
      // It verifies, but it is not the ticket's code (the server never issued it): unknown.
      assert.deepEqual([inWindow.results[0].outcome, inWindow.results[0].reason], ['refused', 'not_found']);
      const counts = (await c.expect(200, 'GET', `/events/${event.id}/checkin-lists/${list.id}`)).counts;
      assert.deepEqual([counts.inside, counts.entries, counts.admittedTickets, counts.conflicts], [2, 2, 2, 0]);
    });

    test('the offline data\'s ETag changes with the event, its keys, its ticket types and its revocations (a cancel, a transfer), and only then: a scan leaves it', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c);
      const [ticket, scanned, moved] = await buy(c, event.id, types[0].id, 3);
      const tag = async () => (await c.send('GET', `/events/${event.id}/checkin/offline`)).headers.get('etag')!;
      const tags = [await tag()];
      assert.equal(await tag(), tags[0], 'nothing changed: the same tag');
      await c.expect(200, 'PATCH', `/events/${event.id}`, { name: 'Door night, moved' });
      tags.push(await tag());
      await c.expect(201, 'POST', `/events/${event.id}/signing-keys/rotate`);
      tags.push(await tag());
      await c.expect(201, 'POST', `/events/${event.id}/tickets`, { name: 'Late entry', price: 1000, quantity: 10 });
      tags.push(await tag());
      await c.expect(200, 'POST', `/tickets/${ticket.id}/cancel`);
      tags.push(await tag());
      // A check-in changes nothing the door verifies with: the same tag.
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code: scanned.code });
      assert.equal(await tag(), tags.at(-1), 'a scan changed the tag');
      // A transfer revokes the ticket's old code: a new tag.
      await c.expect(200, 'POST', `/tickets/${moved.id}/transfer`, { attendee: { name: 'Grace Hopper', email: 'grace@example.com' } });
      tags.push(await tag());
      assert.equal(new Set(tags).size, tags.length, `a new tag after each change: ${tags.join(' ')}`);
      const last = tags.at(-1)!;
      const res = await c.send('GET', `/events/${event.id}/checkin/offline`, undefined, { 'if-none-match': last });
      assert.equal(res.status, 304);
    });

    test('the offline data carries the check-in lists; its ETag changes when a list is made, changed or deleted, not when a scan moves the counts', async () => {
      const c = await client();
      const { event, types } = await publishedEvent(c, [
        { name: 'General', price: 0, quantity: 100 },
        { name: 'VIP', price: 0, quantity: 10 },
      ]);
      const [ticket] = await buy(c, event.id, types[0].id);
      const door = await c.withScopes(['checkin']);
      const fetchData = async (etag?: string) => {
        const res = await door.send('GET', `/events/${event.id}/checkin/offline`, undefined, etag ? { 'if-none-match': etag } : {});
        return { status: res.status, etag: res.headers.get('etag')!, body: res.status === 200 ? await res.json() : null };
      };
      const empty = await fetchData();
      const main = await c.expect(201, 'POST', `/events/${event.id}/checkin-lists`, { name: 'Main door', scanExits: true });
      const vip = await c.expect(201, 'POST', `/events/${event.id}/checkin-lists`, { name: 'VIP lounge', ticketTypeIds: [types[1].id] });
      const made = await fetchData(empty.etag);
      assert.equal(made.status, 200, 'a new list changes the tag');
      assert.notEqual(made.etag, empty.etag);
      assert.deepEqual(made.body.checkinLists, [main, vip], 'the lists as the list API shows them, oldest first');

      // A scan moves the counts but not the tag: the door keeps its copy; a 200 shows the new counts.
      await c.expect(201, 'POST', `/events/${event.id}/checkin`, { code: ticket.code, listId: main.id });
      assert.equal((await fetchData(made.etag)).status, 304);
      const counted = await fetchData();
      assert.equal(counted.etag, made.etag);
      assert.deepEqual(counted.body.checkinLists[0].counts, { inside: 1, entries: 1, exits: 0, admittedTickets: 1, conflicts: 0 });

      // A change of a list's settings is a new tag; so is a deleted list.
      const renamed = await c.expect(200, 'PATCH', `/events/${event.id}/checkin-lists/${vip.id}`, { allowMultipleEntries: true });
      const changed = await fetchData(made.etag);
      assert.equal(changed.status, 200);
      assert.deepEqual(changed.body.checkinLists[1], renamed);
      await c.expect(204, 'DELETE', `/events/${event.id}/checkin-lists/${vip.id}`);
      const deleted = await fetchData(changed.etag);
      assert.equal(deleted.status, 200);
      assert.deepEqual(deleted.body.checkinLists.map((l: Json) => l.id), [main.id]);
      assertRevocationsSigned(deleted.body);
    });

    test('no answer of this file ever carried a private key', async () => {
      const rows = await api().database.db.selectFrom('signingKeys').select(['privateKey', 'kid']).execute();
      assert.ok(rows.length > 5, 'keys were made');
      for (const row of rows) {
        const der = Buffer.from(row.privateKey, 'base64');
        // The raw 32-byte seed is the last 32 bytes of the PKCS #8 DER.
        const seed = der.subarray(der.length - 32);
        for (const text of answered) {
          for (const form of [row.privateKey, seed.toString('base64'), seed.toString('base64url'), seed.toString('hex'), seed.toString('latin1')]) {
            assert.ok(!text.includes(form), `key ${row.kid}'s private half appeared in an answer`);
          }
        }
      }
    });
  });
}
