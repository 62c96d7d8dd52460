import assert from 'node:assert/strict';
import dns from 'node:dns/promises';
import os from 'node:os';
import { describe, test } from 'node:test';
import { startWorkers } from '../src/workers.js';
import { isPrivateAddress } from '../src/net/addresses.js';
import { ENGINES, freshStorage, onCleanup, problem, startApp, until } from './helpers.js';

/**
 * A host name of this machine that resolves (through /etc/hosts, no network) to a private or
 * loopback address, and that address: the kind of internal name a tenant could probe with.
 */
async function internalName(): Promise<{ name: string; address: string } | null> {
  for (const name of [os.hostname(), 'ip6-localhost', 'ip6-loopback']) {
    if (/(^|\.)localhost\.?$/i.test(name)) continue; // refused by name already, before any lookup
    const found = await dns.lookup(name, { all: true }).catch(() => []);
    const address = found.find((a) => isPrivateAddress(a.address))?.address;
    if (address) return { name, address };
  }
  return null;
}

/** Every line a worker logs, as JSON text. */
function capturingLog() {
  const lines: string[] = [];
  const write = (level: string) => (obj: object, msg: string) => lines.push(JSON.stringify({ level, ...obj, msg }));
  return { lines, log: { info: write('info'), warn: write('warn'), error: write('error') } };
}

for (const engine of ENGINES) {
  describe(`what a tenant learns of internal names (${engine})`, () => {
    test('a failed fetch says the host resolves to a private address, never which; the log has it', async (t) => {
      const internal = await internalName();
      if (!internal) return t.skip('no host name of this machine resolves to a private address');
      const { name, address } = internal;
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_WEBHOOK_RETRY_SCHEDULE: '20ms', MONTAGE_BLEND_MAX_ATTEMPTS: '1' });
      const { lines, log } = capturingLog();
      const workers = startWorkers(api.database, api.config, log);
      onCleanup(t, () => workers.stop(1000));
      const { key } = await api.account();

      // Synchronous validation: a literal private address is refused at once, naming only what the client sent.
      const literal = await problem(
        await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'p', images: ['http://[::127.0.0.1]/a.jpg', 'https://example.com/b.jpg'] } }),
        400,
        'invalid_request',
      );
      assert.match(JSON.stringify(literal), /private or reserved address/);

      const hook = await api.fetch('/v1/webhooks', { method: 'POST', key, json: { url: `http://${name}:9/hook`, events: ['*'] } });
      assert.equal(hook.status, 201, await hook.clone().text());
      const subscription = (await hook.json()).id as string;

      const images = [`http://${name}:9/a.jpg`, `http://${name}:9/b.jpg`];
      const started = await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 'p', images } });
      assert.equal(started.status, 202, await started.clone().text());
      const jobId = (await started.json()).jobId as string;

      // The job's status record.
      const job = await until(async () => {
        const body = await (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
        return body.status === 'failed' ? body : null;
      }, 10_000, 'the job to fail');
      assert.equal(job.error.code, 'image_fetch_failed');
      assert.match(job.error.message, new RegExp(`${name} resolves to a private or reserved address`));
      assert.ok(!JSON.stringify(job).includes(address), JSON.stringify(job.error));

      // The blend.failed message as the webhook sends it.
      const messages = await api.database.db.selectFrom('webhookMessages').select(['eventType', 'payload']).execute();
      const failed = messages.find((m) => m.eventType === 'blend.failed');
      assert.ok(failed, 'a blend.failed message');
      assert.match(failed.payload, /resolves to a private or reserved address/);
      assert.ok(!failed.payload.includes(address), failed.payload);

      // The deliveries to the internal name, as GET deliveries (and the dashboard, which reads it) show them.
      const deliveries = await until(async () => {
        const body = await (await api.fetch(`/v1/webhooks/${subscription}/deliveries`, { key })).json();
        return body.data.length > 0 ? body.data : null;
      }, 10_000, 'a delivery attempt');
      assert.match(deliveries[0].error, new RegExp(`blocked_address: ${name} resolves to a private or reserved address`));
      assert.ok(!JSON.stringify(deliveries).includes(address), JSON.stringify(deliveries));

      // The server log has the address, with the job's and the delivery's IDs.
      const fetchLine = lines.find((l) => l.includes('image fetch failed') && l.includes(jobId));
      assert.ok(fetchLine?.includes(address), `log: ${lines.join('\n')}`);
      assert.match(fetchLine!, /"level":"warn"/);
      const deliveryLine = (await until(() => lines.find((l) => l.includes('webhook delivery failed')), 5000, 'the delivery log line')) as string;
      assert.ok(deliveryLine.includes(address) && deliveryLine.includes(subscription), deliveryLine);
      // Never the image URL itself (a client may sign it with a token of theirs).
      assert.ok(!lines.some((l) => l.includes('/a.jpg')), 'no image URL in the log');
    });
  });
}
