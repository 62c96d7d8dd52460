import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * `montage blend FILES... --type TYPE`: a client of a running server's API (docs/blend.md,
 * "Uploads"). Each file is uploaded (one request each, retried whole when the network or the server
 * fails), the job started and waited for, and its result written. Progress goes to stderr; stdout
 * holds the file written (or, with --json, the job).
 */
export interface BlendCommandOptions {
  type: string;
  server: string;
  key: string;
  out?: string;
  align: boolean;
  json: boolean;
}

/** How `montage blend` ended, when not with success: its exit status (docs/blend.md lists them) and one line for stderr. */
export class CommandFailure extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Exit status of a job that ran and failed (its error code on stderr). */
export const JOB_FAILED = 3;

const ATTEMPTS = 3;
/**
 * First wait between two status reads, growing by POLL_GROWTH up to POLL_MAX_MS: every read spends
 * from the blend area's hourly limit (1000 on Business), which reads every half second would use up
 * within nine minutes of one long job; growing, a job of a minute takes about 20 reads, of an hour
 * about 730, and a short one is still seen done within a fraction of a second.
 */
const POLL_MS = 500;
const POLL_GROWTH = 1.5;
const POLL_MAX_MS = 5_000;
/** How long the command waits for a job before it gives up (the job itself runs on). */
const WAIT_LIMIT_MS = 60 * 60_000;
const FORMATS: Record<string, string> = { '.jpg': 'jpeg', '.jpeg': 'jpeg', '.png': 'png', '.webp': 'webp', '.avif': 'avif' };
const EXTENSIONS: Record<string, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', avif: 'avif' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

interface Answer {
  status: number;
  /** The JSON answered (a job, an upload, a problem), or null. */
  body: any;
  /** The bytes answered (a result image). */
  bytes: Buffer;
  retryAfterMs: number;
}

/** A refusal of the server, as one line: `code: detail`. */
const refusal = (answer: Answer) => new CommandFailure(1, `${answer.body?.code ?? `http_${answer.status}`}: ${answer.body?.detail ?? 'the server refused the request'}`);

/** Whether an answer is worth the same request again: the server was busy or failed. */
const retryable = (status: number) => status === 429 || status === 408 || status >= 500;

/**
 * Sends a request built by `request` (built again for each attempt: a body stream is read once), up to
 * ATTEMPTS times while the network or the server fails, waiting as Retry-After says (at most 30 s).
 */
async function send(label: string, request: () => Promise<Response>): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    let answer: Answer | null = null;
    let failure = '';
    try {
      const res = await request();
      const bytes = Buffer.from(await res.arrayBuffer());
      const json = /json/.test(res.headers.get('content-type') ?? '') && bytes.length > 0;
      const retryAfter = Number(res.headers.get('retry-after'));
      answer = {
        status: res.status,
        body: json ? JSON.parse(bytes.toString('utf8')) : null,
        bytes,
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(30, retryAfter) * 1000 : 0,
      };
      if (!retryable(res.status)) return answer;
      failure = `${answer.body?.code ?? res.status}`;
    } catch (err) {
      if (err instanceof CommandFailure) throw err;
      failure = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
    }
    if (attempt >= ATTEMPTS) {
      if (answer) throw refusal(answer);
      throw new CommandFailure(1, `unavailable: ${label} failed ${ATTEMPTS} times (${failure})`);
    }
    const wait = answer?.retryAfterMs || 1000 * 2 ** (attempt - 1);
    process.stderr.write(`${label}: ${failure}; trying again in ${Math.round(wait / 1000)} s\n`);
    await sleep(wait);
  }
}

/** Progress of the file being uploaded: one line rewritten on a terminal, one line per file otherwise. */
function progressLine(prefix: string, size: number) {
  const tty = process.stderr.isTTY === true;
  let shown = -1;
  return {
    sent(bytes: number) {
      if (!tty) return;
      const percent = size === 0 ? 100 : Math.floor((bytes / size) * 100);
      if (percent === shown) return;
      shown = percent;
      process.stderr.write(`\r${prefix} ${String(percent).padStart(3)}%  ${megabytes(bytes)} / ${megabytes(size)}`);
    },
    done(text: string) {
      process.stderr.write(`${tty ? '\r\x1b[2K' : ''}${prefix} ${text}\n`);
    },
  };
}

