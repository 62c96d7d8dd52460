import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Static } from 'typebox';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { isId, newId } from '../ids.js';
import { enqueueJobs } from '../jobs/queue.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import { addressPolicy, checkOutboundUrl, SafeFetchError } from '../net/safe-http.js';
import { iso } from '../time.js';
import * as repo from './blend.repository.js';
import type { BlendJobRow } from './blend.repository.js';
import type { BlendStatus, ListJobsQuery, startBody } from './blend.schemas.js';
import { PRIVATE_NETWORK_HINT } from './fetcher.js';
import type { JobProgress } from './progress.js';
import type { Quality } from './quality.js';
import { sampleOf } from './samples.js';
import { EXTENSIONS, type OutputFormat } from './media.js';
import { alignsByDefault, canDeghost, DEGHOST_BY_DEFAULT } from './engine/registry.js';
import { imageLimit, streamOf } from './memory.js';
import type { BlendSpec, BlendType, FrameAlignment } from './pipeline.js';
import type { ResultStore } from './storage.js';
import { checkUploadImages, uploadKey } from './uploads.service.js';
import { MAX_PRESIGN_SECONDS } from './storage-s3.js';

export type { BlendJobRow } from './blend.repository.js';
export type StartBody = Static<ReturnType<typeof startBody>>;
type BlendStatusName = Static<typeof BlendStatus>;
export const BLEND_KIND = 'blend.run';

/** The options a job runs with, every default resolved when the job is accepted. */
export interface StoredOptions {
  preserveBackground: boolean;
  qualityThreshold: number;
  align: boolean;
  deghost: boolean;
  outputFormat: OutputFormat;
}

function resolveOptions(blendType: BlendType, options: StartBody['options']): StoredOptions {
  if (options?.deghost === true && !canDeghost(blendType)) {
    throw invalid('/options/deghost', `deghosting applies to mean, average, exposure and auto, not to ${blendType} (median and composite already keep moving things out)`);
  }
  return {
    preserveBackground: options?.preserveBackground ?? blendType === 'composite',
    qualityThreshold: options?.qualityThreshold ?? 0,
    align: options?.align ?? alignsByDefault(blendType),
    deghost: options?.deghost ?? (DEGHOST_BY_DEFAULT && canDeghost(blendType)),
    outputFormat: options?.outputFormat ?? 'jpeg',
  };
}

/** A job's stored options; a job stored before `deghost` existed did not deghost. */
function storedOptions(row: BlendJobRow): StoredOptions {
  const options = JSON.parse(row.options) as Omit<StoredOptions, 'deghost'> & { deghost?: boolean };
  return { ...options, deghost: options.deghost ?? false };
}

/**
 * Refuses at the edge what the fetch would refuse later: bad schemes, credentials, private
 * literals. The server's own sample addresses are read from disk, not fetched: they pass, and one
 * that names no sample is refused here.
 */
function checkUrl(url: string, path: string, config: Config, samples = false): void {
  if (samples) {
    const sample = sampleOf(url, config.publicUrl);
    if (sample === null) throw invalid(path, 'the server has no such sample (GET /samples/ lists them)');
    if (sample) return;
  }
  try {
    checkOutboundUrl(url, addressPolicy(config.allowPrivateNetwork));
  } catch (err) {
    if (err instanceof SafeFetchError) throw invalid(path, err.code === 'blocked_address' ? `${err.message}; ${PRIVATE_NETWORK_HINT}` : err.message);
    throw err;
  }
}

/**
 * Each blend type has its own image limit (memory.ts, `imageLimit`): the schema takes the largest,
 * and a job over its own type's is refused here, naming the limit and its variable.
 */
function checkImageCount(count: number, blendType: BlendType, preserveBackground: boolean, config: Config): void {
  const { max, variable } = imageLimit(config.blend, blendType, preserveBackground);
  if (count <= max) return;
  // preserveBackground holds every frame, so a type that streams alone takes the common limit with it
  const how = preserveBackground && streamOf(blendType, false) !== null ? ' with preserveBackground' : '';
  throw invalid('/images', `${blendType} jobs${how} take at most ${max} images (${variable}); this one has ${count}`);
}

