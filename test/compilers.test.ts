/**
 * Response serializers and request validators are compiled once per distinct schema in a process
 * (http/serializers.ts, http/validation.ts; each when first used): a second app of the same routes compiles nothing new,
 * and routes whose schemas differ keep their own (a shared cache never answers with another
 * schema's fields or rules).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type } from 'typebox';
import { compileEverySerializer, serializersCompiled } from '../src/http/serializers.js';
import { compileEveryValidator, validatorsCompiled } from '../src/http/validation.js';
import { ENGINES, freshStorage, problem, startApp } from './helpers.js';

const routes = async (app: any) => {
  const row = { a: 'one', b: 'two', secret: 'not in any schema' };
  app.get('/test/narrow', { schema: { response: { 200: Type.Object({ a: Type.String() }) } } }, async () => row);
  app.get('/test/wide', { schema: { response: { 200: Type.Object({ a: Type.String(), b: Type.String() }) } } }, async () => row);
  app.get('/test/count', { schema: { querystring: Type.Object({ n: Type.Integer({ minimum: 1, maximum: 5 }) }) } }, async (request: any) => ({ n: request.query.n }));
  app.get('/test/other', { schema: { querystring: Type.Object({ n: Type.Integer({ minimum: 10 }) }) } }, async (request: any) => ({ n: request.query.n }));
};

for (const engine of ENGINES) {
  describe(`compiled once per schema (${engine})`, () => {
    test('a second app compiles no new serializer or validator; different schemas keep their own fields and rules', async (t) => {
      const first = await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: routes });
      const counts = [serializersCompiled(), validatorsCompiled()];
      const second = await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: routes });
      assert.deepEqual([serializersCompiled(), validatorsCompiled()], counts);
      for (const api of [first, second]) {
        const { key } = await api.account();
        const get = async (path: string) => (await api.fetch(path, { key })).json();
        assert.deepEqual(await get('/v1/test/narrow'), { a: 'one' });
        assert.deepEqual(await get('/v1/test/wide'), { a: 'one', b: 'two' });
        assert.deepEqual(await get('/v1/test/count?n=3'), { n: 3 });
        assert.deepEqual(await get('/v1/test/other?n=30'), { n: 30 });
        await problem(await api.fetch('/v1/test/count?n=30', { key }), 400, 'invalid_request');
        await problem(await api.fetch('/v1/test/other?n=3', { key }), 400, 'invalid_request');
      }
    });

    test("every response and request schema of the API builds (serializers and validators are built at their route's first use, so this is where a bad one shows)", async (t) => {
      await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: routes });
      assert.ok(serializersCompiled() > 50, `${serializersCompiled()} serializers`);
      assert.ok(validatorsCompiled() > 50, `${validatorsCompiled()} validators`);
      compileEverySerializer();
      compileEveryValidator();
    });

    test('two apps whose body schemas share an $id but not their rules (limits from their config) each validate by their own', async (t) => {
      const withLimit = (max: number) => async (app: any) => {
        const body = Type.Object({ name: Type.String({ maxLength: max }) }, { $id: 'SameIdDifferentLimits', additionalProperties: false });
        app.post('/test/named', { schema: { body } }, async (request: any) => ({ name: request.body.name }));
      };
      const apps = [await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: withLimit(3) }), await startApp(t, await freshStorage(t, engine), {}, { extraRoutes: withLimit(6) })];
      for (const [api, limit] of [[apps[0]!, 3], [apps[1]!, 6]] as const) {
        const { key } = await api.account();
        const post = (name: string) => api.fetch('/v1/test/named', { key, method: 'POST', json: { name } });
        assert.deepEqual(await (await post('x'.repeat(limit))).json(), { name: 'x'.repeat(limit) });
        await problem(await post('x'.repeat(limit + 1)), 400, 'invalid_request');
      }
    });
  });
}
