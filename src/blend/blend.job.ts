import type { Updateable } from 'kysely';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import type { JobRow } from '../jobs/queue.js';
import { type JobHandler, type JobOutcome, retryDelayMs } from '../jobs/runner.js';
import type { Logger } from '../logger.js';
import { addressPolicy } from '../net/safe-http.js';
import { fanOut, type OutboxMessage } from '../webhooks/outbox.js';
import * as repo from './blend.repository.js';
import { type BlendJobRow, presentJob, type ResultLink, resultFileName, resultLinks, specOf } from './blend.service.js';
import type { BlendJobTable } from './blend.table.js';
import { recordCancelled } from './cancel.js';
import { BlendFailure } from './failures.js';
import { BlendEngine, type BlendResult, type FetchedImages } from './pipeline.js';
import { finalProgress, ProgressWriter } from './progress.js';
import type { ResultStore } from './storage.js';
import { BlendJobWatch } from './watch.js';

/** Why a job's work was stopped by its owner (its signal's reason). */
class Cancelled extends Error {
  constructor() {
    super('the job was cancelled');
  }
}

const FINISHED = ['completed', 'failed', 'cancelled'];

/**
 * Works `blend.run` jobs: marks the job processing (blend.started, once), runs the engine within
 * the job time limit, stores the result and records completed (blend.completed) or failed
 * (blend.failed) in one transaction with its webhook message. Failures that can never succeed
 * are not retried; a crash is, on whichever worker takes the lease over. While it works a job it
 * writes the engine's progress to the job's row (progress.ts) and follows the row (watch.ts): a
 * cancel asked for in any process stops the engine through its signal, and the job is recorded
 * `cancelled` (blend.cancelled) once its work has stopped.
 */