export async function startJob(scope: TenantScope, body: StartBody, config: Config): Promise<ReturnType<typeof presentJob>> {
  // Upload ids are checked against the account's uploads in the transaction below.
  body.images.forEach((image, i) => {
    if (!isId('blendUpload', image)) checkUrl(image, `/images/${i}`, config, true);
  });
  if (body.webhookUrl !== undefined) checkUrl(body.webhookUrl, '/webhookUrl', config);
  const blendType = body.options?.blendType ?? 'auto';
  const options = resolveOptions(blendType, body.options);
  checkImageCount(body.images.length, blendType, options.preserveBackground, config);
  const now = Date.now();
  const row: BlendJobRow = {
    id: newId('job'),
    accountId: scope.accountId,
    projectId: body.projectId,
    status: 'queued',
    blendType,
    blendTypeUsed: null,
    images: JSON.stringify(body.images),
    options: JSON.stringify(options),
    webhookUrl: body.webhookUrl ?? null,
    attempts: 0,
    resultKey: null,
    resultFormat: null,
    resultBytes: null,
    resultWidth: null,
    resultHeight: null,
    resultToken: randomBytes(32).toString('base64url'),
    qualityScore: null,
    quality: null,
    alignment: null,
    processingTimeMs: null,
    progress: null,
    cancelRequestedAt: null,
    errorCode: null,
    errorMessage: null,
    errorImageIndex: null,
    createdAt: now,
    startedAt: null,
    completedAt: null,
    updatedAt: now,
  };
  await scope.transaction(async (tx) => {
    await checkUploadImages(tx, body.images, now);
    await repo.insertJob(tx, row);
    await enqueueJobs(tx.db, [{ kind: BLEND_KIND, payload: { jobId: row.id }, maxAttempts: config.blend.maxAttempts }], now);
  });
  return presentJob(row, config, null);
}

export async function getJob(scope: TenantScope, id: string, config: Config, links: ResultLinks): Promise<ReturnType<typeof presentJob>> {
  const row = await repo.findJob(scope, id);
  if (!row) throw notFound('blend job', id);
  return presentJob(row, config, await links(row));
}

/** A page of the account's jobs; the query's filters are part of the list (a cursor is for them only). */
export async function listJobs(scope: TenantScope, query: Static<typeof ListJobsQuery> & PageParams, config: Config, links: ResultLinks): Promise<Page<ReturnType<typeof presentJob>>> {
  const page = pageRequest(query, listTag('blend-jobs', { projectId: query.projectId, status: query.status }));
  const rows = await repo.pageJobs(scope, query, page);
  const kept = toPage(rows, page, (r) => ({ key: r.id, id: r.id }), (r) => r);
  return { ...kept, data: await Promise.all(kept.data.map(async (r) => presentJob(r, config, await links(r)))) };
}

/** The job's spec for the engine: an upload id becomes the object store key of its bytes (fetcher.ts reads it there). */
export function specOf(row: BlendJobRow): BlendSpec {
  const options = storedOptions(row);
  return {
    images: (JSON.parse(row.images) as string[]).map((image) => (isId('blendUpload', image) ? uploadKey(row.accountId, image) : image)),
    blendType: row.blendType as BlendType,
    align: options.align,
    preserveBackground: options.preserveBackground,
    deghost: options.deghost,
    outputFormat: options.outputFormat,
  };
}

/** `link`: the completed job's result URL (`ResultLinks`); null for a job without a result. */
export function presentJob(row: BlendJobRow, config: Config, link: ResultLink | null) {
  const options = storedOptions(row);
  const signed = row.status === 'completed' ? link : null;
  return {
    jobId: row.id,
    projectId: row.projectId,
    status: row.status as BlendStatusName,
    blendType: row.blendTypeUsed ?? row.blendType,
    requestedBlendType: row.blendType,
    options,
    images: JSON.parse(row.images) as string[],
    attempts: row.attempts,
    createdAt: iso(row.createdAt),
    startedAt: row.startedAt === null ? null : iso(row.startedAt),
    completedAt: row.completedAt === null ? null : iso(row.completedAt),
    progress: row.progress === null ? null : (JSON.parse(row.progress) as JobProgress),
    ...(row.cancelRequestedAt !== null ? { cancelRequestedAt: iso(row.cancelRequestedAt) } : {}),
    ...(signed ? { resultUrl: signed.url, resultUrlExpiresAt: iso(signed.expires * 1000) } : {}),
    ...(row.resultWidth !== null && row.resultHeight !== null ? { width: row.resultWidth, height: row.resultHeight } : {}),
    ...(row.processingTimeMs !== null ? { processingTime: row.processingTimeMs } : {}),
    ...(row.qualityScore !== null ? { qualityScore: row.qualityScore, quality: JSON.parse(row.quality!) as Omit<Quality, 'score'> } : {}),
    ...(row.alignment !== null ? { alignment: JSON.parse(row.alignment) as FrameAlignment[] } : {}),
    ...(row.errorCode !== null
      ? { error: { code: row.errorCode as 'internal_error', message: row.errorMessage ?? '', imageIndex: row.errorImageIndex } }
      : {}),
  };
}

