/**
 * /docs/errors explains every code of the registry (src/errors.ts): what happened and what to do,
 * and each problem's `type` leads to its code's section.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BLEND_FAILURES } from '../src/blend/failures.js';
import { ERROR_CODES } from '../src/errors.js';
import { ENGINES, freshStorage, problem, startApp } from './helpers.js';

const codes = Object.entries(ERROR_CODES);

/** The text a reader sees: tags dropped, entities decoded, spaces collapsed. */
const visible = (html: string) =>
  html
    .replace(/<[^>]+>/g, '')
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/\s+/g, ' ')
    .trim();
const plain = (text: string) => text.replace(/`/g, '').replace(/\s+/g, ' ');

test('every code says what happened and what to do, in its own words', () => {
  const seen = new Map<string, string>();
  for (const [code, { title, happened, next }] of codes) {
    for (const [field, text] of [['happened', happened], ['next', next]] as const) {
      assert.ok(text.length >= 40, `${code}.${field} is a sentence or two, not a word: ${JSON.stringify(text)}`);
      assert.match(text, /^[A-Z`].*[.)]$/s, `${code}.${field} is written as a sentence`);
      assert.ok(!text.toLowerCase().startsWith(title.toLowerCase()), `${code}.${field} does more than repeat the title`);
      assert.ok(!/\b(TODO|TBD|FIXME|lorem)\b/i.test(text), `${code}.${field} is written`);
      const other = seen.get(text);
      assert.equal(other, undefined, `${code}.${field} is not copied from ${other}`);
      seen.set(text, `${code}.${field}`);
    }
    assert.notEqual(happened, next);
  }
  // A failed blend job's codes (its status record's error.code) are explained the same way.
  for (const [code, { happened, next }] of Object.entries(BLEND_FAILURES)) {
    for (const [field, text] of [['happened', happened], ['next', next]] as const) {
      assert.ok(text.length >= 40, `blend ${code}.${field} is a sentence or two`);
      assert.match(text, /^[A-Z`].*[.)]$/s, `blend ${code}.${field} is written as a sentence`);
      const other = seen.get(text);
      assert.equal(other, undefined, `blend ${code}.${field} is not copied from ${other}`);
      seen.set(text, `blend ${code}.${field}`);
    }
  }
});

for (const engine of ENGINES) {
  describe(`/docs/errors (${engine})`, () => {
    test('the page has a section per code with both texts, and a problem’s type anchors to it', async (t) => {
      const api = await startApp(t, await freshStorage(t, engine));
      const res = await api.fetch('/docs/errors');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      const html = await res.text();

      const sections = [...html.matchAll(/<section id="([a-z_]+)">([^]*?)<\/section>/g)];
      assert.deepEqual(sections.map((m) => m[1]), codes.map(([code]) => code), 'one section per code, in the registry’s order');
      for (const [, code, body] of sections) {
        const { status, title, happened, next } = ERROR_CODES[code as keyof typeof ERROR_CODES];
        const text = visible(body!);
        assert.ok(text.startsWith(`${code} ${status} ${title}`), `${code}: heading: ${text.slice(0, 80)}`);
        assert.ok(text.includes(`What happened. ${plain(happened)}`), `${code}: what happened`);
        assert.ok(text.includes(`What to do. ${plain(next)}`), `${code}: what to do`);
        assert.ok(html.includes(`href="#${code}"`), `${code}: listed in the index`);
      }
      assert.ok(html.includes('<code>X-CSRF-Token</code>'), 'backticked words are set as code');
      const failures = [...html.matchAll(/<section id="blend-([a-z_]+)">([^]*?)<\/section>/g)];
      assert.deepEqual(failures.map((m) => m[1]), Object.keys(BLEND_FAILURES), 'one section per blend failure code');
      for (const [, code, body] of failures) {
        const { happened, next } = BLEND_FAILURES[code as keyof typeof BLEND_FAILURES];
        const text = visible(body!);
        assert.ok(text.includes(`What happened. ${plain(happened)}`) && text.includes(`What to do. ${plain(next)}`), `blend ${code}`);
      }

      // Real problems: their type resolves to this page, at their code's section.
      const unknown = await problem(await api.fetch('/v1/account', { headers: { authorization: 'Bearer nope' } }), 401, 'unauthorized');
      const { key } = await api.account();
      const missing = await problem(await api.fetch('/v1/events/evt_00000000000000000000000000', { key }), 404, 'not_found');
      for (const body of [unknown, missing]) {
        const target = new URL(body.type, api.url);
        assert.equal(target.pathname, '/docs/errors');
        assert.ok(html.includes(`<section id="${target.hash.slice(1)}">`), `${body.type} has a section`);
      }
    });
  });
}