export function blendJobHandler(db: Db, config: Config, store: ResultStore, log: Logger): JobHandler & { close(): Promise<void> } {
  let engine: BlendEngine | null = null;
  // Threads start with the first job, so processes that never blend pay nothing for them.
  const engineOf = () => (engine ??= new BlendEngine(config.blend, addressPolicy(config.allowPrivateNetwork), config.publicUrl, store));
  const links = resultLinks(config, store);
  const watch = new BlendJobWatch(db, log);

  /** Marks the job processing; undefined when it is no longer open (its owner cancelled it while it was queued). */
  async function start(job: JobRow, row: BlendJobRow, now: number): Promise<BlendJobRow | undefined> {
    return transaction(db, async (tx) => {
      const started = await repo.updateOpenJob(tx, row.id, { status: 'processing', startedAt: row.startedAt ?? now, attempts: job.attempts, updatedAt: now });
      if (started && row.startedAt === null) {
        await fanOut.inTransaction(tx, row.accountId, [{ event: 'blend.started', jobId: row.id, data: presentJob(started, config, null), ...webhookOf(row) }], now);
      }
      return started;
    });
  }

  /**
   * Records how the job ended and its webhook message, in one transaction; when its owner asked
   * it to stop before that, it is recorded cancelled instead. True when the outcome was recorded.
   */
  async function settle(row: BlendJobRow, changes: Updateable<BlendJobTable>, message: (settled: BlendJobRow, now: number) => OutboxMessage): Promise<boolean> {
    const now = Date.now();
    return transaction(db, async (tx) => {
      const settled = await repo.settleJob(tx, row.id, { ...changes, completedAt: now, updatedAt: now });
      if (!settled) {
        await recordCancelled(tx, row.id, config, now);
        return false;
      }
      await fanOut.inTransaction(tx, row.accountId, [{ jobId: row.id, ...webhookOf(row), ...message(settled, now) }], now);
      return true;
    });
  }

  const cancel = (row: BlendJobRow) => transaction(db, (tx) => recordCancelled(tx, row.id, config));

  const scored = (result: BlendResult) => ({
    blendTypeUsed: result.blendTypeUsed,
    qualityScore: result.quality.score,
    quality: JSON.stringify({ ...result.quality, score: undefined }),
    alignment: result.alignment ? JSON.stringify(result.alignment) : null,
  });

  /** The webhook's `resultUrl` is made before the transaction: a presigned one is signed by the store, outside it. False when the job was cancelled first. */
  async function complete(row: BlendJobRow, result: BlendResult, resultKey: string, startedAt: number): Promise<boolean> {
    const changes = {
      status: 'completed',
      progress: JSON.stringify(finalProgress(JSON.parse(row.images).length)),
      ...scored(result),
      resultKey,
      resultFormat: result.format,
      resultBytes: result.image.length,
      resultWidth: result.width,
      resultHeight: result.height,
      processingTimeMs: Date.now() - startedAt,
    };
    const link = (await links({ ...row, ...changes })) as ResultLink;
    return settle(row, changes, (completed) => ({
      event: 'blend.completed',
      data: {
        resultUrl: link.url,
        processingTime: completed.processingTimeMs,
        qualityScore: completed.qualityScore,
        alignment: result.alignment,
      },
    }));
  }

  function fail(row: BlendJobRow, failure: BlendFailure, startedAt: number, result?: BlendResult): Promise<boolean> {
    const changes = {
      status: 'failed',
      errorCode: failure.code,
      errorMessage: failure.message.slice(0, 1000),
      errorImageIndex: failure.imageIndex,
      ...(result ? scored(result) : {}),
      processingTimeMs: Date.now() - startedAt,
    };
    return settle(row, changes, (failed) => ({ event: 'blend.failed', data: presentJob(failed, config, null) }));
  }

  /**
   * Runs `work` within the job's time limit, from when it is admitted (waiting for memory is not the
   * job's time): at the limit its signal aborts with `job_timeout`, which stops the engine's work
   * (pipeline.ts, `run`); the run then fails with that, once its work has ended.
   */
  async function withTimeLimit<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const limit = new AbortController();
    const timer = setTimeout(
      () => limit.abort(new BlendFailure('job_timeout', `the job took longer than ${config.blend.jobTimeoutMs / 1000} s`)),
      config.blend.jobTimeoutMs,
    );
    try {
      return await work(limit.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    concurrency: config.blend.concurrency,
    async work(job: JobRow, handedBack: AbortSignal): Promise<JobOutcome> {
      const { jobId } = JSON.parse(job.payload) as { jobId: string };
      const row = await repo.jobById(db, jobId);
      if (!row || FINISHED.includes(row.status)) return { status: 'done' };
      // Its owner asked it to stop while no worker held it (its last one died).
      if (row.cancelRequestedAt !== null) {
        await cancel(row);
        return { status: 'done' };
      }
      const cancelled = new AbortController();
      const unfollow = watch.follow(jobId, (state) => {
        if (!state || state.status === 'cancelled' || state.cancelRequestedAt !== null) cancelled.abort(new Cancelled());
      });
      const progress = new ProgressWriter(JSON.parse(row.images).length, (p) => repo.recordProgress(db, jobId, JSON.stringify(p)), log);
      // The job stays queued while its images are fetched and while it waits for memory; it is
      // processing (startedAt, blend.started) from when this process admits it, and holds its
      // memory until its outcome is recorded.
      let startedAt = Date.now();
      let started = false;
      /** False when the job was cancelled while it was queued (and announced then). */
      const markStarted = async () => {
        startedAt = Date.now();
        started = (await start(job, row, startedAt)) !== undefined;
        return started;
      };
      // The job's memory (memory.ts), held from its admission until its outcome is recorded; its run has settled by then, so no work of it is left.
      let release: (() => void) | null = null;
      // A streaming job's images wait on disk (spool.ts), a held job's in memory, until the job is over.
      let fetched: FetchedImages | null = null;
      try {
        const spec = specOf(row);
        let result: BlendResult;
        try {
          const engine = engineOf();
          const fetching = engine.fetch(spec, progress.report);
          // A job cancelled while it fetches leaves the fetch to end by itself: what it spooled is removed then.
          fetching.then((images) => (cancelled.signal.aborted ? images.discard() : undefined)).catch(() => {});
          const images = (fetched = await unlessAborted(fetching, cancelled.signal));
          release = await engine.admit(spec, images, AbortSignal.any([handedBack, cancelled.signal]));
          if (!(await markStarted())) throw new Cancelled();
          result = await withTimeLimit((signal) => engine.run(spec, images, AbortSignal.any([signal, cancelled.signal]), progress.report));
        } catch (err) {
          // The process is stopping and gave the job back: another worker runs it again.
          if (handedBack.aborted) return { status: 'done' };
          await progress.flush();
          // Its owner cancelled it: recorded now that its work has stopped (or already, when it was cancelled while queued).
          if (cancelled.signal.aborted || err instanceof Cancelled) {
            await cancel(row);
            return { status: 'done' };
          }
          const failure =
            err instanceof BlendFailure ? err : new BlendFailure('internal_error', 'the blend failed unexpectedly; it was retried where attempts remained', null, true);
          if (!(err instanceof BlendFailure)) log.error({ err, jobId }, 'blend failed unexpectedly');
          // What the client is not told (a resolved address) is kept here; never the image URL, which may carry a token of theirs.
          else if (failure.internal && failure.internal !== failure.message) log.warn({ jobId, imageIndex: failure.imageIndex, reason: failure.internal }, 'image fetch failed');
          if (failure.retryable && job.attempts < job.maxAttempts) {
            await repo.requeueJob(db, jobId, Date.now());
            return { status: 'retry', delayMs: retryDelayMs(job.attempts), error: failure.message };
          }
          // A job refused before it was admitted (an image that cannot be fetched, a job too large) still started, and says so.
          if (!started && !(await markStarted())) return { status: 'done' };
          await fail(row, failure, startedAt);
          return { status: 'done' };
        }
        if (handedBack.aborted) return { status: 'done' };
        await progress.flush();
        const options = JSON.parse(row.options) as { qualityThreshold: number };
        if (result.quality.score < options.qualityThreshold) {
          const failure = new BlendFailure('quality_below_threshold', `quality score ${result.quality.score} is below the threshold ${options.qualityThreshold}`);
          await fail(row, failure, startedAt, result);
          return { status: 'done' };
        }
        const resultKey = `${row.accountId}/${resultFileName({ id: row.id, resultFormat: result.format })}`;
        await store.put(resultKey, result.image);
        // Cancelled at the last moment: the cancel was recorded instead, and the result is not kept.
        if (!(await complete(row, result, resultKey, startedAt))) {
          await store.delete(resultKey);
          return { status: 'done' };
        }
        log.info({ jobId, blendType: result.blendTypeUsed, autoReason: result.autoReason, ms: Date.now() - startedAt, stages: result.stages }, 'blend completed');
        return { status: 'done' };
      } finally {
        unfollow();
        release?.();
        await fetched?.discard();
      }
    },
    async giveUp(job: JobRow, error: string) {
      const { jobId } = JSON.parse(job.payload) as { jobId: string };
      const row = await repo.jobById(db, jobId);
      if (!row || FINISHED.includes(row.status)) return;
      await fail(row, new BlendFailure('internal_error', `the job was given up: ${error}`), row.startedAt ?? Date.now());
    },
    async close() {
      watch.stop();
      await engine?.close();
    },
  };
}

/**
 * `work`'s outcome, or the signal's reason once it aborts first: a cancelled job's fetches (network
 * only, bounded by the fetch time-out) are left to end by themselves instead of holding its worker.
 */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  work.catch(() => {});
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function webhookOf(row: BlendJobRow): { webhookUrl?: string } {
  return row.webhookUrl ? { webhookUrl: row.webhookUrl } : {};
}
