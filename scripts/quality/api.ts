import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { createAccount, createApiKey } from '../../src/accounts/accounts.service.js';
import { buildApp } from '../../src/app.js';
import type { RgbImage } from '../../src/blend/engine/image/image.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { startWorkers } from '../../src/workers.js';

/**
 * The real API for the quality reports: the server with its job workers on the storage `env` names
 * (DATA_DIR, and DATABASE_URL for PostgreSQL), a business account's key, and a loopback file server
 * from which the server fetches the frames, as it fetches a client's URLs.
 */

export async function decode(bytes: Buffer | string): Promise<RgbImage> {
  const { data, info } = await sharp(bytes).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data: new Uint8Array(data.buffer, data.byteOffset, data.length) };
}

export interface BlendOptions {
  blendType: string;
  preserveBackground?: boolean;
  align?: boolean;
}

export interface QualityApi {
  /** Runs one job on the files at `urls` and returns its finished status record and its result (PNG, decoded). */
  blend(urls: string[], options: BlendOptions): Promise<{ job: Record<string, any>; image: RgbImage }>;
  /** Serves each buffer at a loopback URL until `forget` is called with those URLs. */
  serve(files: Buffer[]): string[];
  forget(urls: string[]): void;
  close(): Promise<void>;
}

/** Longer than the server's own time limit and its retries: a job still unfinished then is reported, not waited for. */
const LONGEST_JOB_MS = 10 * 60_000;
const POLL_MS = 200;

/** Thrown for a job that ended `failed`: the API's error code and message. */
export class JobFailed extends Error {
  constructor(readonly code: string, message: string) {
    super(`${code}: ${message}`);
  }
}

export async function startQualityApi(env: Record<string, string>): Promise<QualityApi> {
  const served = new Map<string, Buffer>();
  let counter = 0;
  const files = http.createServer((req, res) => {
    const body = served.get((req.url ?? '/').split('?')[0]!);
    if (!body) return res.writeHead(404).end();
    res.writeHead(200).end(body);
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;

  // The plan's rate limit counts status polls with the jobs (1000 an hour for Business): a matrix of
  // a few hundred jobs would wait out the hour, so this server's Business plan is given room.
  const config = loadConfig({ PORT: '0', MONTAGE_LOG_LEVEL: 'silent', MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_LIMITS_BUSINESS: 'blendPerHour=1000000', ...env });
  const database = openDatabase(config);
  await migrateToLatest(database);
  const app = await buildApp(config, { database, logger: false });
  const api = await app.listen({ port: 0, host: '127.0.0.1' });
  // What goes wrong inside a job (an unexpected error is retried, and shows in the status only as internal_error) is printed.
  const quiet = { info() {}, warn: (o: unknown, m?: string) => console.error('warn', m, o), error: (o: unknown, m?: string) => console.error('error', m, o) };
  const workers = startWorkers(database, config, quiet);
  const account = await createAccount(database.db, { email: `quality.${Date.now()}@example.com`, plan: 'business' });
  const { key } = await createApiKey(database.db, { id: account.id, plan: 'business' }, {});
  const authorization = `Bearer ${key}`;

  return {
    async blend(urls, options) {
      const res = await fetch(`${api}/v1/blend/start`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ projectId: 'quality', images: urls, options: { preserveBackground: false, ...options, outputFormat: 'png' } }),
      });
      if (res.status !== 202) throw new Error(`blend/start: ${res.status} ${await res.text()}`);
      const { jobId } = (await res.json()) as { jobId: string };
      const deadline = Date.now() + LONGEST_JOB_MS;
      for (;;) {
        // Polls count against the account's rate limit like any request: 5 a second stays well inside
        // it, and a 429 is waited out as its Retry-After says (read as a status, it would poll forever).
        await new Promise((r) => setTimeout(r, POLL_MS));
        const polled = await fetch(`${api}/v1/blend/status/${jobId}`, { headers: { authorization } });
        if (polled.status === 429) {
          await new Promise((r) => setTimeout(r, 1000 * Number(polled.headers.get('retry-after') ?? 1)));
          continue;
        }
        if (polled.status !== 200) throw new Error(`blend/status: ${polled.status} ${await polled.text()}`);
        const job = (await polled.json()) as Record<string, any>;
        if (job.status === 'completed') {
          // PUBLIC_URL names port 0 here (the port is chosen at listen): fetch the same path from the server.
          const result = new URL(job.resultUrl as string);
          return { job, image: await decode(Buffer.from(await (await fetch(`${api}${result.pathname}${result.search}`)).arrayBuffer())) };
        }
        if (job.status === 'failed') throw new JobFailed(job.error.code, job.error.message);
        if (Date.now() > deadline) throw new JobFailed('not_finished', `still ${job.status} after ${LONGEST_JOB_MS / 1000} s`);
      }
    },
    serve(buffers) {
      return buffers.map((b, i) => {
        const name = `/f${counter++}-${i}`;
        served.set(name, b);
        return `${base}${name}`;
      });
    },
    forget(urls) {
      for (const url of urls) served.delete(new URL(url).pathname);
    },
    async close() {
      await app.close();
      await workers.stop(1000);
      await database.close();
      files.close();
    },
  };
}
