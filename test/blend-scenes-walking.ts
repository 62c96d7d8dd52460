import { sharedImage, type RgbImage } from '../src/blend/engine/image/image.js';
import { exposureBracket, withNoise } from './blend-scenes.js';

/**
 * Sets of frames of a static scene through which a person walks, with their ground truth, for
 * deghosting (`exposure` and `mean`, docs/blend.md "Deghosting"):
 *
 *   exposureWithWalker(photo, people, next, options?) → WalkingScene
 *   meanWithWalker(photo, people, count, next, options?) → WalkingScene
 *
 * `photo` is the static scene, `people` the photo the person is cut from (an ellipse, as
 * blend-scenes.ts's `crowd` cuts them), `next` a seeded stream (blend-scenes.ts `random`). The
 * person stands somewhere else in every frame: the width is cut into one slot per frame, the slots
 * dealt to the frames at random, so no two positions overlap.
 *
 * The right answer: deghosting keeps what the reference frame shows where the frames disagree, so
 * the person stays where the reference shows it and leaves no trace anywhere else. `truth` is the
 * clean scene with the person at the reference's position, at the reference's exposure; `walked`
 * marks (1 a pixel) where the person stood in the other frames and not in the reference: where a
 * ghost would be; `held` where the reference shows the person. Elsewhere the scene is static. `still`
 * is the same set had the person stood at the reference's position in every frame (noise of its
 * own draws): its blend is the oracle for a blend whose result is none of the frames (an exposure
 * fusion's tones are not the reference's).
 *
 * Metrics (docs/blend.md "Deghosting"): `staticPsnr` (PSNR outside `walked` and `held`: where nothing
 * moved) and `ghostEnergy` (mean squared difference inside `walked`, grey levels²), each against an
 * image the caller chooses (where the reference holds the person, only its exposure can show it, so
 * no fusion of the others is a fair target there):
 * `truth` for a mean, the blend of `still` for an exposure fusion.
 */
export interface WalkingScene {
  frames: RgbImage[];
  truth: RgbImage;
  /** 1 where the person stood in a frame other than the reference and not in the reference. */
  walked: Uint8Array;
  /** 1 where the reference shows the person. */
  held: Uint8Array;
  /** The frame whose content stays where frames disagree: 0 for a mean, the middle exposure of a bracket. */
  reference: number;
  /** The frames had the person stood still at the reference's position. */
  still: RgbImage[];
}

export interface ExposureWalkerOptions {
  /** The bracket, in frame order; default −2, 0, +2. The reference is the middle exposure (of two, the darker). */
  evs?: number[];
  /** Sensor noise added to every frame (grey levels); default 2. */
  noise?: number;
}

export interface MeanWalkerOptions {
  /** Sensor noise of every frame (grey levels); default 8. */
  noise?: number;
}

const uniform = (next: () => number, a: number, b: number) => a + (b - a) * next();

/** An exposure bracket (blend-scenes.ts `exposureBracket`) of a scene the person walks through; the person is lit like the scene. */
export function exposureWithWalker(photo: RgbImage, people: RgbImage, next: () => number, options: ExposureWalkerOptions = {}): WalkingScene {
  const evs = options.evs ?? [-2, 0, 2];
  const noise = options.noise ?? 2;
  const reference = evs.map((ev, k) => [ev, k] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1])[(evs.length - 1) >> 1]![1];
  const { scenes, walked, held } = walk(photo, people, evs.length, reference, next);
  const exposed = (scene: RgbImage, k: number) => withNoise(exposureBracket(scene, [evs[k]!])[0]!, noise, next);
  const frames = scenes.map(exposed);
  const still = scenes.map((_, k) => exposed(scenes[reference]!, k));
  return { frames, truth: exposureBracket(scenes[reference]!, [evs[reference]!])[0]!, walked, held, reference, still };
}

