import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { EngineTasks, TaskFunctions, TaskTable } from './tasks.js';

/**
 * A fixed set of worker threads that run the engine's pixel loops, so they never run on the
 * HTTP event loop. A task is named by its entry in a task table (threads/tasks.ts), which types
 * its arguments and result; the arguments are structured-cloned, so typed arrays over
 * SharedArrayBuffer are shared, not copied.
 *
 * A job's tasks go through the job's view of the pool (`forJob`), which carries its signal: once
 * the signal aborts, the job's queued tasks are dropped and its new ones refused (each rejects
 * with the signal's reason), a running one ends with its band (tasks are row bands, a few tens of
 * milliseconds), and a thread still running one of the job's tasks STOP_GRACE_MS later (a long
 * single task: OpenCV's features, the segmentation model) is terminated, its successor started by
 * the next task for its place. `settled` says when none of the job's tasks is queued or running
 * any more.
 */
interface Queued {
  id: number;
  /** Runs only on this slot: a task every thread must run, or one for a library's thread. */
  slot?: number;
  name: string;
  args: unknown[];
  job: Job | null;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

interface Slot {
  /** Null for a thread that was terminated (or crashed): its successor starts with the next task for the slot. */
  worker: Worker | null;
  task: Queued | null;
}

/** How long a thread may go on with an aborted job's task before it is terminated and replaced. */
const STOP_GRACE_MS = 500;

/** A job's tasks in the pool: how many are queued or running, and who waits for none to be. */
class Job {
  private pending = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly signal: AbortSignal) {}

  started(): void {
    this.pending += 1;
  }

  ended(): void {
    this.pending -= 1;
    if (this.pending === 0) for (const wake of this.waiting.splice(0)) wake();
  }

  settled(): Promise<void> {
    return this.pending === 0 ? Promise.resolve() : new Promise((resolve) => this.waiting.push(resolve));
  }
}

const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

export interface RunOptions {
  /**
   * Runs the task only on this thread (0 .. size − 1). The engine's large WebAssembly libraries
   * (OpenCV.js, the TF.js segmentation model) each run on one thread, so each is loaded once per
   * process, not once per thread (~165 MB and ~70 MB a thread).
   */
  slot?: number;
}

/** The engine's task table (threads/tasks.ts), in source (`.ts`, under tsx) or compiled (`.js`) form. */
const ENGINE_TASKS = new URL(`./tasks${EXT}`, import.meta.url);

/** The name of a task of table `T` (threads/tasks.ts for the engine's). */
export type TaskName<T extends TaskTable = EngineTasks> = keyof T & string;

/** The arguments and the (awaited) result of task `N` of table `T`. */
export type TaskArgs<N extends keyof T & string, T extends TaskTable = EngineTasks> = ArgumentLists<T>[N];
export type TaskResult<N extends keyof T & string, T extends TaskTable = EngineTasks> = Results<T>[N];
// Looked up in object types (not computed per name), so that an argument list written in place is typed as the task's tuple.
type ArgumentLists<T extends TaskTable> = { [N in keyof T]: Parameters<TaskFunctions<T>[N]> };
type Results<T extends TaskTable> = { [N in keyof T]: Awaited<ReturnType<TaskFunctions<T>[N]>> };

/** The tasks of table `T` that take no arguments. */
type NoArgumentTask<T extends TaskTable> = { [N in keyof T & string]: TaskArgs<N, T> extends [] ? N : never }[keyof T & string];

/** The threads and their queue, shared by a pool and its jobs' views. */
class Threads {
  readonly slots: Slot[] = [];
  private readonly queue: Queued[] = [];
  private nextId = 1;
  closed = false;

  constructor(
    readonly size: number,
    private readonly table: URL,
  ) {
    for (let i = 0; i < size; i++) {
      const slot: Slot = { worker: null, task: null };
      slot.worker = this.spawn(slot);
      this.slots.push(slot);
    }
  }

