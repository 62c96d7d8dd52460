import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import { GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import AWSAccount from 's3rver/lib/models/account.js';
import { purgeExpiredBlendJobs } from '../src/blend/blend.service.js';
import type { BlendFailure } from '../src/blend/failures.js';
import { fetchImage } from '../src/blend/fetcher.js';
import { S3Store } from '../src/blend/storage-s3.js';
import { ConfigError, loadConfig } from '../src/config.js';
import type { AppError } from '../src/errors.js';
import { addressPolicy } from '../src/net/safe-http.js';
import { setPassword } from '../src/dashboard/password.service.js';
import { databaseWithAccount, ENGINES, fixtureFrames, freePort, freshStorage, onCleanup, startApp, type TestApp, until } from './helpers.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/blend/median-crowd');
const CLI = path.resolve(import.meta.dirname, '../src/cli.ts');
const BUCKET = 'montage-results';
// s3rver knows this key pair from here on; the secret must never show in answers or logs.
const ACCESS_KEY = 'MONTAGETESTKEY';
const SECRET = 'test-secret-5f1c9e2a7b3d';
AWSAccount.DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY, SECRET);
const CREDENTIALS = { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET };

/** A local server speaking the S3 protocol, with one bucket, stopped when the test ends. */
async function s3Server(t: TestContext): Promise<{ endpoint: string; env: Record<string, string>; client: S3Client }> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: BUCKET }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET } });
  onCleanup(t, () => fs.rmSync(directory, { recursive: true, force: true }));
  onCleanup(t, () => server.close());
  onCleanup(t, () => client.destroy());
  return { endpoint, client, env: { MONTAGE_STORAGE_URL: `s3://${BUCKET}/blend?endpoint=${endpoint}&region=us-east-1&pathStyle=true`, ...CREDENTIALS } };
}

async function completedJob(api: Pick<TestApp, 'fetch'>, key: string, images: string[]): Promise<any> {
  const started = await api.fetch('/v1/blend/start', { method: 'POST', key, json: { projectId: 's3', images, options: { blendType: 'mean', align: false, outputFormat: 'png' } } });
  assert.equal(started.status, 202, await started.clone().text());
  const { jobId } = await started.json();
  const job = await until(async () => {
    const body = await (await api.fetch(`/v1/blend/status/${jobId}`, { key })).json();
    return body.status === 'completed' || body.status === 'failed' ? body : null;
  }, 90_000, 'the blend job');
  assert.equal(job.status, 'completed', JSON.stringify(job.error));
  return job;
}

