import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { AppError } from '../errors.js';
import { peekHeader } from './media.js';

/** The bytes an image's dimensions must be readable within; more is never held in memory. */
export const HEADER_WINDOW = 1024 * 1024;
/** The first try at reading the header; each later one waits for twice the bytes. */
const FIRST_PEEK = 4096;
/**
 * The bytes each stage of an upload (multipart parser, intake, file) may hold before the one
 * before it is paused: above one socket read (64 KiB), so that a request streaming at disk speed
 * is not paused and resumed at every chunk (the streams' default is 16 KiB).
 */
export const UPLOAD_BUFFER_BYTES = 1024 * 1024;

export interface IntakeLimits {
  maxImageBytes: number;
  maxPixels: number;
}

/**
 * The bytes of an upload on their way to the object store: counted (refused past
 * `maxImageBytes`), hashed, and their header read from the first bytes (refused when they are not
 * an image, or one of more than `maxPixels`), so that a refusal comes before the rest arrives.
 * Only the first bytes are kept, until the header is read; the stream fails with the refusal,
 * which fails the store's put (nothing stored).
 */
export class ImageIntake extends Transform {
  bytes = 0;
  header: { format: string; width: number; height: number } | null = null;
  private readonly hash = createHash('sha256');
  private prefix: Buffer[] = [];
  private prefixBytes = 0;
  private nextPeek = FIRST_PEEK;

  constructor(private readonly limits: IntakeLimits) {
    super({ highWaterMark: UPLOAD_BUFFER_BYTES });
  }

  /** The hex SHA-256 of every byte that went through (once, at the end). */
  sha256(): string {
    return this.hash.digest('hex');
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limits.maxImageBytes) {
      return callback(
        new AppError('upload_too_large', `The image is larger than ${this.limits.maxImageBytes} bytes (MONTAGE_BLEND_MAX_IMAGE_BYTES); nothing was stored.`, { limit: 'bytes' }),
      );
    }
    this.hash.update(chunk);
    if (this.header) return callback(null, chunk);
    this.prefix.push(chunk);
    this.prefixBytes += chunk.length;
    if (this.prefixBytes < this.nextPeek) return callback(null, chunk);
    this.peek(false).then(() => callback(null, chunk), callback);
  }

  override _flush(callback: TransformCallback): void {
    if (this.header) return callback();
    this.peek(true).then(() => callback(), callback);
  }

  /** Reads the header from the bytes so far; throws the refusal when there is one. */
  private async peek(complete: boolean): Promise<void> {
    const prefix = Buffer.concat(this.prefix);
    this.prefix = [prefix];
    const seen = await peekHeader(prefix, complete || prefix.length >= HEADER_WINDOW);
    if (seen === 'need_more') {
      this.nextPeek = Math.min(HEADER_WINDOW, prefix.length * 2);
      return;
    }
    if (seen === 'not_an_image') {
      throw new AppError('upload_not_an_image', 'The file is not a JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIF image whose dimensions its first MiB tells; nothing was stored.');
    }
    if (seen.pages > 1) {
      throw new AppError('upload_not_an_image', `The file holds ${seen.pages} frames (an animated GIF or WebP): upload each frame as an image of its own; nothing was stored.`);
    }
    if (seen.width * seen.height > this.limits.maxPixels) {
      throw new AppError(
        'upload_too_large',
        `The image has ${seen.width}×${seen.height} pixels, more than the limit of ${this.limits.maxPixels} (MONTAGE_BLEND_MAX_PIXELS); nothing was stored.`,
        { limit: 'pixels' },
      );
    }
    this.header = seen;
    this.prefix = [];
  }
}
