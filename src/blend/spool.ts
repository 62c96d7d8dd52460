import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** A spool directory's name: the process's id first, so that one left by a process that died can be told. */
const PREFIX = 'montage-blend-';
const SPOOL_NAME = /^montage-blend-(\d+)-[^-]+$/;

/** Whether process `pid` runs (EPERM: it does, as another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the spool directories in the temporary directory that no running process owns: those of
 * a process that is gone, and those of this process's id made before it started (a process that
 * died with the same id: pid 1 of a restarted container). Answers the names removed; one that
 * cannot be removed is left for the next start.
 */
export async function removeOrphanSpools(dir = os.tmpdir()): Promise<string[]> {
  const startedAt = Date.now() - process.uptime() * 1000;
  const removed: string[] = [];
  for (const name of await fs.readdir(dir).catch(() => [])) {
    const pid = Number(SPOOL_NAME.exec(name)?.[1] ?? 0);
    if (!pid) continue;
    const orphan = pid === process.pid ? ((await fs.stat(path.join(dir, name)).catch(() => null))?.mtimeMs ?? Infinity) < startedAt : !alive(pid);
    if (!orphan) continue;
    try {
      await fs.rm(path.join(dir, name), { recursive: true, force: true, maxRetries: 3 });
      removed.push(name);
    } catch {
      // Another user's directory, or one being removed already: the next start tries again.
    }
  }
  return removed;
}

/**
 * A job's scratch directory on disk (under the system's temporary directory, `TMPDIR`): a long
 * stack's fetched images wait there for their turn to be decoded, and a median's aligned frames
 * for their bands to be read (pipeline/stream.ts), so neither is held in memory all at once.
 * `discard` removes it; one a process left when it died is removed when a blend engine next starts
 * on the machine (`removeOrphanSpools`).
 */
export class Spool {
  private discarded = false;

  private constructor(readonly dir: string) {}

  static async create(): Promise<Spool> {
    return new Spool(await fs.mkdtemp(path.join(os.tmpdir(), `${PREFIX}${process.pid}-`)));
  }

  /** Writes `bytes` to the file `name` of the spool and resolves to its path. */
  async write(name: string, bytes: Uint8Array): Promise<string> {
    if (this.discarded) throw new Error('the spool was discarded');
    const file = path.join(this.dir, name);
    await fs.writeFile(file, bytes);
    return file;
  }

  /** Opens the file `name` of the spool for reading and writing at offsets, created empty. */
  open(name: string): Promise<fs.FileHandle> {
    if (this.discarded) throw new Error('the spool was discarded');
    return fs.open(path.join(this.dir, name), 'w+');
  }

  /** Removes the directory and everything in it (again: nothing). */
  async discard(): Promise<void> {
    if (this.discarded) return;
    this.discarded = true;
    // A file closed by another thread just now can make one attempt fail (ENOTEMPTY, EBUSY).
    await fs.rm(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }
}
