import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import spectralCore, { type RulesetDefinition } from '@stoplight/spectral-core';
import owaspRuleset from '@stoplight/spectral-owasp-ruleset';
import { oas } from '@stoplight/spectral-rulesets';
import { WEBHOOK_EVENTS } from '../src/webhooks/outbox.js';
import { ENGINES, freshStorage, problem, startApp } from './helpers.js';

type Json = Record<string, any>;

const { Spectral } = spectralCore;
const API_DOC = path.resolve(import.meta.dirname, '../docs/api.md');
const RATE_LIMIT_RULE = 'owasp:api4:2023-rate-limit';
/** POSTs whose answer holds a secret, which an idempotency store would keep: they take no Idempotency-Key. */
const NOT_IDEMPOTENT = ['createApiKey', 'createWebhookSubscription', 'rotateAccountWebhookSecret', 'rotateWebhookSubscriptionSecret', 'createBlendUpload'];
/** Request bodies that are not JSON: an image upload is multipart/form-data. */
const BODY_TYPES: Record<string, string> = { createBlendUpload: 'multipart/form-data' };
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

/**
 * The OWASP rule set, with its rate-limit rule asking for *any* of the header families it names
 * instead of exactly one (`oneOf`): Montage sends both X-RateLimit-* and the IETF RateLimit, and the
 * document says so (docs/api.md explains). Everything else is the rule set as published.
 */
function owaspAsRun(): RulesetDefinition {
  const published = owaspRuleset as unknown as { rules: Record<string, Json> };
  const rule = published.rules[RATE_LIMIT_RULE]!;
  const options = rule.then.functionOptions.schema;
  assert.ok(Array.isArray(options.oneOf), 'the published rate-limit rule still asks for oneOf the header families');
  const { oneOf, ...rest } = options;
  return {
    extends: [owaspRuleset as unknown as RulesetDefinition],
    rules: { [RATE_LIMIT_RULE]: { ...rule, then: { ...rule.then, functionOptions: { schema: { ...rest, anyOf: oneOf } } } } },
  } as RulesetDefinition;
}

async function lint(doc: Json, ruleset: RulesetDefinition) {
  const spectral = new Spectral();
  spectral.setRuleset(ruleset as never);
  return spectral.run(JSON.stringify(doc));
}

const pointer = (segments: ReadonlyArray<string | number>) => segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/**
 * Spectral reports a finding at the place it was found in the resolved document: one schema used
 * in ten places is ten findings. This is the place it is written, following `$ref`s, so each is counted once.
 */
function writtenAt(doc: Json, segments: ReadonlyArray<string | number>): string {
  let at: Array<string | number> = [];
  let node: any = doc;
  for (const segment of segments) {
    if (node && typeof node.$ref === 'string' && node.$ref.startsWith('#/')) {
      at = node.$ref.slice(2).split('/').map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
      node = at.reduce((n: any, k) => n?.[k], doc);
    }
    at.push(segment);
    node = node?.[segment];
  }
  return pointer(at);
}