async function objectBytes(client: S3Client, key: string): Promise<Buffer | null> {
  try {
    const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return Buffer.from(await object.Body!.transformToByteArray());
  } catch (err) {
    if (err instanceof NoSuchKey) return null;
    throw err;
  }
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

for (const engine of ENGINES) {
  describe(`blend results in an S3-compatible object store (${engine})`, () => {
    test('the result lands in the bucket, resultUrl is a presigned GET of it, the dashboard gets Montage URLs, and purge deletes it', async (t) => {
      const s3 = await s3Server(t);
      const images = await fixtureFrames(t);
      const api = await startApp(t, await freshStorage(t, engine), { MONTAGE_ALLOW_PRIVATE_NETWORK: '1', ...s3.env }, { workers: true });
      const { key, accountId, email } = await api.account();
      const job = await completedJob(api, key, images);

      const objectKey = `blend/${accountId}/${job.jobId}.png`;
      const stored = await objectBytes(s3.client, objectKey);
      assert.ok(stored && stored.subarray(0, 4).equals(PNG), 'the PNG is in the bucket under the prefix and the account');
      assert.ok(!fs.existsSync(path.join(api.config.dataDir, 'results')), 'nothing under DATA_DIR');

      const url = new URL(job.resultUrl);
      assert.equal(`${url.origin}${url.pathname}`, `${s3.endpoint}/${BUCKET}/${objectKey}`, 'a URL of the store, not of Montage');
      assert.equal(url.searchParams.get('X-Amz-Algorithm'), 'AWS4-HMAC-SHA256');
      assert.match(url.searchParams.get('X-Amz-Credential') ?? '', new RegExp(`^${ACCESS_KEY}/`));
      assert.ok(!job.resultUrl.includes(SECRET));
      // Lifetime: signed at the start of the hour, until the hour a Montage URL would end.
      const signedAt = Date.parse(url.searchParams.get('X-Amz-Date')!.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'));
      assert.equal(signedAt % 3_600_000, 0);
      assert.equal(signedAt + Number(url.searchParams.get('X-Amz-Expires')) * 1000, Date.parse(job.resultUrlExpiresAt));
      assert.ok(Date.parse(job.resultUrlExpiresAt) >= Date.now() + api.config.resultUrlTtlMs - 3_600_000);
      const again = await (await api.fetch(`/v1/blend/status/${job.jobId}`, { key })).json();
      assert.equal(again.resultUrl, job.resultUrl, 'the same URL within the hour (browsers cache it)');
      const listed = await (await api.fetch('/v1/blend/jobs', { key })).json();
      assert.equal(listed.data[0].resultUrl, job.resultUrl);

      const fetched = await fetch(job.resultUrl);
      assert.equal(fetched.status, 200);
      assert.equal(fetched.headers.get('content-type'), 'image/png');
      assert.equal(fetched.headers.get('content-disposition'), `inline; filename="${job.jobId}.png"`);
      assert.ok(Buffer.from(await fetched.arrayBuffer()).equals(stored));

      // The dashboard (a signed-in session) gets Montage's own result route, which reads the object from the store.
      await setPassword(api.database.db, accountId, 'correct horse battery staple');
      const login = await api.fetch('/dashboard/api/login', { method: 'POST', json: { email, password: 'correct horse battery staple' } });
      assert.equal(login.status, 200);
      const cookie = login.headers.getSetCookie()[0]!.split(';')[0]!;
      const seen = await (await api.fetch(`/v1/blend/status/${job.jobId}`, { headers: { cookie } })).json();
      const own = new URL(seen.resultUrl);
      assert.equal(`${own.origin}${own.pathname}`, `${api.config.publicUrl}/v1/blend/results/${job.jobId}.png`);
      assert.equal((await (await api.fetch('/v1/blend/jobs', { headers: { cookie } })).json()).data[0].resultUrl, seen.resultUrl);
      const viaMontage = await fetch(`${api.url}${own.pathname}${own.search}`);
      assert.equal(viaMontage.status, 200);
      assert.equal(viaMontage.headers.get('content-type'), 'image/png');
      assert.ok(Buffer.from(await viaMontage.arrayBuffer()).equals(stored));

      const later = Date.now() + api.config.blend.retentionMs + 1000;
      assert.equal(await purgeExpiredBlendJobs(api.database.db, api.app.resultStore, api.config.blend.retentionMs, later), 1);
      assert.equal(await objectBytes(s3.client, objectKey), null, 'the object is deleted from the bucket');
      assert.equal((await fetch(job.resultUrl)).status, 404);
      assert.equal((await api.fetch(`/v1/blend/status/${job.jobId}`, { key })).status, 404);
    });

    test('montage blend downloads a presigned result from the store itself, not from the server it was given', async (t) => {
      const s3 = await s3Server(t);
      const api = await startApp(t, await freshStorage(t, engine), { ...s3.env }, { workers: true });
      const { key } = await api.account();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-cli-s3-'));
      onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
      const out = path.join(dir, 'result.png');
      const files = ['1.png', '2.png'].map((name) => path.join(FIXTURES, name));
      const cli = montage(t, 'blend', { MONTAGE_API_KEY: key }, ...files, '--type', 'mean', '--no-align', '--server', api.url, '--out', out, '--json');
      const code = await new Promise((r) => (cli.exited() ? r(cli.child.exitCode) : cli.child.once('exit', r)));
      assert.equal(code, 0, cli.output());
      const job = JSON.parse(cli.output().split('\n').find((line) => line.startsWith('{'))!);
      assert.ok(job.resultUrl.startsWith(`${s3.endpoint}/${BUCKET}/`), 'the job names a presigned URL of the store');
      assert.ok(fs.readFileSync(out).subarray(0, 4).equals(PNG), 'the result written is the PNG from the bucket');
    });
  });
}

describe('the S3 store', () => {
  test('a store that stops answering fails the call, and an upload read stalled mid-body fails within the fetch time-out', async (t) => {
    // A "store" that answers GETs with a head and a first byte of a long body, then nothing; other calls not at all.
    const sockets = new Set<import('node:net').Socket>();
    let closed = 0;
    const server = http.createServer((req, res) => {
      req.socket.once('close', () => closed++);
      if (req.method === 'GET' && req.url?.includes('stalled')) res.writeHead(200, { 'content-length': '1000', 'content-type': 'image/png' }).write('x');
    });
    server.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    onCleanup(t, () => new Promise<void>((r) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => r());
    }));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const config = loadConfig({ MONTAGE_STORAGE_URL: `s3://${BUCKET}?endpoint=${endpoint}&region=us-east-1&pathStyle=true`, ...CREDENTIALS });
    const quick = new S3Store(config.storage!, { connectMs: 1_000, requestMs: 300, idleMs: 300 });
    onCleanup(t, () => quick.close());
    await assert.rejects(quick.delete('results/silent.png'), (err: Error) => err.name === 'TimeoutError');
    await assert.rejects(quick.open('results/silent.png'), (err: AppError) => err.code === 'unavailable');

    // The upload's bytes stall past the fetch time-out (the store's own idle time-out is longer): the image fails, retryably, and the read is let go.
    const patient = new S3Store(config.storage!, { connectMs: 1_000, requestMs: 30_000, idleMs: 30_000 });
    onCleanup(t, () => patient.close());
    const before = closed;
    const key = `uploads/acc_stalled/upl_${'0'.repeat(26)}`;
    const limits = { ...config.blend, fetchTimeoutMs: 300 };
    await assert.rejects(fetchImage(key, 0, limits, addressPolicy(true), config.publicUrl, patient), (err: BlendFailure) => err.code === 'image_fetch_failed' && err.retryable && /within 0.3 s/.test(err.message));
    await until(() => closed > before, 5_000, 'the stalled read to be closed');
  });

  test('a stream is stored whole or not at all; a missing key opens as null; deletes are idempotent', async (t) => {
    const s3 = await s3Server(t);
    const store = new S3Store(loadConfig(s3.env).storage!);
    onCleanup(t, () => store.close());

    // 12 MiB of unknown length: a multipart upload (lib-storage parts of 5 MiB).
    const parts = Array.from({ length: 12 }, (_, i) => Buffer.alloc(1 << 20, i));
    await store.put('uploads/acc_1/upl_big', Readable.from(parts));
    const opened = await store.open('uploads/acc_1/upl_big');
    assert.equal(opened!.size, 12 << 20);
    const chunks: Buffer[] = [];
    for await (const chunk of opened!.stream) chunks.push(chunk as Buffer);
    assert.ok(Buffer.concat(chunks).equals(Buffer.concat(parts)));

    // A source that fails after 7 MiB: the put fails with the source's error, and no object appears.
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent++ < 7) setImmediate(() => this.push(Buffer.alloc(1 << 20, 7)));
        else setImmediate(() => this.destroy(new Error('the client went away')));
      },
    });
    await assert.rejects(store.put('uploads/acc_1/upl_broken', failing), /the client went away/);
    assert.equal(await store.open('uploads/acc_1/upl_broken'), null);
    assert.equal(await objectBytes(s3.client, 'blend/uploads/acc_1/upl_broken'), null);

    assert.equal(await store.open('uploads/acc_1/upl_never'), null);
    await store.delete('uploads/acc_1/upl_big');
    await store.delete('uploads/acc_1/upl_big');
    assert.equal(await store.open('uploads/acc_1/upl_big'), null);
    await assert.rejects(store.put('../escape', Buffer.from('x')), /invalid object key/);
  });

  test('a bad MONTAGE_STORAGE_URL is refused at start with what is wrong, never echoing it', () => {
    const refused = (url: string, env: Record<string, string> = CREDENTIALS) => {
      try {
        loadConfig({ ...env, MONTAGE_STORAGE_URL: url });
      } catch (err) {
        assert.ok(err instanceof ConfigError, String(err));
        assert.ok(!err.message.includes(SECRET) && !err.message.includes('hunter2'), err.message);
        return `${err.variable}: ${err.message.slice(err.variable.length + 2)}`;
      }
      assert.fail(`${url} was accepted`);
    };
    assert.match(refused('https://bucket/x'), /^MONTAGE_STORAGE_URL: must be s3:\/\/<bucket>/);
    assert.match(refused(`s3://${ACCESS_KEY}:hunter2@bucket`), /must not carry credentials: set AWS_ACCESS_KEY_ID/);
    assert.match(refused('s3://ab'), /bucket name must be 3 to 63/);
    assert.match(refused('s3://Bucket_Name'), /bucket name/);
    assert.match(refused('s3://bucket/a//b'), /prefix/);
    assert.match(refused('s3://bucket?endpont=http://x'), /unknown option "endpont" \(expected endpoint, region, pathStyle\)/);
    assert.match(refused('s3://bucket?endpoint=ftp://x'), /endpoint must be http\(s\):\/\/host\[:port\]/);
    assert.match(refused('s3://bucket?endpoint=http://user:hunter2@minio:9000'), /no credentials/);
    assert.match(refused('s3://bucket?pathStyle=yes'), /pathStyle must be true or false/);
    assert.match(refused('s3://bucket?region=EU%20West'), /region must be/);
    assert.match(refused('s3://bucket', { AWS_SECRET_ACCESS_KEY: SECRET }), /^AWS_ACCESS_KEY_ID: is not set, but AWS_SECRET_ACCESS_KEY is/);
    assert.match(refused('s3://bucket', { AWS_ACCESS_KEY_ID: ACCESS_KEY }), /^AWS_SECRET_ACCESS_KEY: is not set/);

    const good = loadConfig({ ...CREDENTIALS, AWS_REGION: 'eu-central-1', MONTAGE_STORAGE_URL: 's3://my.bucket/a/b/?endpoint=https://minio.internal:9000/' }).storage;
    assert.deepEqual(good, { bucket: 'my.bucket', prefix: 'a/b', endpoint: 'https://minio.internal:9000', region: 'eu-central-1', pathStyle: false, credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET } });
    assert.equal(loadConfig({}).storage, null);
  });

  test('serve and worker refuse to start on a store they cannot use, saying why and nothing secret', async (t) => {
    const s3 = await s3Server(t);
    const dead = await freePort();
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['serve', { MONTAGE_STORAGE_URL: `s3://${BUCKET}?endpoint=http://127.0.0.1:${dead}&pathStyle=true`, ...CREDENTIALS }, new RegExp(`^unavailable: The object store \\(s3://${BUCKET} at http://127.0.0.1:${dead}\\) cannot be used: it cannot be reached \\(ECONNREFUSED\\)$`, 'm')],
      ['worker', { MONTAGE_STORAGE_URL: `s3://no-such-bucket?endpoint=${s3.endpoint}&pathStyle=true`, ...CREDENTIALS }, /^unavailable: The object store \(s3:\/\/no-such-bucket at http:\/\/127\.0\.0\.1:\d+\) cannot be used: the bucket does not exist/m],
      ['serve', { MONTAGE_STORAGE_URL: `s3://${BUCKET}?endpoint=${s3.endpoint}&pathStyle=true`, AWS_ACCESS_KEY_ID: 'UNKNOWNKEY', AWS_SECRET_ACCESS_KEY: SECRET }, /cannot be used: access denied: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/],
    ];
    for (const [command, env, expected] of cases) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-s3-start-'));
      onCleanup(t, () => fs.rmSync(dataDir, { recursive: true, force: true }));
      const run = montage(t, command, { DATA_DIR: dataDir, PORT: '0', MONTAGE_DATABASE_WAIT: '0', ...env });
      const code = await new Promise((r) => run.child.once('exit', r));
      assert.equal(code, 1, run.output());
      assert.match(run.output(), expected);
      assert.ok(!run.output().includes(SECRET), run.output());
      assert.ok(!run.output().includes('NodeVersionSupportWarning'), 'the SDK warning is kept out');
    }
  });

  test('an API process and a worker process with different DATA_DIRs share only PostgreSQL and the bucket', { skip: ENGINES.includes('postgres') ? false : 'needs PostgreSQL' }, async (t) => {
    const s3 = await s3Server(t);
    const images = await fixtureFrames(t);
    const storage = await freshStorage(t, 'postgres');
    const { key } = await databaseWithAccount(t, storage.env);
    const port = await freePort();
    const shared = { DATABASE_URL: storage.env.DATABASE_URL!, MONTAGE_ALLOW_PRIVATE_NETWORK: '1', MONTAGE_LOG_LEVEL: 'info', ...s3.env };
    const dirs = ['api', 'worker'].map((role) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `montage-s3-${role}-`));
      onCleanup(t, () => fs.rmSync(dir, { recursive: true, force: true }));
      return dir;
    });
    const apiProcess = montage(t, 'serve', { ...shared, DATA_DIR: dirs[0]!, PORT: String(port) }, '--no-worker');
    const workerProcess = montage(t, 'worker', { ...shared, DATA_DIR: dirs[1]! });
    await until(() => apiProcess.output().includes('Montage is running') || apiProcess.exited(), 60_000, 'the API process');
    await until(() => workerProcess.output().includes('Montage worker running') || workerProcess.exited(), 60_000, 'the worker');
    assert.ok(!apiProcess.exited() && !workerProcess.exited(), `${apiProcess.output()}\n${workerProcess.output()}`);

    const base = `http://127.0.0.1:${port}`;
    const api = {
      fetch: (pathname: string, init: RequestInit & { key?: string; json?: unknown } = {}) =>
        fetch(`${base}${pathname}`, {
          method: init.method,
          headers: { authorization: `Bearer ${init.key}`, ...(init.json ? { 'content-type': 'application/json' } : {}) },
          body: init.json ? JSON.stringify(init.json) : undefined,
        }),
    };
    const job = await completedJob(api, key, images);
    const fetched = await fetch(job.resultUrl);
    assert.equal(fetched.status, 200);
    assert.ok(Buffer.from(await fetched.arrayBuffer()).subarray(0, 4).equals(PNG));
    for (const dir of dirs) assert.deepEqual(fs.readdirSync(dir), [], `nothing written under ${dir}`);
    assert.match(workerProcess.output(), /blend completed/);

    for (const proc of [apiProcess, workerProcess]) {
      proc.child.kill('SIGTERM');
      await new Promise((r) => (proc.exited() ? r(null) : proc.child.once('exit', r)));
      assert.ok(!proc.output().includes(SECRET), 'no secret in the output');
      assert.ok(!proc.output().includes('NodeVersionSupportWarning'), proc.output());
    }
  });
});

/** `montage <command>` from src/ in a process of its own, its output kept; killed when the test ends. */
function montage(t: TestContext, command: string, env: Record<string, string>, ...args: string[]): { child: ChildProcess; output: () => string; exited: () => boolean } {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MONTAGE_') && !k.startsWith('AWS_') && !['DATABASE_URL', 'DATA_DIR', 'PORT'].includes(k)));
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, command, ...args], { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  onCleanup(t, () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    return new Promise((r) => child.once('exit', r));
  });
  return { child, output: () => out, exited: () => child.exitCode !== null || child.signalCode !== null };
}
