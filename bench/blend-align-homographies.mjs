// The homography alignment gives each of the blend benchmark's drifted frames (bench/blend.mjs
// makeInputs: five 4000×3000 JPEGs, frame 2 moved by (3, −4) px and frame 4 by (11, 9), frames
// 3 and 5 also turned by 0.2° and −0.5°), against the motion that made them: each frame's report
// (method, route, homography), how far the estimate puts pixels from the true motion (the most
// over a 9 × 9 grid of the frame, in pixels), and how far it is from a pure translation (the most,
// over the same grid, between where it and the translation it gives the frame's centre put a
// pixel), and how far that translation is from the true motion. `--rounds` runs alignment that many times (the estimates do not vary from run to run
// unless the decisions' timing does). Not part of `npm run bench` (bench/README.md).
//
//   node --import tsx bench/blend-align-homographies.mjs [--inputs DIR] [--rounds 1]
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { inputFrames } from './blend.mjs';
import { option as arg, roundsOption } from './lib.mjs';

const rounds = roundsOption(1);
const { dir, frames, remove } = await inputFrames(arg('inputs'), 'drifted');
const { WorkerPool } = await import('../src/blend/engine/threads/pool.ts');
const { alignFrames, prepareAlignment } = await import('../src/blend/engine/align/align.ts');
const { apply } = await import('../src/blend/engine/align/homography.ts');
const { toShared } = await import('../src/blend/engine/image/image.ts');

// bench/blend.mjs DRIFT: (dx, dy, degrees) per frame
const DRIFT = [
  [0, 0, 0],
  [3, -4, 0],
  [-7, 6, 0.2],
  [11, 9, 0],
  [-15, -12, -0.5],
];
const images = await Promise.all(
  frames.map(async (f) => {
    const { data, info } = await sharp(fs.readFileSync(path.join(dir, f))).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    return toShared(info.width, info.height, new Uint8Array(data.buffer, data.byteOffset, data.length));
  }),
);
const { width, height } = images[0];
const [cx, cy] = [(width - 1) / 2, (height - 1) / 2];
/** Where the frame's drift puts reference pixel (x, y) in frame f (the inverse of bench/blend.mjs drift). */
const truth = (f, x, y) => {
  const [dx, dy, degrees] = DRIFT[f];
  const [c, s] = [Math.cos((degrees * Math.PI) / 180), Math.sin((degrees * Math.PI) / 180)];
  const [u, v] = [x - cx, y - cy];
  return [c * u - s * v + cx + dx, s * u + c * v + cy + dy];
};
const grid = [];
for (let i = 0; i <= 8; i++) for (let j = 0; j <= 8; j++) grid.push([((width - 1) * i) / 8, ((height - 1) * j) / 8]);
const most = (f) => Math.max(...grid.map(([x, y]) => f(x, y)));

const pool = new WorkerPool(2);
await prepareAlignment(pool);
for (let r = 0; r < rounds; r++) {
  const { frameReports } = await alignFrames(pool, images);
  for (const report of frameReports) {
    const h = report.homography;
    const [tx, ty] = apply(h, cx, cy).map((v, k) => v - [cx, cy][k]);
    const error = most((x, y) => {
      const [u, v] = apply(h, x, y);
      const [p, q] = truth(report.index, x, y);
      return Math.hypot(u - p, v - q);
    });
    const fromTranslation = most((x, y) => {
      const [u, v] = apply(h, x, y);
      return Math.hypot(u - (x + tx), v - (y + ty));
    });
    const translationError = most((x, y) => {
      const [p, q] = truth(report.index, x, y);
      return Math.hypot(x + tx - p, y + ty - q);
    });
    console.log(
      `frame ${report.index + 1} (drift ${DRIFT[report.index].join(', ')}): ${report.method}, ${report.route}; ` +
        `error vs the true motion ${error.toFixed(3)} px; from its centre's translation (${tx.toFixed(3)}, ${ty.toFixed(3)}) at most ${fromTranslation.toFixed(3)} px, ` +
        `that translation's error vs the true motion ${translationError.toFixed(3)} px\n` +
        `  homography [${h.map((v) => (Math.abs(v) < 1e-3 && v !== 0 ? v.toExponential(3) : v.toFixed(6))).join(', ')}]`,
    );
  }
}
await pool.close();
await remove();
process.exit(0);