/** Uploads one file as multipart/form-data, streamed from disk, reporting the bytes handed to the network. */
async function uploadFile(server: string, key: string, file: string, prefix: string): Promise<{ id: string; bytes: number }> {
  const size = (await fs.stat(file)).size;
  const progress = progressLine(prefix, size);
  const boundary = `montage-${randomBytes(12).toString('hex')}`;
  const name = path.basename(file).replace(/["\r\n\\]/g, '_');
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const body = async function* () {
    yield head;
    let sent = 0;
    for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 })) {
      sent += (chunk as Buffer).length;
      progress.sent(sent);
      yield chunk as Buffer;
    }
    yield tail;
  };
  const answer = await send(`upload of ${file}`, () =>
    fetch(`${server}/v1/blend/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + size + tail.length) },
      // An async iterable body is streamed as it is read (undici); `duplex` says so.
      body: body() as never,
      duplex: 'half',
    } as RequestInit),
  );
  if (answer.status !== 201) throw refusal(answer);
  progress.done(`${megabytes(size)} → ${answer.body.id}`);
  return answer.body as { id: string; bytes: number };
}

const api = (server: string, key: string, method: string, pathname: string, json?: unknown) =>
  fetch(`${server}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });

/** Polls the job until it has finished, telling each change of status; the reads grow apart (POLL_MS). */
async function waitFor(server: string, key: string, jobId: string): Promise<any> {
  const deadline = Date.now() + WAIT_LIMIT_MS;
  let last = '';
  let wait = POLL_MS;
  for (;;) {
    const answer = await send('status', () => api(server, key, 'GET', `/v1/blend/status/${jobId}`));
    if (answer.status !== 200) throw refusal(answer);
    const job = answer.body;
    if (job.status !== last) {
      last = job.status;
      if (job.status !== 'completed' && job.status !== 'failed') process.stderr.write(`${jobId}: ${job.status}\n`);
    }
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() > deadline) throw new CommandFailure(1, `timeout: ${jobId} has not finished after ${WAIT_LIMIT_MS / 60_000} minutes; it runs on (GET /v1/blend/status/${jobId})`);
    await sleep(wait);
    wait = Math.min(POLL_MAX_MS, wait * POLL_GROWTH);
  }
}

/**
 * Where the result is downloaded from. Montage's own result URL is read from the server named here:
 * its signed path and query work on any address of it, while the origin the server put in it may not
 * be reachable from this machine. Any other URL (a presigned URL of an object store) is signed for its
 * own host and is fetched as it is; neither carries the API key.
 */
export function resultLocation(server: string, resultUrl: string): string {
  const result = new URL(resultUrl);
  return result.pathname.startsWith('/v1/blend/results/') ? `${server}${result.pathname}${result.search}` : resultUrl;
}

/** Runs the command; resolves once the result is written, or throws a CommandFailure. */
export async function blendCommand(files: string[], options: BlendCommandOptions): Promise<void> {
  const server = options.server.replace(/\/+$/, '');
  const outputFormat = options.out ? FORMATS[path.extname(options.out).toLowerCase()] : 'jpeg';
  if (!outputFormat) throw new CommandFailure(2, `--out must end in .jpg, .jpeg, .png, .webp or .avif (the result's format), got ${options.out}`);
  for (const file of files) {
    const stat = await fs.stat(file).catch(() => null);
    if (!stat?.isFile()) throw new CommandFailure(1, `file_unreadable: ${file} is not a file that can be read`);
  }

  const started = Date.now();
  const images: string[] = [];
  for (const [i, file] of files.entries()) images.push((await uploadFile(server, options.key, file, `[${i + 1}/${files.length}] ${path.basename(file)}`)).id);
  const body = { projectId: 'montage-cli', images, options: { blendType: options.type, align: options.align, outputFormat } };
  const answer = await send('start', () => api(server, options.key, 'POST', '/v1/blend/start', body));
  if (answer.status !== 202) throw refusal(answer);
  process.stderr.write(`${answer.body.jobId}: started (${options.type}, ${images.length} images)\n`);

  const job = await waitFor(server, options.key, answer.body.jobId);
  if (job.status === 'failed') {
    if (options.json) process.stdout.write(`${JSON.stringify(job)}\n`);
    throw new CommandFailure(JOB_FAILED, `${job.error?.code ?? 'failed'}: ${job.error?.message ?? 'the job failed'}`);
  }
  const image = await send('download', () => fetch(resultLocation(server, job.resultUrl)));
  const out = options.out ?? `${job.jobId}.${EXTENSIONS[outputFormat]}`;
  if (image.status !== 200) throw refusal(image);
  await fs.writeFile(out, image.bytes);
  process.stderr.write(`${job.jobId}: completed in ${((Date.now() - started) / 1000).toFixed(1)} s (${job.width}×${job.height}, ${job.blendType}); wrote ${out}\n`);
  process.stdout.write(options.json ? `${JSON.stringify({ ...job, output: out })}\n` : `${out}\n`);
}
