import { sharedImage, type RgbImage } from '../../src/blend/engine/image/image.js';
import { exposureBracket, uniform } from '../../test/blend-scenes.js';

/**
 * Scenes where a person walks through a tripod set: an exposure bracket and a set for the mean.
 * A minimal generator, so that the quality matrix has these scenarios to run; the deghosting
 * work brings the project's own (test/blend-scenes-walking.ts) with the same signatures, and the
 * matrix then imports those instead.
 *
 * The person is an ellipse cut from `people` (12–20 % of the width, 2–2.5 times as tall, standing
 * on the lower part of the frame) that crosses the frame from one side to the other in equal steps.
 * `truth` is the reference frame without noise: the scene with the person where the reference
 * shows them; `walked` marks every pixel the person covers in some frame (1), so a result is judged
 * on the static part (walked = 0) and by its error where the person walked.
 */
export interface WalkingScene {
  frames: RgbImage[];
  truth: RgbImage;
  walked: Uint8Array;
  reference: number;
}

/** Where the person stands in frame i of `count`, and which pixels of `people` they show. */
function walker(photo: RgbImage, people: RgbImage, count: number, next: () => number) {
  const { width, height } = photo;
  const w = Math.round(uniform(next, 0.12, 0.2) * width);
  const h = Math.min(height - 1, people.height - 1, Math.round(uniform(next, 2, 2.5) * w));
  const y0 = Math.floor(uniform(next, 0.4, 1) * (height - h));
  const [px, py] = [Math.floor(next() * (people.width - w)), Math.floor(next() * (people.height - h))];
  const rightwards = next() < 0.5;
  const xs = Array.from({ length: count }, (_, i) => Math.round(((rightwards ? i : count - 1 - i) * (width - w)) / Math.max(1, count - 1)));
  const inside = (x: number, y: number) => ((x + 0.5 - w / 2) / (w / 2)) ** 2 + ((y + 0.5 - h / 2) / (h / 2)) ** 2 <= 1;
  /** The photo with the person at their place in frame i; marks their pixels in `walked`. */
  return (i: number, walked: Uint8Array): RgbImage => {
    const out = sharedImage(width, height);
    out.data.set(photo.data);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        if (!inside(x, y)) continue;
        const p = (y0 + y) * width + xs[i]! + x;
        const q = ((py + y) * people.width + px + x) * 3;
        out.data.set(people.data.subarray(q, q + 3), p * 3);
        walked[p] = 1;
      }
    }
    return out;
  };
}

/** A bracket at `evs` (default 0, −2, +2: the 0 EV frame first, as the reference) with a person walking through. */
export function exposureWithWalker(photo: RgbImage, people: RgbImage, next: () => number, options: { evs?: number[] } = {}): WalkingScene {
  const evs = options.evs ?? [0, -2, 2];
  const walked = new Uint8Array(photo.width * photo.height);
  const at = walker(photo, people, evs.length, next);
  const frames = evs.map((ev, i) => exposureBracket(at(i, walked), [ev])[0]!);
  const reference = evs.indexOf(0);
  return { frames, truth: frames[reference]!, walked, reference };
}

/** `count` frames of the scene with a person walking through; frame 0 is the reference. */
export function meanWithWalker(photo: RgbImage, people: RgbImage, count: number, next: () => number): WalkingScene {
  const walked = new Uint8Array(photo.width * photo.height);
  const at = walker(photo, people, count, next);
  const frames = Array.from({ length: count }, (_, i) => at(i, walked));
  return { frames, truth: frames[0]!, walked, reference: 0 };
}
