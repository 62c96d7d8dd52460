import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { canonicalEmail, createAccount } from '../accounts/accounts.service.js';
import { AppError } from '../errors.js';
import { problemResponses } from '../http/problem.js';
import { LoginLimits } from './login-limits.js';
import { changePassword, checkCredentials, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './password.service.js';
import { checkCsrf, endSession, findSession, type Session, setSessionCookie, startSession } from './sessions.service.js';

/** Where `vite build` puts the page (dist/dashboard holds this module's own compiled code). */
export const DASHBOARD_DIR = path.resolve(import.meta.dirname, '../../dist/web/dashboard');

// Scripts, styles and requests only from this origin; no framing, no plugins, no inline code.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  // Input thumbnails are the client's own http(s) URLs on other origins: images only, fetched without a Referer.
  "img-src 'self' data: blob: http: https:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const Credentials = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 320 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);

const PasswordChange = Type.Object(
  {
    currentPassword: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
    newPassword: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH }),
  },
  { additionalProperties: false },
);

const SessionSchema = Type.Object({
  accountId: Type.String(),
  email: Type.String(),
  plan: Type.String(),
  accountCreatedAt: Type.String(),
  csrfToken: Type.String({ description: 'Send as X-CSRF-Token on every request that changes something.' }),
  expiresAt: Type.String(),
});

const present = (session: Session) => ({
  accountId: session.accountId,
  email: session.email,
  plan: session.plan,
  accountCreatedAt: new Date(session.accountCreatedAt).toISOString(),
  csrfToken: session.csrfToken,
  expiresAt: new Date(session.expiresAt).toISOString(),
});

/** Sign-in, sign-out and sign-up under /dashboard/api, and the page itself under /dashboard. */
export const dashboardRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const limits = new LoginLimits(app.config);
  app.addHook('onClose', () => limits.close());
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers({ 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'X-Frame-Options': 'DENY' });
    done();
  });

  async function signIn(reply: FastifyReply, account: { id: string; email: string; plan: string; createdAt: number }) {
    const { token, session } = await startSession(app.db, app.config, account);
    setSessionCookie(reply, app.config, token, app.config.sessionTtlMs);
    return reply.header('Cache-Control', 'no-store').send(present(session));
  }

  const api = { tags: ['dashboard'], hide: true } as const;

  app.post(
    '/dashboard/api/login',
    { schema: { ...api, body: Credentials, response: { 200: SessionSchema, ...problemResponses } } },
    async (request, reply) => {
      const email = canonicalEmail(request.body.email);
      await limits.attempt(email, request.ip, (seconds) => reply.header('Retry-After', String(seconds)));
      const account = await checkCredentials(app.db, email, request.body.password);
      await limits.succeeded(email, request.ip);
      return signIn(reply, account);
    },
  );

  app.post(
    '/dashboard/api/signup',
    { schema: { ...api, body: Credentials, response: { 200: SessionSchema, ...problemResponses } } },
    async (request, reply) => {
      if (!app.config.dashboardSignup) throw new AppError('signup_disabled', 'This server does not take sign-ups; ask its operator for an account.');
      await limits.attempt(canonicalEmail(request.body.email), request.ip, (seconds) => reply.header('Retry-After', String(seconds)));
      const account = await createAccount(app.db, { email: request.body.email, password: request.body.password, plan: 'free' });
      return signIn(reply, account);
    },
  );

  app.get('/dashboard/api/session', { schema: { ...api, response: { 200: SessionSchema, ...problemResponses } } }, async (request, reply) => {
    const session = await findSession(app.db, request);
    // The sign-in page learns from this answer whether to offer sign-up.
    if (!session) throw new AppError('unauthorized', 'Not signed in.', { signupAllowed: app.config.dashboardSignup });
    return reply.header('Cache-Control', 'no-store').send(present(session));
  });

  app.post('/dashboard/api/logout', { schema: { ...api, response: problemResponses } }, async (request, reply) => {
    const session = await findSession(app.db, request);
    if (session) {
      checkCsrf(request, session);
      await endSession(app.db, session);
    }
    setSessionCookie(reply, app.config, '', 0);
    return reply.code(204).send();
  });

  app.post(
    '/dashboard/api/password',
    { schema: { ...api, body: PasswordChange, response: problemResponses } },
    async (request, reply) => {
      const session = await findSession(app.db, request);
      if (!session) throw new AppError('unauthorized', 'Not signed in.');
      checkCsrf(request, session);
      // A stolen session must not become a way round the sign-in limits to guess the password.
      await limits.attempt(session.email, request.ip, (seconds) => reply.header('Retry-After', String(seconds)));
      await changePassword(app.db, session, request.body.currentPassword, request.body.newPassword);
      await limits.succeeded(session.email, request.ip);
      return reply.code(204).send();
    },
  );

  app.all('/dashboard/api/*', { schema: { hide: true } }, (request) => {
    throw new AppError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`);
  });

  await servePage(app);
};

/** The built single-page app: hashed assets cached for good, index.html for every client route. */
async function servePage(app: FastifyInstance): Promise<void> {
  if (!fs.existsSync(path.join(DASHBOARD_DIR, 'index.html'))) {
    app.get('/dashboard', { schema: { hide: true } }, () => {
      throw new AppError('unavailable', 'The dashboard is not built: run npm run build.');
    });
    app.get('/dashboard/*', { schema: { hide: true } }, () => {
      throw new AppError('unavailable', 'The dashboard is not built: run npm run build.');
    });
    return;
  }
  await app.register(fastifyStatic, {
    root: DASHBOARD_DIR,
    prefix: '/dashboard/',
    wildcard: false,
    index: false,
    setHeaders: (res, file) => {
      res.header('Cache-Control', file.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  const page = (url: string, reply: FastifyReply) => {
    // A missing asset is a 404, not the page: a stale tab asking for an old bundle must fail loudly.
    if (/\.[a-z0-9]+$/i.test(url.split('?')[0]!)) throw new AppError('not_found', 'No such file.');
    return reply.header('Cache-Control', 'no-cache').sendFile('index.html');
  };
  // API keys moved into Settings; links to the old page still land there.
  app.get('/dashboard/keys', { schema: { hide: true } }, (request, reply) => {
    const query = request.url.indexOf('?');
    return reply.redirect(`/dashboard/settings/api-keys${query >= 0 ? request.url.slice(query) : ''}`, 301);
  });
  app.get('/dashboard', { schema: { hide: true } }, (request, reply) => page(request.url, reply));
  app.get('/dashboard/*', { schema: { hide: true } }, (request, reply) => page(request.url, reply));
}
