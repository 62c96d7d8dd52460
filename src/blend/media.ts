import sharp, { type Metadata } from 'sharp';
import { type RgbImage, toShared } from './engine/image/image.js';
import { BlendFailure } from './failures.js';

// The one file that uses sharp (libvips): no cache of decoded images between jobs, and a bounded
// number of libvips threads, so a burst of jobs cannot multiply threads or memory.
sharp.cache(false);

export function configureMedia(threads: number): void {
  sharp.concurrency(threads);
}

export const OUTPUT_FORMATS = ['jpeg', 'png', 'webp', 'avif'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
export const CONTENT_TYPES: Record<OutputFormat, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp', avif: 'image/avif' };
export const EXTENSIONS: Record<OutputFormat, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', avif: 'avif' };

/** The formats we decode, told by their first bytes (never by the Content-Type header). */
export function sniffImage(bytes: Buffer): string | null {
  const ascii = (start: number, end: number) => bytes.subarray(start, end).toString('latin1');
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (bytes.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'webp';
  if (bytes.length >= 6 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return 'gif';
  if (bytes.length >= 4 && (ascii(0, 4) === 'II*\0' || ascii(0, 4) === 'MM\0*')) return 'tiff';
  if (bytes.length >= 12 && ascii(4, 8) === 'ftyp' && /^(avif|avis|heic|heix|mif1|msf1)$/.test(ascii(8, 12))) return 'heif';
  return null;
}

/**
 * Reads an image's dimensions from its header, without decoding it: the format is told by the
 * first bytes, and the pixel count is checked against the per-image limit (decompression bombs).
 * The job pixel budget is checked from these, before any image is decoded. An animation and an
 * image with transparent pixels (the one case decoded here, for its alpha) are refused.
 */
export async function readHeader(bytes: Buffer, index: number, maxPixels: number): Promise<{ width: number; height: number }> {
  if (!sniffImage(bytes)) throw new BlendFailure('unsupported_image', `image ${index} is not a JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIF image`, index);
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw new BlendFailure('unsupported_image', `image ${index} could not be read as an image`, index);
  }
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (width * height > maxPixels) {
    throw new BlendFailure('image_too_large', `image ${index} has ${width}×${height} pixels, more than the limit of ${maxPixels}`, index);
  }
  const pages = frameCount(meta);
  if (pages > 1) {
    // Decoding would take its first frame alone, silently: a set sent as one animation would blend nothing.
    throw new BlendFailure('unsupported_image', `image ${index} holds ${pages} frames (an animated GIF or WebP); send each frame as an image of its own`, index);
  }
  if (await hasTransparentPixels(bytes, meta, index, maxPixels)) {
    // Under a transparent pixel a file keeps whatever colour its editor left (often black, white or
    // magenta), which dropping the alpha channel would blend in as if it were picture.
    throw new BlendFailure('unsupported_image', `image ${index} has transparent pixels, and a blend takes opaque frames: flatten it onto the background you want (or export it without transparency) and send it again`, index);
  }
  return { width, height };
}

/**
 * Frames in an image: an animated GIF's or WebP's; 1 for any other. A TIFF's or HEIF's further
 * pages are most often reduced copies of the first (a thumbnail, a pyramid), and decoding takes the
 * first, the full-size one.
 */
const frameCount = (meta: Metadata): number => (meta.format === 'gif' || meta.format === 'webp' ? (meta.pages ?? 1) : 1);

/** Width and height as the image is shown: swapped when its EXIF orientation turns it a quarter (5–8), as decodeImage turns it. */
function upright(meta: Metadata): { width: number; height: number } {
  const [width, height] = [meta.width ?? 0, meta.height ?? 0];
  return (meta.orientation ?? 1) >= 5 ? { width: height, height: width } : { width, height };
}

/** What the first bytes of an image tell, or why they cannot tell it yet. */
export type HeaderPeek = { format: string; width: number; height: number; pages: number } | 'need_more' | 'not_an_image';

/**
 * Reads the format and dimensions from the first bytes of an image still arriving (an upload):
 * `need_more` while the header may lie further on (a JPEG's frame header follows its EXIF and ICC
 * segments), `not_an_image` once the first bytes name no format we decode, or `complete` (these
 * are all the bytes) and still no dimensions. Width and height are the upright ones (EXIF
 * orientation applied, as decodeImage applies it); `pages` counts the frames the bytes so far show
 * (an animation's later frames may lie beyond them).
 */
export async function peekHeader(prefix: Buffer, complete: boolean): Promise<HeaderPeek> {
  if (prefix.length < 12 && !complete) return 'need_more';
  const format = sniffImage(prefix);
  if (!format) return 'not_an_image';
  try {
    const meta = await sharp(prefix, { limitInputPixels: false }).metadata();
    if (meta.width && meta.height) return { format, ...upright(meta), pages: frameCount(meta) };
  } catch {
    // A header cut short reads as corrupt: more bytes may complete it.
  }
  return complete ? 'not_an_image' : 'need_more';
}

/**
 * Decodes an image whose header `readHeader` has checked to 8-bit sRGB, upright (EXIF orientation
 * applied), into shared memory, alpha dropped (readHeader has refused an image with transparent
 * pixels: hasTransparentPixels). libvips refuses more than `maxPixels` again.
 * `source` is the image's bytes, or the file they were spooled to (spool.ts).
 */
export async function decodeImage(source: Buffer | string, index: number, maxPixels: number): Promise<RgbImage> {
  try {
    const { data, info } = await sharp(source, { limitInputPixels: maxPixels, failOn: 'error' })
      .rotate()
      .toColourspace('srgb')
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`${info.channels} channels after conversion`);
    return toShared(info.width, info.height, data);
  } catch {
    throw new BlendFailure('unsupported_image', `image ${index} is damaged or in an unsupported variant of its format`, index);
  }
}

/**
 * Whether an image with an alpha channel (its header's `meta`) has a pixel that is not opaque
 * (OPAQUE). Most photos have no alpha channel and cost nothing more than the header readHeader
 * read; one that has (a PNG, a WebP) is decoded once for the channel's minimum. An alpha channel
 * that is opaque everywhere is dropped when the image is decoded.
 */
async function hasTransparentPixels(bytes: Buffer, meta: Metadata, index: number, maxPixels: number): Promise<boolean> {
  if (!meta.hasAlpha) return false;
  let alpha: number;
  try {
    alpha = (await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error' }).stats()).channels.at(-1)!.min;
  } catch {
    throw new BlendFailure('unsupported_image', `image ${index} is damaged or in an unsupported variant of its format`, index);
  }
  return alpha / (FULL_ALPHA[meta.depth ?? 'uchar'] ?? 255) < OPAQUE;
}

/** An alpha channel's full opacity in each of libvips' sample formats (16-bit for 10- and 12-bit AVIF/HEIF too, scaled up). */
const FULL_ALPHA: Partial<Record<string, number>> = { uchar: 255, char: 127, ushort: 65535, short: 32767, uint: 4294967295, int: 2147483647, float: 1, double: 1 };
/**
 * The least alpha (a share of full opacity) a pixel may have and count as opaque. Dropping the
 * channel shows a pixel of alpha a with at most (1 − a) of the colour stored under it in error: 2 %
 * is at most 5 of 255 levels, under a JPEG's own noise. An exact 1 would refuse opaque frames whose
 * alpha went through lossy compression (AVIF's 12-bit alpha reads back at 0.990 of full) or a
 * scaling to 16 bits (10- and 12-bit alpha read 65280 of 65535).
 */
const OPAQUE = 0.98;

const raw = (image: RgbImage) => sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } });

/** Brings a frame to the reference size: scaled to cover it, aspect kept, centred crop. */
export async function resizeTo(image: RgbImage, width: number, height: number): Promise<RgbImage> {
  if (image.width === width && image.height === height) return image;
  const { data, info } = await raw(image).resize(width, height, { fit: 'cover', position: 'centre' }).raw().toBuffer({ resolveWithObject: true });
  return toShared(info.width, info.height, data);
}

export async function encodeImage(image: RgbImage, format: OutputFormat): Promise<Buffer> {
  const pipeline = raw(image);
  switch (format) {
    case 'jpeg':
      // Huffman tables optimised per image save ~5 % of the bytes of a 12 MP result but take a
      // second pass that makes the encode ~3.5× slower (~200 ms instead of ~60); pixels are the same.
      return pipeline.jpeg({ quality: 92, optimiseCoding: false }).toBuffer();
    case 'png':
      return pipeline.png({ compressionLevel: 3 }).toBuffer();
    case 'webp':
      return pipeline.webp({ quality: 90 }).toBuffer();
    case 'avif':
      return pipeline.avif({ quality: 70, effort: 2 }).toBuffer();
  }
}
