import { pipeline, type Readable } from 'node:stream';
import type { BlendLimits } from '../config.js';
import type { Db } from '../db/database.js';
import type { TenantScope } from '../db/tenant.js';
import { AppError, invalid, notFound } from '../errors.js';
import { isId, newId } from '../ids.js';
import { listTag, type Page, type PageParams, pageRequest, toPage } from '../http/paging.js';
import type { Logger } from '../logger.js';
import { iso } from '../time.js';
import type { ObjectStore } from './storage.js';
import { ImageIntake } from './upload-intake.js';
import * as repo from './uploads.repository.js';
import type { BlendUploadRow } from './uploads.repository.js';

export { uploadKey } from './uploads.repository.js';

export function presentUpload(row: BlendUploadRow) {
  return {
    id: row.id,
    bytes: row.bytes,
    width: row.width,
    height: row.height,
    format: row.format,
    sha256: row.sha256,
    expiresAt: iso(row.expiresAt),
    createdAt: iso(row.createdAt),
  };
}

export type PresentedUpload = ReturnType<typeof presentUpload>;

/** The account's quota refusal, when one more upload of `bytes` would break it. */
function quotaRefusal(usage: { count: number; bytes: number }, bytes: number, limits: BlendLimits): AppError | null {
  if (usage.count >= limits.maxUploads) {
    return new AppError('upload_quota_exceeded', `The account holds ${usage.count} live uploads, the most it may (MONTAGE_BLEND_MAX_UPLOADS).`, { limit: 'count' });
  }
  if (usage.bytes + bytes > limits.maxUploadBytes) {
    return new AppError(
      'upload_quota_exceeded',
      `The account's live uploads hold ${usage.bytes} bytes; ${bytes} more would pass the limit of ${limits.maxUploadBytes} (MONTAGE_BLEND_MAX_UPLOAD_BYTES).`,
      { limit: 'bytes' },
    );
  }
  return null;
}

/**
 * Receives one image into the object store (docs/blend.md, "Uploads"): streamed through the intake
 * (byte, header and pixel checks while it arrives) into the store, then recorded, within the
 * account's quota, in one transaction. A full account is refused before any byte is read (and
 * again, exactly, when the row is inserted). Whatever fails, nothing is left: the store keeps no
 * part of a failed put, and an object stored for a row that could not be inserted is deleted.
 */
export async function receiveUpload(scope: TenantScope, file: Readable, store: ObjectStore, limits: BlendLimits, log: Pick<Logger, 'error'>, now = Date.now()): Promise<PresentedUpload> {
  const early = quotaRefusal(await repo.liveUsage(scope, now), 1, limits);
  if (early) throw early;
  const id = newId('blendUpload');
  const key = repo.uploadKey(scope.accountId, id);
  const intake = new ImageIntake(limits);
  // A failure of either side ends both: the client's stream, or the intake's refusal.
  await store.put(key, pipeline(file, intake, () => {}));
  try {
    const received = Date.now();
    const row: BlendUploadRow = {
      id,
      accountId: scope.accountId,
      bytes: intake.bytes,
      width: intake.header!.width,
      height: intake.header!.height,
      format: intake.header!.format,
      sha256: intake.sha256(),
      createdAt: received,
      expiresAt: received + limits.uploadTtlMs,
    };
    await scope.transaction(async (tx) => {
      await repo.lockAccountUploads(tx);
      const refusal = quotaRefusal(await repo.liveUsage(tx, received), row.bytes, limits);
      if (refusal) throw refusal;
      await repo.insertUpload(tx, row);
    });
    return presentUpload(row);
  } catch (err) {
    // The refusal is what the client must hear; a store that cannot delete too is the operator's.
    await store.delete(key).catch((failure) => log.error({ err: failure, key }, 'the object of a refused upload could not be deleted'));
    throw err;
  }
}

export async function getUpload(scope: TenantScope, id: string, now = Date.now()): Promise<PresentedUpload> {
  const row = isId('blendUpload', id) ? await repo.findLiveUpload(scope, id, now) : undefined;
  if (!row) throw notFound('upload', id);
  return presentUpload(row);
}

export async function listUploads(scope: TenantScope, query: PageParams, now = Date.now()): Promise<Page<PresentedUpload>> {
  const page = pageRequest(query, listTag('blend-uploads'));
  const rows = await repo.pageUploads(scope, now, page);
  return toPage(rows, page, (r) => ({ key: r.id, id: r.id }), presentUpload);
}

/**
 * Deletes a live upload and its bytes; refused while a queued or processing job uses it. The record
 * goes first (only it knows whether a job uses the upload); bytes a failing store kept are logged
 * with their key, for the operator: the upload is gone for the client either way.
 */
export async function deleteUpload(scope: TenantScope, id: string, store: ObjectStore, log: Pick<Logger, 'error'>, now = Date.now()): Promise<void> {
  if (!isId('blendUpload', id)) throw notFound('upload', id);
  if (!(await repo.deleteUnusedUpload(scope, id, now))) {
    if (await repo.findLiveUpload(scope, id, now)) throw new AppError('upload_in_use', `Upload ${id} is used by a blend job that is still queued or processing.`);
    throw notFound('upload', id);
  }
  const key = repo.uploadKey(scope.accountId, id);
  await store.delete(key).catch((err) => log.error({ err, key }, 'the object of a deleted upload could not be deleted'));
}

/**
 * Checks the upload ids among a new job's images (`/images/<i>` in the refusal): each a live upload
 * of the account. Runs in the transaction that stores the job (see `liveUploadIds`).
 */
export async function checkUploadImages(tx: TenantScope, images: string[], now = Date.now()): Promise<void> {
  const wanted = images.filter((image) => isId('blendUpload', image));
  const live = await repo.liveUploadIds(tx, [...new Set(wanted)], now);
  images.forEach((image, i) => {
    if (isId('blendUpload', image) && !live.has(image)) {
      throw invalid(`/images/${i}`, 'names no upload of this account (or it expired)');
    }
  });
}

const SWEEP_BATCH = 500;

/**
 * Removes uploads past their expiry that no queued or processing job uses (such a one stays until
 * its job has finished): bytes first, then the records of those whose bytes are gone, so that a
 * store failure leaves the record for the next sweep instead of bytes nothing points to. A failed
 * delete is logged and the others go on; a batch with failures ends this sweep (the next retries).
 * Answers how many were removed.
 */
export async function purgeExpiredUploads(db: Db, store: ObjectStore, log: Pick<Logger, 'error'>, now = Date.now()): Promise<number> {
  let purged = 0;
  for (;;) {
    const due = await repo.expiredUnusedUploads(db, now, SWEEP_BATCH);
    const gone: string[] = [];
    for (const upload of due) {
      const key = repo.uploadKey(upload.accountId, upload.id);
      try {
        await store.delete(key);
        gone.push(upload.id);
      } catch (err) {
        log.error({ err, key }, 'the object of an expired upload could not be deleted; the sweep tries again');
      }
    }
    purged += await repo.deleteUploads(db, gone);
    if (due.length < SWEEP_BATCH || gone.length < due.length) return purged;
  }
}
