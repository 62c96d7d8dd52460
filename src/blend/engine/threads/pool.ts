import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { EngineTasks, TaskFunctions, TaskTable } from './tasks.js';

/**
 * A fixed set of worker threads that run the engine's pixel loops, so they never run on the
 * HTTP event loop. A task is named by its entry in a task table (threads/tasks.ts), which types
 * its arguments and result; the arguments are structured-cloned, so typed arrays over
 * SharedArrayBuffer are shared, not copied.
 */
interface Queued {
  id: number;
  /** Runs only on this slot: a task every thread must run, or one for a library's thread. */
  slot?: number;
  name: string;
  args: unknown[];
  resolve(value: unknown): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  task: Queued | null;
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

/**
 * The pool's threads run the tasks of table `T`: the engine's (threads/tasks.ts) unless `table`
 * names another module whose `TASKS` export is a table of type `T` (a test's).
 */
export class WorkerPool<T extends TaskTable = EngineTasks> {
  private readonly slots: Slot[] = [];
  private readonly queue: Queued[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    readonly size = Math.max(1, os.availableParallelism()),
    private readonly table: URL = ENGINE_TASKS,
  ) {
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const entry = new URL(`./worker${EXT}`, import.meta.url);
    const workerData = { table: this.table.href };
    // Under tsx (tests, development) the thread registers the TypeScript loader before loading its entry.
    const worker =
      EXT === '.ts'
        ? new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`, { eval: true, workerData })
        : new Worker(entry, { workerData });
    worker.unref();
    const slot: Slot = { worker, task: null };
    worker.on('message', (msg: { id: number; ok: boolean; value?: unknown; error?: { message: string; name: string; code?: string; index?: number } }) => {
      const task = slot.task;
      slot.task = null;
      if (task && task.id === msg.id) {
        if (msg.ok) task.resolve(msg.value);
        else task.reject(Object.assign(new Error(msg.error!.message), msg.error));
      }
      this.dispatch();
    });
    worker.on('error', (err) => {
      // A crashed thread fails its task and is replaced; the pool goes on.
      const task = slot.task;
      slot.task = null;
      task?.reject(err);
      const i = this.slots.indexOf(slot);
      if (i >= 0 && !this.closed) {
        this.slots[i] = this.spawn();
        this.dispatch();
      }
    });
    return slot;
  }

  /** Runs task `name` on a free thread, or only on `options.slot`. */
  run<N extends keyof T & string>(name: N, args: TaskArgs<N, T>, options: RunOptions = {}): Promise<TaskResult<N, T>> {
    if (this.closed) return Promise.reject(new Error('worker pool is closed'));
    const { slot } = options;
    if (slot !== undefined && !(Number.isInteger(slot) && slot >= 0 && slot < this.size)) {
      return Promise.reject(new RangeError(`no thread ${slot} in a pool of ${this.size}`));
    }
    return new Promise<TaskResult<N, T>>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, slot, name, args, resolve: resolve as (v: unknown) => void, reject });
      this.dispatch();
    });
  }

  /** Runs task `name`, which takes no arguments, once on every thread (per-thread housekeeping). */
  async everyThread(name: NoArgumentTask<T>): Promise<void> {
    if (this.closed) return;
    await Promise.all(this.slots.map((_, slot) => this.run(name, [] as TaskArgs<typeof name, T>, { slot })));
  }

  /** Runs the same task once per argument list, in parallel, and returns the results in order. */
  all<N extends keyof T & string>(name: N, argLists: Array<TaskArgs<N, T>>, options: RunOptions = {}): Promise<Array<TaskResult<N, T>>> {
    return Promise.all(argLists.map((args) => this.run(name, args, options)));
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
      slot.worker.ref();
      slot.worker.postMessage({ id: task.id, name: task.name, args: task.args });
    }
    for (const slot of this.slots) if (!slot.task) slot.worker.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new Error('worker pool is closed'));
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}
