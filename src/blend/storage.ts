import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Config } from '../config.js';

/**
 * Where result images live. A directory now (shared between processes when it is on a shared
 * volume); an object store can implement the same four operations.
 */
export interface ResultStore {
  put(key: string, bytes: Buffer): Promise<void>;
  /** null when the object does not exist. */
  open(key: string): Promise<{ stream: Readable; size: number } | null>;
  delete(key: string): Promise<void>;
}

const KEY = /^[a-z0-9_]+\/[a-z0-9_]+\.[a-z0-9]+$/;

export class DirectoryStore implements ResultStore {
  constructor(private readonly root: string) {}

  private file(key: string): string {
    if (!KEY.test(key)) throw new Error(`invalid result key ${key}`);
    return path.join(this.root, key);
  }

  /** Written to a temporary name and renamed: a reader never sees half a file. */
  async put(key: string, bytes: Buffer): Promise<void> {
    const file = this.file(key);
    await fs.mkdir(path.dirname(file), { recursive: true });
    const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
    await fs.writeFile(temporary, bytes);
    await fs.rename(temporary, file);
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

/** The result store of this deployment: `results/` under DATA_DIR (a shared volume when scaled out). */
export function createResultStore(config: Pick<Config, 'dataDir'>): ResultStore {
  return new DirectoryStore(path.join(config.dataDir, 'results'));
}
