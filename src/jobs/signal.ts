import pg from 'pg';
import { sql } from 'kysely';
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/database.js';

/**
 * Telling workers that jobs were queued, so that an idle worker claims them now instead of at its
 * next poll (100 ms). In one process a call is enough: `jobsQueued()` after COMMIT (queue.ts
 * registers it with afterCommit) wakes the runners of this process. Across processes on
 * PostgreSQL, each process sends `NOTIFY montage_jobs` after such commits, at most one every
 * NOTIFY_GAP_MS (a busy API commits thousands a second; one NOTIFY wakes every worker for all of
 * them), and each worker process LISTENs on a connection of its own. A lost notification costs
 * only the poll: polling stays on. SQLite has no such channel; workers in other processes poll.
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
const NOTIFY_GAP_MS = 20;
const RELISTEN_MS = 1000;

interface SignalLog {
  warn(obj: object, msg: string): void;
}

/**
 * On PostgreSQL, NOTIFYs the workers of other processes after this process queues jobs: at once,
 * or at the end of the current NOTIFY_GAP_MS if one was just sent. The payload is the schema
 * (`?schema=` of DATABASE_URL), so deployments sharing one database do not wake each other.
 * Returns the stop function (a no-op on SQLite).
 */
export function notifyOtherProcesses(handle: DatabaseHandle, log: SignalLog): () => void {
  if (handle.engine !== 'postgres') return () => {};
  let last = 0;
  let timer: NodeJS.Timeout | null = null;
  const send = () => {
    last = Date.now();
    sql`select pg_notify(${JOBS_CHANNEL}, ${handle.schema ?? ''})`.execute(handle.db).catch((err) => log.warn({ err }, 'could not notify workers of queued jobs'));
  };
  const stop = onJobsQueued(() => {
    if (timer) return; // a send at the end of this gap covers this commit too
    const wait = last + NOTIFY_GAP_MS - Date.now();
    if (wait <= 0) return send();
    timer = setTimeout(() => {
      timer = null;
      send();
    }, wait);
    timer.unref();
  });
  return () => {
    stop();
    if (timer) clearTimeout(timer);
  };
}

/**
 * On PostgreSQL, LISTENs for other processes' notifications (notifyOtherProcesses) on a
 * connection outside the pool and calls `wake` for each of this deployment's; a lost connection is
 * made again a second later. Returns the stop function (a no-op on SQLite).
 */
export function listenForQueuedJobs(config: Config, handle: DatabaseHandle, wake: () => void, log: SignalLog): () => Promise<void> {
  if (handle.engine !== 'postgres' || !config.databaseUrl) return async () => {};
  const url = new URL(config.databaseUrl);
  url.searchParams.delete('schema');
  const schema = handle.schema ?? '';
  let client: pg.Client | null = null;
  let stopped = false;
  let retry: NodeJS.Timeout | null = null;

  const connect = async () => {
    retry = null;
    const next = new pg.Client({ connectionString: url.toString() });
    client = next;
    const again = (err?: unknown) => {
      if (client !== next) return;
      client = null;
      next.end().catch(() => {});
      if (stopped) return;
      if (err) log.warn({ err }, 'lost the connection that listens for queued jobs; polling meanwhile');
      retry = setTimeout(() => void connect(), RELISTEN_MS);
      retry.unref();
    };
    next.on('error', again);
    next.on('end', () => again());
    next.on('notification', (message) => {
      if (message.channel === JOBS_CHANNEL && (message.payload ?? '') === schema) wake();
    });
    try {
      await next.connect();
      await next.query(`listen ${JOBS_CHANNEL}`);
      // Jobs may have been queued while no one listened.
      wake();
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
