import { PassThrough } from 'node:stream';
import { AppError } from '../errors.js';
import type { PresentedJob } from './blend.service.js';
import type { BlendJobWatch, WatchedJob } from './watch.js';

/** Open event streams one account may hold on one server process. */
export const STREAMS_PER_ACCOUNT = 10;
/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
export const HEARTBEAT_MS = 15_000;
/** A stream ends after this long (an EventSource reconnects by itself): none is held for ever. */
const MAX_STREAM_MS = 60 * 60_000;

const FINAL = new Set(['completed', 'failed', 'cancelled']);

/** One server-sent event: its name and its data as one line of JSON. */
const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** What a `progress` event carries: the job's status and progress, without the rest of its record. */
function progressEvent(jobId: string, job: Pick<WatchedJob, 'status' | 'progress'>) {
  return { jobId, status: job.status, progress: job.progress === null ? null : (JSON.parse(job.progress) as unknown) };
}

/**
 * The event streams of blend jobs (`GET /v1/blend/status/:jobId/events`) open on this process: a
 * `progress` event whenever the job's status or progress changes, then the final one (`completed`,
 * `failed` or `cancelled`, with the whole status record) and the end of the stream. The job's row is
 * followed through the process's watch (watch.ts), so the worker may run in any process. At most
 * STREAMS_PER_ACCOUNT streams per account; a stream ends when its client goes, and all of them
 * when the server closes.
 */
export class BlendEventStreams {
  private readonly perAccount = new Map<string, number>();
  private readonly open = new Set<() => void>();

  constructor(private readonly watch: BlendJobWatch) {}

  /**
   * Opens the stream of `job` (already read in the caller's tenant scope) and answers its body and
   * `close`, which ends it (the caller calls it when the client disconnects); `record` reads the
   * job's whole status record again for the final event.
   */
  stream(accountId: string, job: PresentedJob, record: () => Promise<PresentedJob | null>): { body: PassThrough; close: () => void } {
    const count = this.perAccount.get(accountId) ?? 0;
    if (count >= STREAMS_PER_ACCOUNT) {
      throw new AppError('too_many_streams', `This account already has ${STREAMS_PER_ACCOUNT} open event streams of blend jobs on this server.`, { limit: STREAMS_PER_ACCOUNT });
    }
    this.perAccount.set(accountId, count + 1);
    const body = new PassThrough();
    let closed = false;
    let finishing = false;
    let last = '';
    const timers = [setInterval(() => body.write(': heartbeat\n\n'), HEARTBEAT_MS), setTimeout(() => close(), MAX_STREAM_MS)];
    const close = () => {
      if (closed) return;
      closed = true;
      timers.forEach(clearTimeout);
      unfollow();
      this.open.delete(close);
      const left = (this.perAccount.get(accountId) ?? 1) - 1;
      if (left > 0) this.perAccount.set(accountId, left);
      else this.perAccount.delete(accountId);
      body.end();
    };
    /** The final event, with the record as it is now, and the end. */
    const finish = async () => {
      if (finishing) return;
      finishing = true;
      try {
        const final = await record();
        if (final && !closed) body.write(sse(final.status, final));
      } finally {
        close();
      }
    };
    const changed = (state: Pick<WatchedJob, 'status' | 'progress'>) => {
      if (closed || finishing) return;
      if (FINAL.has(state.status)) return void finish();
      const key = `${state.status} ${state.progress}`;
      if (key === last) return;
      last = key;
      body.write(sse('progress', progressEvent(job.jobId, state)));
    };
    // A purged job (null) ends the stream with nothing more to say.
    const unfollow = this.watch.follow(job.jobId, (state) => (state ? changed(state) : close()));
    this.open.add(close);
    // The retry field: how long an EventSource waits before it reconnects.
    body.write('retry: 2000\n\n');
    changed({ status: job.status, progress: job.progress === null ? null : JSON.stringify(job.progress) });
    return { body, close };
  }

  /** Ends every stream (the server is closing). */
  closeAll(): void {
    for (const close of [...this.open]) close();
  }
}
