import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * A job's scratch directory on disk (under the system's temporary directory, `TMPDIR`): a long
 * stack's fetched images wait there for their turn to be decoded, and a median's aligned frames
 * for their bands to be read (pipeline/stream.ts), so neither is held in memory all at once.
 * `discard` removes it; a process that dies leaves it to the system's cleaning of temporary files.
 */
export class Spool {
  private discarded = false;

  private constructor(readonly dir: string) {}

  static async create(): Promise<Spool> {
    return new Spool(await fs.mkdtemp(path.join(os.tmpdir(), 'montage-blend-')));
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
