import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { sql } from 'kysely';
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/database.js';
import type { Logger } from '../logger.js';

/**
 * Telling workers that jobs were queued, so that an idle worker claims them now instead of at its
 * next poll (100 ms). In one process a call is enough: `jobsQueued()` after COMMIT (queue.ts
 * registers it with afterCommit) wakes the runners of this process. Across processes on
 * PostgreSQL, each process sends `NOTIFY montage_jobs` after such commits, at most one every
 * GAP_MS (a busy API commits thousands a second; one NOTIFY wakes every worker for all of them),
 * and each worker process LISTENs on a connection of its own and wakes its runner at most once per
 * GAP_MS. A lost notification costs only the poll: polling stays on. SQLite has no such channel;
 * workers in other processes poll.
 */

/** Runners of this process. */
const listeners = new Set<() => void>();

/** Calls `listener` whenever this process has committed queued jobs; returns the unsubscribe. */
export function onJobsQueued(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Says that jobs this process queued have committed. Call it after COMMIT, never inside the transaction. */
export function jobsQueued(): void {
  for (const listener of listeners) listener();
}

export const JOBS_CHANNEL = 'montage_jobs';
const GAP_MS = 20;
const RELISTEN_MIN_MS = 1000;
const RELISTEN_MAX_MS = 30_000;
/** This process, in its notifications: it does not wake itself (its runners were told directly). */
const INSTANCE = randomBytes(6).toString('hex');

/** The signal reports trouble (warn) and, when it can, recovery (info). */
type SignalLog = Pick<Logger, 'warn'> & Partial<Pick<Logger, 'info'>>;

/**
 * Calls `fn` at most once per `gapMs`: at once when the last call is that old, else once at the
 * end of the gap for every call made during it, so the last call is never lost. On a monotonic
 * clock (a wall clock stepped back would hold the calls for as long as the step).
 */
class Throttle {
  private last = -Infinity;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly fn: () => void,
    private readonly gapMs: number,
  ) {}

  call(): void {
    if (this.timer) return;
    const wait = this.last + this.gapMs - performance.now();
    if (wait <= 0) return this.run();
    this.timer = setTimeout(() => this.run(), Math.min(wait, this.gapMs));
    this.timer.unref();
  }

  /** Runs a pending call now (at shutdown) and stops. */
  flush(): void {
    if (this.timer) this.run();
  }

  private run(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.last = performance.now();
    this.fn();
  }
}

/** How the LISTEN connection shows in pg_stat_activity.application_name. */
export const listenerName = (schema: string | null) => `montage jobs listener${schema ? ` ${schema}` : ''}`.slice(0, 63);

/** The payload of this process's notifications: `<schema>/<process>`. */
export const notificationPayload = (schema: string | null) => `${schema ?? ''}/${INSTANCE}`;

/**
 * On PostgreSQL, NOTIFYs the workers of other processes after this process queues jobs, at most
 * once per GAP_MS. The payload names the schema (`?schema=` of DATABASE_URL), so deployments
 * sharing one database do not wake each other, and this process. Returns the stop function,
 * which sends a pending notification first and waits for it (a no-op on SQLite).
 */
export function notifyOtherProcesses(handle: DatabaseHandle, log: SignalLog): () => Promise<void> {
  if (handle.engine !== 'postgres') return async () => {};
  let sending: Promise<unknown> = Promise.resolve();
  const throttle = new Throttle(() => {
    sending = sql`select pg_notify(${JOBS_CHANNEL}, ${notificationPayload(handle.schema)})`
      .execute(handle.db)
      .catch((err) => log.warn({ err }, 'could not notify workers of queued jobs'));
  }, GAP_MS);
  const stop = onJobsQueued(() => throttle.call());
  return async () => {
    stop();
    throttle.flush();
    await sending;
  };
}

/**
 * On PostgreSQL, LISTENs for other processes' notifications (notifyOtherProcesses) on a
 * connection outside the pool, with TCP keep-alive so that a connection dropped without a word is
 * noticed, and calls `wake` (at most once per GAP_MS) for this deployment's. A lost connection is
 * made again after 1 s, then up to 30 s between tries; the first failure and the recovery are
 * logged, not every try. Returns the stop function (a no-op on SQLite).
 */
export function listenForQueuedJobs(config: Config, handle: DatabaseHandle, wake: () => void, log: SignalLog): () => Promise<void> {
  if (handle.engine !== 'postgres' || !config.databaseUrl) return async () => {};
  const url = new URL(config.databaseUrl);
  url.searchParams.delete('schema');
  const prefix = `${handle.schema ?? ''}/`;
  const own = notificationPayload(handle.schema);
  const throttle = new Throttle(wake, GAP_MS);
  let client: pg.Client | null = null;
  let stopped = false;
  let retry: NodeJS.Timeout | null = null;
  let delay = RELISTEN_MIN_MS;
  let failing = false;

  const connect = async () => {
    retry = null;
    const next = new pg.Client({
      connectionString: url.toString(),
      application_name: listenerName(handle.schema),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: 10_000,
    });
    client = next;
    const again = (err?: unknown) => {
      if (client !== next) return;
      client = null;
      next.end().catch(() => {});
      if (stopped) return;
      if (!failing) log.warn({ err }, 'the connection that listens for queued jobs is lost; polling until it is back');
      failing = true;
      retry = setTimeout(() => void connect(), delay);
      retry.unref();
      delay = Math.min(delay * 2, RELISTEN_MAX_MS);
    };
    next.on('error', again);
    next.on('end', () => again());
    next.on('notification', (message) => {
      const payload = message.payload ?? '';
      if (message.channel === JOBS_CHANNEL && payload.startsWith(prefix) && payload !== own) throttle.call();
    });
    try {
      await next.connect();
      await next.query(`listen ${JOBS_CHANNEL}`);
      if (client !== next) return;
      if (failing) log.info?.({}, 'listening for queued jobs again');
      failing = false;
      delay = RELISTEN_MIN_MS;
      // Jobs may have been queued while no one listened.
      throttle.call();
    } catch (err) {
      again(err);
    }
  };
  void connect();

  return async () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    const last = client;
    client = null;
    await last?.end().catch(() => {});
  };
}
