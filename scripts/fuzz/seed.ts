// Real resources in the fuzzed account before the first generated request, made through the API
// with valid requests: events in each state with ticket types, orders, a check-in, a payout, a
// webhook subscription to the loopback receiver, a check-in-only key and a revoked one, and
// a blend job (with its signed result URL when a worker runs it).
import type { Client } from './client.js';
import type { Pool } from './pool.js';
import type { Credentials, FixtureUrls } from './request.js';

export interface SeedOptions {
  key: string;
  /** A key of the same account past its expiry, if the caller could make one (the API cannot). */
  expiredKey?: string;
  urls: FixtureUrls;
  /** How long to wait for the blend job to complete (0: do not wait; no worker runs it). */
  blendWaitMs: number;
}

type Call = (method: string, path: string, body?: unknown, key?: string) => Promise<any>;

/** A client for valid requests: answers other than 2xx throw, and the pool learns from every answer. */
function caller(client: Client, pool: Pool, defaultKey: string): Call {
  return async (method, path, body, key = defaultKey) => {
    const outcome = await client.send({
      method,
      path,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      notes: [],
    });
    if (!outcome.ok) throw new Error(`seeding: ${method} ${path}: ${outcome.error}`);
    const text = outcome.answer.body.toString('utf8');
    if (outcome.answer.status >= 300) throw new Error(`seeding: ${method} ${path}: ${outcome.answer.status} ${text}`);
    const json = text ? JSON.parse(text) : null;
    pool.harvest(json);
    return json;
  };
}

export async function seedAccount(client: Client, pool: Pool, options: SeedOptions): Promise<Credentials> {
  const call = caller(client, pool, options.key);
  const account = await call('GET', '/v1/account');
  pool.protect(account.key.id);
  await seedEvents(client, pool, options.key);
  await call('POST', '/v1/webhooks', { url: options.urls.hook, events: ['*'], description: 'fuzz receiver' });

  const restricted = await call('POST', '/v1/keys', { name: 'door scanner', scopes: ['checkin'] });
  const revoked = await call('POST', '/v1/keys', { name: 'revoked' });
  await call('POST', `/v1/keys/${revoked.id}/revoke`);

  const job = await call('POST', '/v1/blend/start', { projectId: 'fuzz', images: options.urls.images, options: { blendType: 'median', align: false, outputFormat: 'png' } });
  const deadline = Date.now() + options.blendWaitMs;
  for (let status = job.status; status !== 'completed' && status !== 'failed' && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 250));
    status = (await call('GET', `/v1/blend/status/${job.jobId}`)).status;
  }
  return { key: options.key, restricted: restricted.key, revoked: revoked.key, expired: options.expiredKey };
}

/**
 * Events in each state, with ticket types, orders, a check-in and a payout. Run again now and then
 * during fuzzing: cancelling and deleting are for good, and without fresh events every order would
 * meet a cancelled one.
 */
export async function seedEvents(client: Client, pool: Pool, key: string): Promise<void> {
  const call = caller(client, pool, key);
  const day = 86_400_000;
  const at = (days: number) => new Date(Date.now() + days * day).toISOString();
  const event = (name: string) => call('POST', '/v1/events', { name, startsAt: at(30), endsAt: at(31), timezone: 'Europe/Berlin', currency: 'EUR', capacity: 1000, venue: { name: 'Hall 7', city: 'Berlin', country: 'DE' } });

  const open = await event('Fuzz: published');
  const paid = await call('POST', `/v1/events/${open.id}/tickets`, { name: 'Standard', price: 2500, quantity: 500, maxPerOrder: 20 });
  const free = await call('POST', `/v1/events/${open.id}/tickets`, { name: 'Guest list', price: 0, quantity: 100 });
  await call('POST', `/v1/events/${open.id}/publish`);
  const buyer = { name: 'Ada Lovelace', email: 'ada@example.com' };
  const order = await call('POST', `/v1/events/${open.id}/orders`, {
    buyer,
    items: [{ ticketTypeId: paid.id, quantity: 3, attendees: [{ name: 'Grace Hopper', email: 'grace@example.com' }] }, { ticketTypeId: free.id, quantity: 1 }],
  });
  await call('POST', `/v1/events/${open.id}/checkin`, { code: order.tickets[0].code, gate: 'north' });
  await call('POST', `/v1/tickets/${order.tickets[1].id}/cancel`);
  await call('POST', `/v1/events/${open.id}/payouts`);

  const cancelled = await event('Fuzz: cancelled');
  const type = await call('POST', `/v1/events/${cancelled.id}/tickets`, { name: 'Standard', price: 1000, quantity: 10 });
  await call('POST', `/v1/events/${cancelled.id}/publish`);
  await call('POST', `/v1/events/${cancelled.id}/orders`, { buyer, items: [{ ticketTypeId: type.id, quantity: 2 }] });
  await call('POST', `/v1/events/${cancelled.id}/cancel`);

  const draft = await event('Fuzz: draft');
  await call('POST', `/v1/events/${draft.id}/tickets`, { name: 'Early', price: 500, quantity: 5 });
}
