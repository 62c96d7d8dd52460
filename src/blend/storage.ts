import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../config.js';

/**
 * Where the blend area keeps bytes: results, and uploaded images. A directory under DATA_DIR, or
 * (docs/deploy.md) an S3-compatible object store implementing the same operations.
 * Keys are `segment/segment[/segment...][.ext]` of `[a-z0-9_]`: callers build them from ids.
 */
export interface ObjectStore {
  /** Stores `body` whole under `key`; a reader never sees part of it. A stream is consumed to its end (its error fails the put, nothing stored). */
  put(key: string, body: Buffer | Readable): Promise<void>;
  /** null when the object does not exist. */
  open(key: string): Promise<{ stream: Readable; size: number } | null>;
  delete(key: string): Promise<void>;
}

/** What results are kept in (the same store as uploads). */
export type ResultStore = ObjectStore;

const KEY = /^[a-z0-9_]+(\/[a-z0-9_]+)+(\.[a-z0-9]+)?$/;

export class DirectoryStore implements ObjectStore {
  constructor(private readonly root: string) {}

  private file(key: string): string {
    if (!KEY.test(key)) throw new Error(`invalid object key ${key}`);
    return path.join(this.root, key);
  }

  /** Written to a temporary name and renamed: a reader never sees half a file. */
  async put(key: string, body: Buffer | Readable): Promise<void> {
    const file = this.file(key);
    await fs.mkdir(path.dirname(file), { recursive: true });
    const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
    try {
      if (Buffer.isBuffer(body)) await fs.writeFile(temporary, body);
      else await pipeline(body, createWriteStream(temporary));
      await fs.rename(temporary, file);
    } catch (err) {
      await fs.rm(temporary, { force: true });
      throw err;
    }
  }

  async open(key: string): Promise<{ stream: Readable; size: number } | null> {
    const file = this.file(key);
    try {
      const stat = await fs.stat(file);
      return { stream: createReadStream(file), size: stat.size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.file(key), { force: true });
  }
}

/** The object store of this deployment: `results/` under DATA_DIR (a shared volume when scaled out). */
export function createResultStore(config: Pick<Config, 'dataDir'>): ObjectStore {
  return new DirectoryStore(path.join(config.dataDir, 'results'));
}