/** `*` is one segment of a JSON pointer, `**` any number of them. */
const globToRegExp = (glob: string) =>
  new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*\*/g, '\u0000').replace(/\*/g, '[^/]+').replace(/\u0000/g, '.*')}$`);

interface Row {
  rule: string;
  where: string;
  count: number;
}

/** The table of docs/api.md, section "What the OWASP rule set says and why". */
function documentedRows(): Row[] {
  const text = fs.readFileSync(API_DOC, 'utf8');
  const start = text.indexOf('## What the OWASP rule set says and why');
  assert.ok(start >= 0, 'docs/api.md has the section');
  const end = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  const rows = [...section.matchAll(/^\| `(owasp:[^`]+)` \| `([^`]+)` \| (\d+) \|/gm)].map(([, rule, where, count]) => ({ rule: rule!, where: where!, count: Number(count) }));
  assert.ok(rows.length > 0, 'the section has its table');
  return rows;
}

/** Every operation of the document, with its path and method. */
function operations(doc: Json): Array<{ path: string; method: string; op: Json }> {
  return Object.entries<Json>(doc.paths).flatMap(([p, item]) =>
    Object.entries<Json>(item)
      .filter(([method]) => HTTP_METHODS.has(method))
      .map(([method, op]) => ({ path: p, method, op })),
  );
}

const authenticated = (doc: Json, op: Json) => (op.security ?? doc.security ?? []).length > 0;

for (const engine of ENGINES) {
  describe(`the OpenAPI document as outside tools read it (${engine})`, () => {
    test('what a client generator needs: unique operationIds, named JSON bodies, problem+json errors, typed webhooks', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const res = await api.fetch('/openapi.json');
      assert.equal(res.status, 200);
      const doc = (await res.json()) as Json;
      assert.equal(doc.openapi, '3.1.0');

      const ops = operations(doc);
      const ids = ops.map(({ op }) => op.operationId);
      for (const { path: p, method, op } of ops) assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${method} ${p} has a camelCase operationId`);
      const webhookIds = Object.values<Json>(doc.webhooks ?? {}).map((item) => item.post?.operationId);
      assert.equal(new Set([...ids, ...webhookIds]).size, ids.length + webhookIds.length, 'operationIds are unique');
      assert.ok(ids.includes('listEvents') && ids.includes('checkIn') && ids.includes('undoCheckIn') && ids.includes('getBlendStatus'));

      for (const { path: p, method, op } of ops) {
        const where = `${method} ${p}`;
        const bodyType = BODY_TYPES[op.operationId] ?? 'application/json';
        if (op.requestBody) assert.match(op.requestBody.content[bodyType]?.schema?.$ref ?? '', /^#\/components\/schemas\/\w+$/, `${where}: the request body is a component`);
        for (const [status, response] of Object.entries<Json>(op.responses)) {
          const types = Object.keys(response.content ?? {});
          if (/^2/.test(status) && types.includes('application/json')) {
            assert.match(response.content['application/json'].schema.$ref ?? '', /^#\/components\/schemas\/\w+$/, `${where} ${status} is a $ref`);
          }
          if (/^[45]/.test(status)) {
            assert.deepEqual(types, ['application/problem+json'], `${where} ${status} is a problem, and only that`);
            assert.equal(response.content['application/problem+json'].schema.$ref, '#/components/schemas/Problem', `${where} ${status}`);
            assert.ok(response.headers?.['X-Request-Id'], `${where} ${status} declares X-Request-Id`);
          }
          if (status === '429' || status === '503') assert.ok(response.headers?.['Retry-After'], `${where} ${status} declares Retry-After`);
        }
        if (authenticated(doc, op)) {
          for (const status of ['400', '401', '403', '429', '500']) assert.ok(op.responses[status], `${where} declares ${status}`);
          const success = Object.entries<Json>(op.responses).find(([status]) => /^2/.test(status))![1];
          for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy']) {
            assert.ok(success.headers?.[name], `${where} declares ${name}`);
          }
        }
        const idempotencyKey = (op.parameters ?? []).some((p: Json) => p.in === 'header' && p.name === 'Idempotency-Key');
        assert.equal(idempotencyKey, method === 'post' && authenticated(doc, op) && !NOT_IDEMPOTENT.includes(op.operationId), `${where}: Idempotency-Key where it is honoured`);
      }
      for (const { op } of ops.filter(({ op: o }) => ['createEvent', 'createOrder', 'checkIn', 'startBlend'].includes(o.operationId))) {
        const created = op.responses['201'] ?? op.responses['202'];
        assert.ok(created.headers?.Location, `${op.operationId} declares Location`);
      }
      assert.ok(doc.paths['/v1/events'].get.responses['200'].headers.Link, 'a list declares Link');

      // Webhooks: one typed entry per event, and the event names an enum wherever a client sends or reads them.
      assert.deepEqual(Object.keys(doc.webhooks).sort(), [...WEBHOOK_EVENTS].sort());
      for (const event of WEBHOOK_EVENTS) {
        const ref = doc.webhooks[event].post.requestBody.content['application/json'].schema.$ref as string;
        const body = doc.components.schemas[ref.replace('#/components/schemas/', '')];
        assert.deepEqual(body.properties.event.enum ?? [body.properties.event.const], [event], `${event}: the body names its event`);
        assert.match(body.properties.data.$ref, /^#\/components\/schemas\/\w+$/, `${event}: typed data`);
      }
      const names = [...WEBHOOK_EVENTS, '*'].sort();
      const request = doc.components.schemas.CreateWebhookSubscriptionRequest;
      assert.deepEqual([...request.properties.events.items.enum].sort(), names);
      assert.deepEqual([...doc.components.schemas.WebhookSubscription.properties.events.items.enum].sort(), names);
      assert.deepEqual([...doc.components.schemas.WebhookEventName.enum].sort(), [...WEBHOOK_EVENTS].sort());

      // And the server sends what the document says: problem+json, before and after authentication.
      await problem(await api.fetch('/v1/events'), 401, 'unauthorized');
      const { key } = await api.account();
      await problem(await api.fetch('/v1/events?limit=0', { key }), 400, 'invalid_request');
      await problem(await api.fetch('/v1/events/evt_00000000000000000000000000', { key }), 404, 'not_found');
    });

    test('Spectral: no spectral:oas error; OWASP: the rate-limit, 401 and 429 rules hold, the rest is what docs/api.md lists', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const doc = (await (await api.fetch('/openapi.json')).json()) as Json;

      const oasFindings = await lint(doc, oas as RulesetDefinition);
      const oasErrors = oasFindings.filter((f) => f.severity === 0);
      assert.deepEqual(oasErrors.map((f) => `${f.code} ${f.path.join('/')}`), [], 'spectral:oas errors');
      t.diagnostic(`spectral:oas: ${oasErrors.length} errors, ${oasFindings.filter((f) => f.severity === 1).length} warnings`);

      const findings = await lint(doc, owaspAsRun());
      const authenticatedOps = operations(doc).filter(({ op }) => authenticated(doc, op));
      for (const rule of ['owasp:api8:2023-define-error-responses-401', 'owasp:api4:2023-rate-limit-responses-429']) {
        const onAuthenticated = findings.filter((f) => f.code === rule && authenticatedOps.some(({ path: p, method }) => f.path[1] === p && f.path[2] === method));
        assert.deepEqual(onAuthenticated.map((f) => f.path.join('/')), [], `${rule} holds on every authenticated operation`);
      }

      // Each error once, where it is written; each must fall under a row of the documented table.
      const errors = [...new Set(findings.filter((f) => f.severity === 0).map((f) => `${f.code} ${writtenAt(doc, f.path)}`))];
      const rows = documentedRows().map((row) => ({ ...row, pattern: globToRegExp(row.where), found: 0 }));
      const undocumented: string[] = [];
      for (const error of errors) {
        const [code, at] = error.split(' ') as [string, string];
        const row = rows.find((r) => r.rule === code && r.pattern.test(at));
        if (row) row.found++;
        else undocumented.push(error);
      }
      assert.deepEqual(undocumented.slice(0, 20), [], `${undocumented.length} OWASP errors that docs/api.md does not list`);
      assert.deepEqual(
        rows.map((r) => `| \`${r.rule}\` | \`${r.where}\` | ${r.found} |`),
        rows.map((r) => `| \`${r.rule}\` | \`${r.where}\` | ${r.count} |`),
        'the counts of docs/api.md are the counts found',
      );
      // What a client sends is bounded everywhere: no error left in a request body or a parameter.
      assert.deepEqual(errors.filter((e) => /\/components\/schemas\/\w+Request\/|\/parameters\//.test(e)), [], 'request bodies and parameters');
      // The rate-limit rule is left only where no budget is spent.
      const noBudget = ['/paths/*/*/responses/401/headers', '/paths/*/*/responses/403/headers', '/paths/~1healthz/**', '/paths/~1readyz/**', '/paths/~1v1~1blend~1results~1{file}/**', '/paths/~1v1~1payments~1stripe~1webhook~1{accountId}/**'];
      for (const row of rows.filter((r) => r.rule === RATE_LIMIT_RULE)) assert.ok(noBudget.includes(row.where), `${RATE_LIMIT_RULE} at ${row.where}`);
      t.diagnostic(`OWASP: ${errors.length} errors where they are written (${findings.filter((f) => f.severity === 0).length} as Spectral counts them), ${findings.filter((f) => f.severity === 1).length} warnings`);
    });
  });
}