  private spawn(slot: Slot): Worker {
    const entry = new URL(`./worker${EXT}`, import.meta.url);
    const workerData = { table: this.table.href };
    // Under tsx (tests, development) the thread registers the TypeScript loader before loading its entry.
    const worker =
      EXT === '.ts'
        ? new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`, { eval: true, workerData })
        : new Worker(entry, { workerData });
    worker.unref();
    worker.on('message', (msg: { id: number; ok: boolean; value?: unknown; error?: { message: string; name: string; code?: string; index?: number } }) => {
      const task = slot.task;
      slot.task = null;
      if (task && task.id === msg.id) {
        // An aborted job's task that finished its band fails like the rest of the job.
        if (task.job?.signal.aborted) task.reject(task.job.signal.reason);
        else if (msg.ok) task.resolve(msg.value);
        else task.reject(Object.assign(new Error(msg.error!.message), msg.error));
      }
      this.dispatch();
    });
    worker.on('error', (err) => {
      // A crashed thread fails its task and is replaced; the pool goes on.
      const task = slot.task;
      slot.task = null;
      task?.reject(err);
      this.vacate(slot);
    });
    return worker;
  }

  /**
   * Leaves `slot`'s place to a new thread, started when a task needs it (it loads its modules again
   * as its tasks need them): a job stopped mid-task leaves the CPU idle, not busy starting threads.
   */
  private vacate(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0 && !this.closed) {
      this.slots[i] = { worker: null, task: null };
      this.dispatch();
    }
  }

  submit(name: string, args: unknown[], slot: number | undefined, job: Job | null): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('worker pool is closed'));
    if (slot !== undefined && !(Number.isInteger(slot) && slot >= 0 && slot < this.size)) {
      return Promise.reject(new RangeError(`no thread ${slot} in a pool of ${this.size}`));
    }
    if (job?.signal.aborted) return Promise.reject(job.signal.reason);
    job?.started();
    const settled = (settle: (value: never) => void) => (value: unknown) => {
      settle(value as never);
      job?.ended();
    };
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, slot, name, args, job, resolve: settled(resolve), reject: settled(reject) });
      this.dispatch();
    });
  }

  private dispatch(): void {
    for (const [index, slot] of this.slots.entries()) {
      if (this.queue.length === 0) return;
      if (slot.task) continue;
      // A thread takes the tasks only it may run first: the other threads can take the rest.
      let next = this.queue.findIndex((t) => t.slot === index);
      if (next < 0) next = this.queue.findIndex((t) => t.slot === undefined);
      if (next < 0) continue;
      const task = this.queue.splice(next, 1)[0]!;
      slot.task = task;
      slot.worker ??= this.spawn(slot);
      slot.worker.ref();
      slot.worker.postMessage({ id: task.id, name: task.name, args: task.args });
    }
    for (const slot of this.slots) if (!slot.task) slot.worker?.unref();
  }

  /** `job` aborted: its queued tasks fail now; a thread still on one of its tasks after STOP_GRACE_MS is replaced. */
  cancel(job: Job): void {
    const reason: unknown = job.signal.reason;
    for (let i = this.queue.length - 1; i >= 0; i--) {
      if (this.queue[i]!.job === job) this.queue.splice(i, 1)[0]!.reject(reason);
    }
    for (const slot of this.slots) {
      const task = slot.task;
      if (task?.job !== job) continue;
      setTimeout(() => {
        if (slot.task === task && this.slots.includes(slot)) this.stop(slot, reason);
      }, STOP_GRACE_MS).unref();
    }
  }

  /** Terminates `slot`'s thread and fails its task once the thread has stopped. */
  private stop(slot: Slot, reason: unknown): void {
    const task = slot.task!;
    slot.task = null;
    this.vacate(slot);
    void slot.worker!.terminate().finally(() => task.reject(reason));
  }

  /** The slots that have a thread now (a vacated one has none until its next task). */
  get started(): number[] {
    return this.slots.flatMap((s, i) => (s.worker ? [i] : []));
  }

  /** Tasks queued and running, for tests and metrics. */
  get activity(): { queued: number; running: number } {
    return { queued: this.queue.length, running: this.slots.filter((s) => s.task).length };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new Error('worker pool is closed'));
    await Promise.all(this.slots.map((s) => s.worker?.terminate()));
  }
}

/**
 * The pool's threads run the tasks of table `T`: the engine's (threads/tasks.ts) unless `table`
 * names another module whose `TASKS` export is a table of type `T` (a test's). A job's view
 * (`forJob`) shares the threads and carries the job's signal.
 */
export class WorkerPool<T extends TaskTable = EngineTasks> {
  readonly size: number;
  private readonly threads: Threads;
  private readonly job: Job | null;

  /** `shared` is for `forJob` only: a job's view runs on the pool's threads. */
  constructor(size = Math.max(1, os.availableParallelism()), table: URL = ENGINE_TASKS, shared?: { threads: Threads; job: Job }) {
    this.threads = shared?.threads ?? new Threads(size, table);
    this.size = this.threads.size;
    this.job = shared?.job ?? null;
  }

  /**
   * This pool's threads for one job: every task run through the view belongs to the job, and once
   * `signal` aborts they stop (the file's header says how), each failing with the signal's reason.
   */
  forJob(signal: AbortSignal): WorkerPool<T> {
    const job = new Job(signal);
    signal.addEventListener('abort', () => this.threads.cancel(job), { once: true });
    return new WorkerPool<T>(this.size, undefined, { threads: this.threads, job });
  }

  /** Resolves once none of this view's job's tasks is queued or running (at once for the pool itself). */
  settled(): Promise<void> {
    return this.job?.settled() ?? Promise.resolve();
  }

  /** Tasks queued and running on the threads, every job's. */
  get activity(): { queued: number; running: number } {
    return this.threads.activity;
  }

  /** Runs task `name` on a free thread, or only on `options.slot`. */
  run<N extends keyof T & string>(name: N, args: TaskArgs<N, T>, options: RunOptions = {}): Promise<TaskResult<N, T>> {
    return this.threads.submit(name, args, options.slot, this.job) as Promise<TaskResult<N, T>>;
  }

  /** Runs task `name`, which takes no arguments, once on every thread that is started (per-thread housekeeping). */
  async everyThread(name: NoArgumentTask<T>): Promise<void> {
    if (this.threads.closed) return;
    await Promise.all(this.threads.started.map((slot) => this.run(name, [] as TaskArgs<typeof name, T>, { slot })));
  }

  /** Runs the same task once per argument list, in parallel, and returns the results in order. */
  all<N extends keyof T & string>(name: N, argLists: Array<TaskArgs<N, T>>, options: RunOptions = {}): Promise<Array<TaskResult<N, T>>> {
    return Promise.all(argLists.map((args) => this.run(name, args, options)));
  }

  /** Stops the threads (the pool's and all its views'). */
  close(): Promise<void> {
    return this.threads.close();
  }
}