export type PresentedJob = ReturnType<typeof presentJob>;

// ---- Signed result URLs: work in an <img> tag without the API key, until they expire.

const HOUR = 3600;

export const resultFileName = (row: Pick<BlendJobRow, 'id' | 'resultFormat'>) => `${row.id}.${EXTENSIONS[row.resultFormat as OutputFormat]}`;

function signature(token: string, file: string, expires: number): string {
  return createHmac('sha256', token).update(`${file}:${expires}`).digest('base64url');
}

/** Expiry rounded up to the hour, so repeated reads hand out the same URL (browsers cache it). */
export function signResultUrl(row: BlendJobRow, config: Config, now = Date.now()): { url: string; expires: number } {
  const expires = Math.ceil((now + config.resultUrlTtlMs) / 1000 / HOUR) * HOUR;
  const file = resultFileName(row);
  return { url: `${config.publicUrl}/v1/blend/results/${file}?expires=${expires}&signature=${signature(row.resultToken, file, expires)}`, expires };
}

export interface ResultLink {
  url: string;
  /** Unix seconds. */
  expires: number;
}

/** The result URL of a job: null unless it completed with a result. */
export type ResultLinks = (row: BlendJobRow, now?: number) => Promise<ResultLink | null>;

/**
 * How result URLs are made: presigned GETs of the object store when it can sign them (readers then
 * fetch from the store, not from Montage), else Montage's own signed URLs (`viaMontage` asks for
 * those in any case: the dashboard's page shows results from its own origin). A presigned URL is
 * signed at the start of the hour and lasts until the hour Montage's would end (at most the
 * store's week), so repeated reads hand out the same URL, as with Montage's.
 */
export function resultLinks(config: Config, store: ResultStore, viaMontage = false): ResultLinks {
  return async (row, now = Date.now()) => {
    if (row.status !== 'completed' || !row.resultFormat || !row.resultKey) return null;
    if (viaMontage || !store.presignGet) return signResultUrl(row, config, now);
    const signedAt = Math.floor(now / 1000 / HOUR) * HOUR;
    const expires = Math.min(Math.ceil((now + config.resultUrlTtlMs) / 1000 / HOUR) * HOUR, signedAt + MAX_PRESIGN_SECONDS);
    const url = await store.presignGet(row.resultKey, expires - signedAt, resultFileName(row), signedAt * 1000);
    return { url, expires };
  };
}

/** The stored result a signed URL names, or the reason it is refused. */
export async function resolveResultUrl(db: Db, file: string, expires: number, given: string, now = Date.now()): Promise<BlendJobRow> {
  const id = file.slice(0, file.indexOf('.'));
  const row = await repo.jobById(db, id);
  const refused = new AppError('invalid_signature', 'This result URL is not valid. Read the job status for a fresh one.');
  if (!row || row.status !== 'completed' || !row.resultKey || resultFileName(row) !== file) throw refused;
  const expected = Buffer.from(signature(row.resultToken, file, expires));
  const actual = Buffer.from(given);
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) throw refused;
  if (expires * 1000 <= now) throw new AppError('result_url_expired', 'This result URL has expired. Read the job status for a fresh one.');
  return row;
}

const PURGE_BATCH = 500;

/**
 * Removes finished jobs (completed, failed or cancelled) that finished more than `retentionMs` ago, with
 * their result images: afterwards the job is a 404, and its result URL, whose per-job signing secret
 * went with it, is refused (403) like any URL that cannot be verified. Each file goes before
 * its row, so a crash in between leaves a row that the next sweep removes, never an orphan file.
 */
export async function purgeExpiredBlendJobs(db: Db, store: ResultStore, retentionMs: number, now = Date.now()): Promise<number> {
  if (retentionMs <= 0) return 0;
  let purged = 0;
  for (;;) {
    const rows = await repo.finishedBefore(db, now - retentionMs, PURGE_BATCH);
    if (rows.length === 0) return purged;
    for (const row of rows) if (row.resultKey) await store.delete(row.resultKey);
    purged += await repo.deleteJobs(db, rows.map((r) => r.id));
    if (rows.length < PURGE_BATCH) return purged;
  }
}
