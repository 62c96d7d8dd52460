import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../config.js';
import { S3Store } from './storage-s3.js';

/**
 * Where the blend area keeps bytes: results, and uploaded images. A directory under DATA_DIR, or
 * an S3-compatible bucket (storage-s3.ts; docs/deploy.md, "Object storage").
 * Keys are `segment/segment[/segment...][.ext]` of `[a-z0-9_]`: callers build them from ids.
 */
export interface ObjectStore {
  /** Stores `body` whole under `key`; a reader never sees part of it. A stream is consumed to its end (its error fails the put, nothing stored). */
  put(key: string, body: Buffer | Readable): Promise<void>;
  /** null when the object does not exist. */
  open(key: string): Promise<{ stream: Readable; size: number } | null>;
  delete(key: string): Promise<void>;
  /** A URL that reads `key` without Montage, valid `seconds` from `signedAt` (ms), served as `fileName`; only stores that can sign one have it. */
  presignGet?(key: string, seconds: number, fileName: string, signedAt?: number): Promise<string>;
  /** Throws, with a reason an operator can act on, when the store cannot be used; checked once at start. */
  check?(): Promise<void>;
  /** Releases connections; the store is not used afterwards. */
  close?(): void;
}

/** What results are kept in (the same store as uploads). */
export type ResultStore = ObjectStore;

/**
 * How many bytes a file being written may hold before its source is paused. The default (16 KiB)
 * is below one socket read (64 KiB): a file written from a request would pause and resume it at
 * every chunk (docs/blend.md, "Uploads").
 */
const WRITE_BUFFER_BYTES = 1024 * 1024;

const KEY = /^[a-z0-9_]+(\/[a-z0-9_]+)+(\.[a-z0-9]+)?$/;

/** Keys are built from ids by Montage; anything else is a bug, refused before it names a file or an object. */
export function checkKey(key: string): void {
  if (!KEY.test(key)) throw new Error(`invalid object key ${key}`);
}

export class DirectoryStore implements ObjectStore {
  constructor(private readonly root: string) {}

  private file(key: string): string {
    checkKey(key);
    return path.join(this.root, key);
  }

  /** Written to a temporary name and renamed: a reader never sees half a file. */
  async put(key: string, body: Buffer | Readable): Promise<void> {
    const file = this.file(key);
    await fs.mkdir(path.dirname(file), { recursive: true });
    const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
    try {
      if (Buffer.isBuffer(body)) await fs.writeFile(temporary, body);
      else await pipeline(body, createWriteStream(temporary, { highWaterMark: WRITE_BUFFER_BYTES }));
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

/**
 * The object store of this deployment: the bucket of MONTAGE_STORAGE_URL, else `results/` under
 * DATA_DIR (then a volume shared by every process when scaled out).
 */
export function createResultStore(config: Pick<Config, 'dataDir' | 'storage'>): ObjectStore {
  if (config.storage) return new S3Store(config.storage);
  return new DirectoryStore(path.join(config.dataDir, 'results'));
}
