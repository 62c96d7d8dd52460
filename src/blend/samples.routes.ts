import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { listSamples, SAMPLES_DIR, samplesBase } from './samples.js';

const SampleList = Type.Object({
  data: Type.Array(
    Type.Object({
      name: Type.String({ examples: ['crowd-1.jpg'] }),
      url: Type.String({ description: 'Absolute URL of the sample: give it to POST /v1/blend/start as is (read from disk, never fetched)' }),
      bytes: Type.Integer(),
      contentType: Type.String({ examples: ['image/jpeg'] }),
    }),
  ),
});

/** A day: the samples change only with the installation. */
const CACHE_CONTROL = 'public, max-age=86400';

/**
 * The sample images the server ships (samples.ts): public, no key, cacheable. `GET /samples/`
 * lists them with the absolute URLs a blend job can name; `GET /samples/<name>` serves one.
 */
export const sampleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const base = samplesBase(app.config.publicUrl);
  app.get(
    '/samples/',
    { schema: { hide: true, security: [], response: { 200: SampleList } } },
    async (_request, reply) => {
      reply.header('Cache-Control', CACHE_CONTROL);
      return { data: listSamples().map((s) => ({ ...s, url: `${base}${s.name}` })) };
    },
  );
  await app.register(fastifyStatic, {
    root: SAMPLES_DIR,
    prefix: '/samples/',
    decorateReply: false,
    wildcard: false,
    index: false,
    // Only the images: the folder's README stays out.
    allowedPath: (pathname) => listSamples().some((s) => `/${s.name}` === pathname),
    cacheControl: false,
    setHeaders: (res) => {
      res.header('Cache-Control', CACHE_CONTROL);
      res.header('X-Content-Type-Options', 'nosniff');
    },
  });
};
