import os from 'node:os';
import { Worker } from 'node:worker_threads';

/**
 * A fixed set of worker threads that run the engine's pixel loops, so they never run on the
 * HTTP event loop. A task names a module (by file URL) and one of its exported functions; the
 * arguments are structured-cloned, so typed arrays over SharedArrayBuffer are shared, not copied.
 */
interface Task {
  id: number;
  /** Runs only on this slot: a task every thread must run, or one for a library's thread. */
  slot?: number;
  module: string;
  fn: string;
  args: unknown[];
  resolve(value: unknown): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  task: Task | null;
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

/** The URL of an engine module named by its path under src/blend/engine (`align/warp`), in source (`.ts`, under tsx) or compiled (`.js`) form. */
export function engineModule(name: string): string {
  return new URL(`../${name}${EXT}`, import.meta.url).href;
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;

  constructor(readonly size = Math.max(1, os.availableParallelism())) {
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const entry = new URL(`./worker${EXT}`, import.meta.url);
    // Under tsx (tests, development) the thread registers the TypeScript loader before loading its entry.
    const worker =
      EXT === '.ts'
        ? new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`, { eval: true })
        : new Worker(entry);
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

  /** Runs `fn` of `module` (a URL from `engineModule`) on a free thread, or only on `options.slot`. */
  run<T>(module: string, fn: string, args: unknown[], options: RunOptions = {}): Promise<T> {
    if (this.closed) return Promise.reject(new Error('worker pool is closed'));
    const { slot } = options;
    if (slot !== undefined && !(Number.isInteger(slot) && slot >= 0 && slot < this.size)) {
      return Promise.reject(new RangeError(`no thread ${slot} in a pool of ${this.size}`));
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, slot, module, fn, args, resolve: resolve as (v: unknown) => void, reject });
      this.dispatch();
    });
  }

  /** Runs `fn` once on every thread (per-thread housekeeping). */
  async everyThread(module: string, fn: string): Promise<void> {
    if (this.closed) return;
    await Promise.all(this.slots.map((_, slot) => this.run(module, fn, [], { slot })));
  }

  /** Runs the same function once per argument list, in parallel, and returns the results in order. */
  all<T>(module: string, fn: string, argLists: unknown[][], options: RunOptions = {}): Promise<T[]> {
    return Promise.all(argLists.map((args) => this.run<T>(module, fn, args, options)));
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
      slot.worker.postMessage({ id: task.id, module: task.module, fn: task.fn, args: task.args });
    }
    for (const slot of this.slots) if (!slot.task) slot.worker.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new Error('worker pool is closed'));
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}
