import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { AppError } from '../errors.js';

/** Where `vite build --config web/scanner/vite.config.ts` puts the door's scanner page. */
export const SCANNER_DIR = path.resolve(import.meta.dirname, '../../dist/web/scanner');

// As the dashboard's, plus the camera (a MediaStream shown in a <video>), the service worker and the manifest.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob: mediastream:",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The scanner page at /scanner: static files, no session and no key (the page pairs with an API key
 * carried in the URL fragment, which browsers never send). Its service worker, at /scanner/sw.js,
 * controls /scanner and everything under it, so the page opens without a network.
 */
export const scannerRoutes: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers({
      'Content-Security-Policy': CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'X-Frame-Options': 'DENY',
      'Permissions-Policy': 'camera=(self), microphone=(), geolocation=()',
    });
    done();
  });

  if (!fs.existsSync(path.join(SCANNER_DIR, 'index.html'))) {
    const unbuilt = () => {
      throw new AppError('unavailable', 'The scanner page is not built: run npm run build.');
    };
    app.get('/scanner', { schema: { hide: true } }, unbuilt);
    app.get('/scanner/*', { schema: { hide: true } }, unbuilt);
    return;
  }

  await app.register(fastifyStatic, {
    root: SCANNER_DIR,
    prefix: '/scanner/',
    wildcard: false,
    index: false,
    setHeaders: (res, file) => {
      if (file.endsWith(`${path.sep}sw.js`)) res.header('Service-Worker-Allowed', '/scanner');
      res.header('Cache-Control', file.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  const page = (reply: FastifyReply) => reply.header('Cache-Control', 'no-cache').sendFile('index.html');
  app.get('/scanner', { schema: { hide: true } }, (_request, reply) => page(reply));
  app.get('/scanner/', { schema: { hide: true } }, (_request, reply) => page(reply));
  app.get('/scanner/*', { schema: { hide: true } }, () => {
    throw new AppError('not_found', 'No such file.');
  });
};
