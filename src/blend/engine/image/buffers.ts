import { AsyncLocalStorage } from 'node:async_hooks';
import { collectGarbage } from '../threads/gc.js';

/**
 * Large shared buffers kept from job to job. The first touch of fresh memory costs a page fault
 * per 4 KiB (about 19 µs each measured here: 180 ms to fill 36 MB the first time, 16 ms the
 * second), and a 12 MP job allocates dozens of 36 MB buffers (docs/blend.md, "Memory"), so a
 * server running job after job would fault in the same memory every job. Each job takes its
 * buffers from an arena (`BufferArena`, found through the job's async context, so that the
 * allocation sites need no extra argument); the arena hands back buffers of the same size that an
 * earlier job, or this one, gave back, and at the end of the job every buffer it handed out goes
 * to the pool. The pool keeps at most `maxBytes` and drops everything after `idleMs` without a job,
 * so a server at rest gives its memory back.
 *
 * Buffers smaller than POOLED_BYTES (thumbnails, masks on a grid) are not worth keeping: they are
 * allocated as before. Outside a job (worker threads, tests calling the kernels) every buffer is fresh.
 */
const POOLED_BYTES = 4 * 1024 * 1024;

const current = new AsyncLocalStorage<BufferArena>();

/**
 * A SharedArrayBuffer of `bytes` for the running job: from its arena when it has one, else fresh.
 * Zeroed, like a fresh one, unless `overwritten` says the caller writes every byte before it reads any.
 */
export function sharedBuffer(bytes: number, overwritten = false): SharedArrayBuffer {
  const arena = current.getStore();
  return arena ? arena.take(bytes, overwritten) : new SharedArrayBuffer(bytes);
}

/** Gives `buffer` back to the running job's arena: nothing reads or writes it any more (a buffer the arena did not hand out is left alone). */
export function bufferDone(buffer: ArrayBufferLike): void {
  if (buffer instanceof SharedArrayBuffer) current.getStore()?.give(buffer);
}

/** The buffers of one process's jobs: free buffers by size, bounded, dropped when idle. */
export class BufferPool {
  private readonly free = new Map<number, SharedArrayBuffer[]>();
  private freeBytes = 0;
  private jobs = 0;
  private idle: NodeJS.Timeout | null = null;

  constructor(
    /** Most bytes kept free between jobs. */
    readonly maxBytes: number,
    /** Time without a job after which every free buffer is dropped. */
    readonly idleMs: number,
    /** The smallest buffer kept (tests keep every size, to reuse their small frames' buffers). */
    readonly minBytes = POOLED_BYTES,
  ) {}

  /** Runs `job` with an arena of its own; its buffers return to the pool once `job` has settled. */
  async run<T>(job: () => Promise<T>): Promise<T> {
    const arena = new BufferArena(this);
    this.jobs++;
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    try {
      return await current.run(arena, job);
    } finally {
      arena.close();
      if (--this.jobs === 0) this.idle = setTimeout(() => this.drop(), this.idleMs).unref();
    }
  }

  /** Bytes kept free (for tests and metrics). */
  get kept(): number {
    return this.freeBytes;
  }

  /**
   * A free buffer of exactly `bytes`, or else a fresh one, for which free buffers of other sizes
   * make room: the pool and the jobs together then hold no more than the jobs would alone.
   */
  reuseOrMake(bytes: number): { buffer: SharedArrayBuffer; reused: boolean } {
    const same = this.free.get(bytes)?.pop();
    if (same) {
      this.freeBytes -= bytes;
      return { buffer: same, reused: true };
    }
    let dropped = 0;
    for (const [size, buffers] of this.free) {
      while (dropped < bytes && buffers.pop()) dropped += size;
      if (buffers.length === 0) this.free.delete(size);
      if (dropped >= bytes) break;
    }
    this.freeBytes -= dropped;
    return { buffer: new SharedArrayBuffer(bytes), reused: false };
  }

  /** Keeps `buffer` while the pool has room; past that it is left to the collector. */
  keep(buffer: SharedArrayBuffer): void {
    if (this.freeBytes + buffer.byteLength > this.maxBytes) return;
    const same = this.free.get(buffer.byteLength) ?? [];
    same.push(buffer);
    this.free.set(buffer.byteLength, same);
    this.freeBytes += buffer.byteLength;
  }

  /** Drops every free buffer; a collection then gives their memory back (threads/gc.ts: this thread held them last, the job's end collected the pool's threads). */
  private drop(): void {
    this.idle = null;
    if (this.freeBytes === 0) return;
    this.free.clear();
    this.freeBytes = 0;
    collectGarbage();
  }
}

/**
 * One job's buffers: those it holds, and those it gave back (`give`) for its later allocations.
 * Once closed (the job is over) it hands out fresh buffers only, to work the job left running.
 */
export class BufferArena {
  private readonly held = new Set<SharedArrayBuffer>();
  private readonly given: SharedArrayBuffer[] = [];
  private open = true;

  constructor(private readonly pool: BufferPool) {}

  take(bytes: number, overwritten: boolean): SharedArrayBuffer {
    if (!this.open || bytes < this.pool.minBytes) return new SharedArrayBuffer(bytes);
    const at = this.given.findIndex((b) => b.byteLength === bytes);
    const { buffer, reused } = at >= 0 ? { buffer: this.given.splice(at, 1)[0]!, reused: true } : this.pool.reuseOrMake(bytes);
    if (reused && !overwritten) new Uint8Array(buffer).fill(0);
    this.held.add(buffer);
    return buffer;
  }

  give(buffer: SharedArrayBuffer): void {
    if (this.open && this.held.delete(buffer)) this.given.push(buffer);
  }

  /** Hands every buffer to the pool: nothing of the job reads them any more. */
  close(): void {
    this.open = false;
    for (const buffer of [...this.given, ...this.held]) this.pool.keep(buffer);
    this.given.length = 0;
    this.held.clear();
  }
}
