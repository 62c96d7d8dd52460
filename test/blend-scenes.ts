import path from 'node:path';
import sharp from 'sharp';
import { apply, type Homography, invert } from '../src/blend/engine/align/homography.js';
import { sharedImage, toShared, type RgbImage } from '../src/blend/engine/image/image.js';

/**
 * Sets of frames of one scene, made in the test from a photo and a seeded random stream, by the
 * rules of test/fixtures/blend/generate.mjs (focus bands blurred with sigma 4 px, crowds of
 * patches cut from another photo, −2/0/+2 EV brackets) but with other draws, other photos and,
 * optionally, the drift of a tripod that was knocked: the inputs alignment meets in the field
 * rather than the six fixtures it was first tried on.
 */

/** mulberry32: a small seeded stream of uniform numbers in [0, 1). */
export function random(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const uniform = (next: () => number, a: number, b: number) => a + (b - a) * next();

/** A photo file as RGB (a grey one too), resized to `width` (height by its aspect, or `height` when given). */
export async function loadPhoto(file: string, width: number, height?: number): Promise<RgbImage> {
  const { data, info } = await sharp(file)
    .removeAlpha()
    .toColourspace('srgb')
    .resize(width, height, { fit: 'fill', kernel: 'lanczos3' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return toShared(info.width, info.height, new Uint8Array(data.buffer, data.byteOffset, data.length));
}

/** Gaussian blur of sigma `sigma` pixels (libvips). */
export async function blurred(image: RgbImage, sigma: number): Promise<RgbImage> {
  const raw = { width: image.width, height: image.height, channels: 3 as const };
  const data = await sharp(Buffer.from(image.data), { raw }).blur(sigma).raw().toBuffer();
  return toShared(image.width, image.height, new Uint8Array(data.buffer, data.byteOffset, data.length));
}

/** `image` with Gaussian-like sensor noise (sum of three uniforms) of about `sigma` grey levels per channel. */
export function withNoise(image: RgbImage, sigma: number, next: () => number): RgbImage {
  const out = sharedImage(image.width, image.height);
  const scale = sigma * 2; // three uniforms in [−0.5, 0.5) sum to a deviation of 0.5
  for (let i = 0; i < out.data.length; i++) {
    const n = (next() + next() + next() - 1.5) * scale;
    out.data[i] = Math.max(0, Math.min(255, Math.round(image.data[i]! + n)));
  }
  return out;
}

/**
 * The homography (scene pixel → frame pixel) of a camera that turned by `degrees` and zoomed by
 * `scale` about the image centre, then shifted by (dx, dy) pixels: x' = s·R·(x − c) + c + d.
 */
export function similarity(width: number, height: number, dx: number, dy: number, degrees: number, scale = 1): Homography {
  const [c, s] = [scale * Math.cos((degrees * Math.PI) / 180), scale * Math.sin((degrees * Math.PI) / 180)];
  const [cx, cy] = [(width - 1) / 2, (height - 1) / 2];
  return [c, -s, cx + dx - (c * cx - s * cy), s, c, cy + dy - (s * cx + c * cy), 0, 0, 1];
}

/** `image` as a frame taken through `sceneToFrame` shows it: bilinear, edges replicated. */
export function warped(image: RgbImage, sceneToFrame: Homography): RgbImage {
  const { width, height, data } = image;
  const out = sharedImage(width, height);
  const back = invert(sceneToFrame);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      // The frame shows at (x, y) the scene point that the motion brought there.
      const [u, v] = apply(back, x, y);
      const sx = Math.max(0, Math.min(width - 1, u));
      const sy = Math.max(0, Math.min(height - 1, v));
      const [x0, y0] = [Math.min(width - 2, Math.floor(sx)), Math.min(height - 2, Math.floor(sy))];
      const [fx, fy] = [sx - x0, sy - y0];
      for (let k = 0; k < 3; k++) {
        const at = (xx: number, yy: number) => data[(yy * width + xx) * 3 + k]!;
        const top = at(x0, y0) + fx * (at(x0 + 1, y0) - at(x0, y0));
        const bottom = at(x0, y0 + 1) + fx * (at(x0 + 1, y0 + 1) - at(x0, y0 + 1));
        out.data[(y * width + x) * 3 + k] = Math.round(top + fy * (bottom - top));
      }
    }
  }
  return out;
}

/**
 * `image` moved as a camera on a knocked tripod moves it: rotated by `degrees` about the centre,
 * then shifted by (dx, dy) pixels; bilinear, edges replicated.
 */
export function moved(image: RgbImage, dx: number, dy: number, degrees: number): RgbImage {
  return warped(image, similarity(image.width, image.height, dx, dy, degrees));
}

/** A drift for each frame but the first: a shift of 3 to 15 pixels in a random direction, and a rotation of up to ±`degrees`. */
export function drifts(count: number, next: () => number, degrees: number): Array<[number, number, number]> {
  return Array.from({ length: count }, (_, i) => {
    if (i === 0) return [0, 0, 0];
    const [length, angle] = [uniform(next, 3, 15), uniform(next, 0, 2 * Math.PI)];
    return [length * Math.cos(angle), length * Math.sin(angle), uniform(next, -degrees, degrees)];
  });
}

/**
 * A focus bracket: `count` frames of the photo, each sharp in one horizontal band (the bands tile
 * the height at random cuts) and blurred with sigma `sigma` elsewhere, a smoothstep over 20 px between.
 */
export async function focusBracket(photo: RgbImage, count: number, next: () => number, sigma = 4): Promise<RgbImage[]> {
  const soft = await blurred(photo, sigma);
  const { width, height } = photo;
  const cuts = [0, ...Array.from({ length: count - 1 }, (_, i) => Math.round(((i + 1 + uniform(next, -0.3, 0.3)) * height) / count)), height];
  const order = Array.from({ length: count }, (_, i) => i).sort(() => next() - 0.5);
  return order.map((band) => {
    const [top, bottom] = [cuts[band]!, cuts[band + 1]!];
    const out = sharedImage(width, height);
    for (let y = 0; y < height; y++) {
      const outside = Math.max(top - y, y + 1 - bottom, 0);
      const t = Math.min(1, outside / 20);
      const sharpness = 1 - t * t * (3 - 2 * t);
      for (let i = y * width * 3; i < (y + 1) * width * 3; i++) out.data[i] = Math.round(sharpness * photo.data[i]! + (1 - sharpness) * soft.data[i]!);
    }
    return out;
  });
}

/**
 * A crowd for median: `count` copies of the photo, each with 2–`most` (default 4) "people" (rectangles or
 * ellipses cut from `people`, 10–25 % of the width and 1 to 2.5 times as tall, so a frame can be
 * a third covered) at random places, so that no pixel is covered in more than (count − 1) / 2
 * frames and the per-pixel median is the photo itself.
 */
export function crowd(photo: RgbImage, people: RgbImage, count: number, next: () => number, most = 4): RgbImage[] {
  const { width, height } = photo;
  const covered = new Uint8Array(width * height);
  const deepest = (count - 1) >> 1;
  return Array.from({ length: count }, () => {
    const out = sharedImage(width, height);
    out.data.set(photo.data);
    const mine = new Uint8Array(width * height);
    const wanted = Math.floor(uniform(next, 2, most + 1));
    for (let placed = 0, tries = 0; placed < wanted && tries < 200; tries++) {
      const w = Math.round(uniform(next, 0.1, 0.25) * width);
      const h = Math.min(height - 1, people.height, Math.round(uniform(next, 1, 2.5) * w));
      const [x0, y0] = [Math.floor(next() * (width - w)), Math.floor(next() * Math.max(1, height - h))];
      const ellipse = next() < 0.5;
      const [px, py] = [Math.floor(next() * (people.width - w)), Math.floor(next() * Math.max(1, people.height - h))];
      const inside = (x: number, y: number) => !ellipse || ((x + 0.5 - w / 2) / (w / 2)) ** 2 + ((y + 0.5 - h / 2) / (h / 2)) ** 2 <= 1;
      let fits = true;
      for (let y = 0; y < h && y0 + y < height && fits; y++) for (let x = 0; x < w; x++) if (inside(x, y) && !mine[(y0 + y) * width + x0 + x] && covered[(y0 + y) * width + x0 + x]! >= deepest) fits = false;
      if (!fits) continue;
      for (let y = 0; y < h && y0 + y < height; y++) {
        for (let x = 0; x < w; x++) {
          if (!inside(x, y)) continue;
          const p = (y0 + y) * width + x0 + x;
          if (!mine[p]) (mine[p] = 1), covered[p]!++;
          const q = (Math.min(people.height - 1, py + y) * people.width + px + x) * 3;
          out.data.set(people.data.subarray(q, q + 3), p * 3);
        }
      }
      placed++;
    }
    return out;
  });
}

/** Share of the frame's pixels that show a person in at least one frame … in each frame: how much of each frame the crowd covers. */
export function crowdCoverage(photo: RgbImage, frames: RgbImage[]): number[] {
  return frames.map((f) => {
    let differ = 0;
    for (let p = 0; p < f.width * f.height; p++) if (f.data[p * 3] !== photo.data[p * 3] || f.data[p * 3 + 1] !== photo.data[p * 3 + 1]) differ++;
    return differ / (f.width * f.height);
  });
}

/** An exposure bracket of the photo at the given EVs, as a camera clips it: (gt^2.2 · 2^ev)^(1/2.2) per channel, 8 bits. */
export function exposureBracket(photo: RgbImage, evs: number[]): RgbImage[] {
  return evs.map((ev) => {
    const lut = Uint8Array.from({ length: 256 }, (_, v) => Math.round(255 * Math.min(1, (v / 255) ** 2.2 * 2 ** ev) ** (1 / 2.2)));
    const out = sharedImage(photo.width, photo.height);
    for (let i = 0; i < out.data.length; i++) out.data[i] = lut[photo.data[i]!]!;
    return out;
  });
}

/**
 * Star trails, as test/fixtures/blend/generate.mjs makes them: `count` frames of a dark sky (level 8
 * with noise of about `noise` levels) and `stars` stars (3×3 px, 230–255 per channel) turned about a
 * pivot above the frame by a fixed step of 0.4–0.8° per frame. The truth is their per-pixel maximum.
 */
export function starTrails(width: number, height: number, next: () => number, count = 10, stars = 150, noise = 2): RgbImage[] {
  const pivot = [uniform(next, 0.2, 0.8) * width, uniform(next, -0.3, 0.3) * height] as const;
  const step = (next() < 0.5 ? -1 : 1) * uniform(next, 0.4, 0.8);
  const sky = Array.from({ length: stars }, () => ({ x: next() * width, y: next() * height, rgb: [0, 1, 2].map(() => 230 + Math.floor(next() * 26)) }));
  const dark = sharedImage(width, height);
  dark.data.fill(8);
  return Array.from({ length: count }, (_, f) => {
    const out = withNoise(dark, noise, next);
    const [c, s] = [Math.cos((f * step * Math.PI) / 180), Math.sin((f * step * Math.PI) / 180)];
    for (const star of sky) {
      const [dx, dy] = [star.x - pivot[0], star.y - pivot[1]];
      const [x, y] = [Math.round(pivot[0] + c * dx - s * dy), Math.round(pivot[1] + s * dx + c * dy)];
      for (let yy = Math.max(0, y - 1); yy <= Math.min(height - 1, y + 1); yy++) {
        for (let xx = Math.max(0, x - 1); xx <= Math.min(width - 1, x + 1); xx++) out.data.set(star.rgb, (yy * width + xx) * 3);
      }
    }
    return out;
  });
}

/**
 * `count` frames of a photo of test/fixtures/photos, `width` × `height`, as PNG files in `dir`: for
 * `exposure` a bracket, the photo's linear light at ¼, 1 and 4 (−2, 0, +2 EV) repeated, each
 * repeat `brighterBy` brighter than the one before; for `focus` the photo blurred but for its own
 * band of rows, so each frame is the sharpest in one band. The streamed exposure and focus tests'
 * frames.
 */
export async function stackFrameFiles(
  dir: string,
  type: 'exposure' | 'focus',
  count: number,
  { photo: name, width, height, brighterBy = 0 }: { photo: string; width: number; height: number; brighterBy?: number },
): Promise<string[]> {
  const photo = await sharp(path.resolve(import.meta.dirname, 'fixtures/photos', name)).resize(width, height, { fit: 'fill' }).removeAlpha().raw().toBuffer();
  const blurred = await sharp(photo, { raw: { width, height, channels: 3 } }).blur(3).raw().toBuffer();
  return Promise.all(
    Array.from({ length: count }, async (_, k) => {
      let frame: Buffer;
      if (type === 'exposure') {
        const gain = [0.25, 1, 4][k % 3]! * (1 + brighterBy * Math.floor(k / 3));
        frame = Buffer.from(photo.map((v) => Math.round(255 * Math.min(1, gain * (v / 255) ** 2.2) ** (1 / 2.2))));
      } else {
        frame = Buffer.from(blurred);
        const [y0, y1] = [Math.floor((k * height) / count), Math.floor(((k + 1) * height) / count)];
        photo.copy(frame, y0 * width * 3, y0 * width * 3, y1 * width * 3);
      }
      const file = path.join(dir, `${type}-${k}.png`);
      await sharp(frame, { raw: { width, height, channels: 3 } }).png({ compressionLevel: 1 }).toFile(file);
      return file;
    }),
  );
}