/** `count` noisy frames of a scene the person walks through; the truth is frame 0's scene without noise. */
export function meanWithWalker(photo: RgbImage, people: RgbImage, count: number, next: () => number, options: MeanWalkerOptions = {}): WalkingScene {
  const noise = options.noise ?? 8;
  const { scenes, walked, held } = walk(photo, people, count, 0, next);
  const frames = scenes.map((scene) => withNoise(scene, noise, next));
  return { frames, truth: scenes[0]!, walked, held, reference: 0, still: scenes.map(() => withNoise(scenes[0]!, noise, next)) };
}

/** The scene with the person at a position of its own in each of `count` frames, and where it walked outside the reference's position. */
function walk(photo: RgbImage, people: RgbImage, count: number, reference: number, next: () => number): { scenes: RgbImage[]; walked: Uint8Array; held: Uint8Array } {
  const { width, height } = photo;
  const slot = width / count;
  const w = Math.max(4, Math.round(Math.min(0.25 * width, uniform(next, 0.6, 0.9) * slot)));
  const h = Math.min(height - 1, people.height, Math.round(uniform(next, 1.5, 2.5) * w));
  const [px, py] = [Math.floor(next() * (people.width - w)), Math.floor(next() * Math.max(1, people.height - h))];
  const order = Array.from({ length: count }, (_, i) => i).sort(() => next() - 0.5);
  const inside = (x: number, y: number) => ((x + 0.5 - w / 2) / (w / 2)) ** 2 + ((y + 0.5 - h / 2) / (h / 2)) ** 2 <= 1;
  const covers: Uint8Array[] = [];
  const scenes = order.map((s) => {
    const x0 = Math.floor(s * slot + next() * (slot - w));
    const y0 = Math.floor(next() * Math.max(1, height - h));
    const scene = sharedImage(width, height);
    scene.data.set(photo.data);
    const cover = new Uint8Array(width * height);
    for (let y = 0; y < h && y0 + y < height; y++) {
      for (let x = 0; x < w; x++) {
        if (!inside(x, y)) continue;
        const p = (y0 + y) * width + x0 + x;
        cover[p] = 1;
        const q = ((py + y) * people.width + px + x) * 3;
        scene.data.set(people.data.subarray(q, q + 3), p * 3);
      }
    }
    covers.push(cover);
    return scene;
  });
  const walked = new Uint8Array(width * height);
  for (const [k, cover] of covers.entries()) {
    if (k === reference) continue;
    for (let p = 0; p < walked.length; p++) if (cover[p] && !covers[reference]![p]) walked[p] = 1;
  }
  return { scenes, walked, held: covers[reference]! };
}

/** Mean squared difference (over R, G, B) between two images on the pixels where `where(p)` holds. */
function meanSquared(a: RgbImage, b: RgbImage, where: (p: number) => boolean): number {
  let sum = 0, n = 0;
  for (let p = 0; p < a.width * a.height; p++) {
    if (!where(p)) continue;
    for (let c = 0; c < 3; c++) sum += (a.data[3 * p + c]! - b.data[3 * p + c]!) ** 2;
    n += 3;
  }
  return n === 0 ? 0 : sum / n;
}

/** PSNR (dB, RGB) of `result` against `target` where nothing moved (outside `walked` and `held`): how well the static part came out (100 when exact). */
export function staticPsnr(result: RgbImage, target: RgbImage, scene: Pick<WalkingScene, 'walked' | 'held'>): number {
  const mse = meanSquared(result, target, (p) => !scene.walked[p] && !scene.held[p]);
  return mse === 0 ? 100 : 10 * Math.log10((255 * 255) / mse);
}

/** Ghost energy: the mean squared difference (RGB, grey levels²) between `result` and `target` inside `walked`; 0 leaves no ghost. */
export function ghostEnergy(result: RgbImage, target: RgbImage, scene: Pick<WalkingScene, 'walked'>): number {
  return meanSquared(result, target, (p) => scene.walked[p] === 1);
}
