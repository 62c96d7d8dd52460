import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ENGINES, freshStorage, problem, startApp } from './helpers.js';

/**
 * Whether a media type of the OpenAPI document shows an example: its own, or one in its schema
 * (the schema's top level, a referenced component, a property or the items of an array).
 */
function hasExample(doc: any, media: any): boolean {
  const seen = new Set<unknown>();
  const inSchema = (schema: any): boolean => {
    if (!schema || typeof schema !== 'object' || seen.has(schema)) return false;
    seen.add(schema);
    if (schema.examples || schema.example !== undefined) return true;
    if (schema.$ref) return inSchema(doc.components.schemas[String(schema.$ref).split('/').pop()!]);
    const parts = [schema.items, ...Object.values(schema.properties ?? {}), ...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])];
    return parts.some(inSchema);
  };
  return Boolean(media.example !== undefined || media.examples || inSchema(media.schema));
}

for (const engine of ENGINES) {
  describe(`operations endpoints (${engine})`, () => {
    test('/healthz, /readyz (503 when the database is gone)', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      assert.deepEqual(await (await api.fetch('/healthz')).json(), { status: 'ok' });
      assert.deepEqual(await (await api.fetch('/readyz')).json(), { status: 'ok' });
      await api.database.close();
      await problem(await api.fetch('/readyz'), 503, 'unavailable');
      assert.equal((await api.fetch('/healthz')).status, 200, 'the process itself is still up');
    });

    test('/metrics counts requests by route pattern and status; a token guards it when set', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const { key } = await api.account();
      await api.fetch('/v1/keys/key_01jd0c8n4ffm5b6d2x0v9k3q7r', { key });
      await api.fetch('/api/v1/account', { key });
      const text = await (await api.fetch('/metrics')).text();
      assert.match(text, /montage_http_requests_total\{method="GET",route="\/v1\/keys\/:id",status="404"\} 1/);
      assert.match(text, /montage_http_requests_total\{method="GET",route="\/api\/v1\/account",status="200"\} 1/);
      assert.match(text, /montage_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/api\/v1\/account",status="200"\}/);

      const guarded = await startApp(t, await freshStorage(t, engine), { MONTAGE_METRICS_TOKEN: 's3cret-token' });
      await problem(await guarded.fetch('/metrics'), 401, 'unauthorized');
      await problem(await guarded.fetch('/metrics', { headers: { authorization: 'Bearer wrong' } }), 401, 'unauthorized');
      assert.equal((await guarded.fetch('/metrics', { headers: { authorization: 'Bearer s3cret-token' } })).status, 200);
    });

    test('OpenAPI 3.1 lists every /v1 route with its schemas; /docs and /docs/errors are served', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const doc = await (await api.fetch('/openapi.json')).json();
      assert.equal(doc.openapi, '3.1.0');
      for (const path of ['/v1/account', '/v1/keys', '/v1/keys/{id}', '/v1/keys/{id}/revoke', '/healthz', '/readyz']) {
        assert.ok(doc.paths[path], `${path} documented`);
      }
      assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/api/v1')), 'the alias is not listed twice');
      const create = doc.paths['/v1/keys'].post;
      assert.ok(create.requestBody.content['application/json'].schema);
      assert.ok(create.responses['201'] && create.responses['400'] && create.responses['401']);
      let operations = 0;
      for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
        if (!path.startsWith('/v1/')) continue;
        for (const [method, op] of Object.entries(methods)) {
          operations++;
          const codes = Object.keys(op.responses);
          assert.ok(codes.some((c) => /^2/.test(c)) && codes.some((c) => /^4\d\d$/.test(c)), `${method} ${path} documents its answers: ${codes}`);
          assert.ok(op.summary, `${method} ${path} has a summary`);
          if (['post', 'patch'].includes(method) && op.requestBody) {
            // JSON bodies, or a file upload's multipart form (POST /v1/blend/uploads): a schema either way, an example for JSON.
            const json = op.requestBody.content['application/json'];
            const body = json ?? op.requestBody.content['multipart/form-data'];
            assert.ok(body?.schema, `${method} ${path} body schema`);
            if (json) assert.ok(hasExample(doc, json), `${method} ${path}: the body has an example`);
          }
          for (const [code, answer] of Object.entries(op.responses as Record<string, any>)) {
            if (!/^2/.test(code) || !answer.content) continue;
            for (const [type, media] of Object.entries(answer.content as Record<string, any>)) {
              if (media.schema?.format === 'binary') continue;
              assert.ok(hasExample(doc, media), `${method} ${path}: the ${code} answer as ${type} has an example`);
            }
          }
        }
      }
      assert.ok(operations >= 29, `${operations} operations documented`);
      const exportAnswer = doc.paths['/v1/events/{id}/attendees/export'].get.responses['200'].content;
      const csv = exportAnswer['text/csv'].schema.examples[0] as string;
      assert.match(csv, /^ticketId,orderId,name,email,/);
      assert.ok(csv.includes(`"'=HYPERLINK(""http://evil.example"",""Müller, Jürgen"")"`), 'the CSV example shows a neutralised formula');
      assert.equal(JSON.parse(exportAnswer['application/x-ndjson'].schema.examples[0].split('\n')[0]).name, 'Ada Lovelace');
      assert.ok(doc.paths['/v1/blend/results/{file}'].get.responses['200'].content['image/jpeg'], 'result images are documented as images');
      const order = doc.paths['/v1/events/{id}/orders'].post.requestBody.content['application/json'];
      assert.ok(doc.components.schemas.CreateOrderRequest.examples?.length, 'request bodies carry examples');
      assert.equal(order.schema.$ref, '#/components/schemas/CreateOrderRequest');
      assert.match(await (await api.fetch('/docs/')).text(), /swagger/i);
      const errors = await (await api.fetch('/docs/errors')).text();
      for (const code of ['sold_out', 'idempotency_key_reused', 'rate_limited']) assert.ok(errors.includes(`id="${code}"`));
    });
  });
}
