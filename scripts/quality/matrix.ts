import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import type { Homography } from '../../src/blend/engine/align/homography.js';
import { warpRows } from '../../src/blend/engine/align/warp.js';
import { blendFrames, type PixelBlendType } from '../../src/blend/engine/blend.js';
import { type RgbImage, sharedImage } from '../../src/blend/engine/image/image.js';
import { type Box, clippedFractions, psnr, ssim } from '../../src/blend/engine/image/metrics.js';
import type { WorkerPool } from '../../src/blend/engine/threads/pool.js';
import { canDeghost, DEGHOST_BY_DEFAULT } from '../../src/blend/engine/registry.js';
import {
  crowd,
  drifts,
  exposureBracket,
  focusBracket,
  loadPhoto,
  random,
  similarity,
  starTrails,
  uniform,
  warped,
  withNoise,
} from '../../test/blend-scenes.js';
import { exposureWithWalker, ghostEnergy, meanWithWalker, staticPsnr, type WalkingScene } from '../../test/blend-scenes-walking.js';
import { decode, JobFailed, type QualityApi } from './api.js';

/**
 * The generalisation matrix: photos × scenarios × random draws of each scenario's parameters,
 * every case run as a job through the real API (api.ts) and scored against its ground truth,
 * beside the naive baselines (first frame, per-pixel mean and median of the frames as sent) and an
 * oracle: the engine's own blend (blendFrames) of the frames brought back by the known transform,
 * or taken as they are on a tripod. `npm run quality` runs it whole, test/blend-quality-matrix.test.ts
 * a reduced one, with the same rules (`judge`, `summarise`).
 */

export const PHOTOS_DIR = path.resolve(import.meta.dirname, '../../test/fixtures/photos');

/** What a scenario makes from a photo and a draw: the frames (before JPEG), the truth, and what is known of them. */
export interface Scene {
  frames: RgbImage[];
  truth: RgbImage;
  /** Scene pixel → frame pixel, per frame; absent on a tripod (the frames already line up). */
  toFrame?: Homography[];
  /** Where a person walked and where the reference holds them (test/blend-scenes-walking.ts): scored apart from the static part. */
  walking?: Pick<WalkingScene, 'walked' | 'held'>;
  /** The frames had the person stood still: where given, the target is their blend, not `truth` (a fusion's tones are no frame's). */
  still?: RgbImage[];
  /** The draw, as reported for a failing case. */
  params: Record<string, number | string>;
}

export interface Scenario {
  name: string;
  blendType: PixelBlendType;
  /** `psnr`: beat the best naive baseline; `exposure`: the fixtures' rule for a fusion (SSIM against the target and clipped pixels). */
  judge: 'psnr' | 'exposure';
  make(photo: RgbImage, people: RgbImage, next: () => number): Promise<Scene> | Scene;
}

const r = (x: number, digits = 2) => Number(x.toFixed(digits));
const noisy = (frames: RgbImage[], sigma: number, next: () => number) => frames.map((f) => withNoise(f, sigma, next));

/** A hand-held frame's motion, by the fixtures' rule: rotation ±2° about the centre, scale 0.98–1.02, shift ±3 %. */
function handheld(photo: RgbImage, count: number, next: () => number): Homography[] {
  const { width, height } = photo;
  return Array.from({ length: count }, (_, i) =>
    i === 0
      ? similarity(width, height, 0, 0, 0)
      : similarity(width, height, uniform(next, -0.03, 0.03) * width, uniform(next, -0.03, 0.03) * height, uniform(next, -2, 2), uniform(next, 0.98, 1.02)),
  );
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'median-crowd',
    blendType: 'median',
    judge: 'psnr',
    make(photo, people, next) {
      const [most, noise] = [2 + Math.floor(uniform(next, 1, 4)), uniform(next, 1, 4)];
      return { frames: noisy(crowd(photo, people, 7, next, most), noise, next), truth: photo, params: { people: `2–${most}`, noise: r(noise) } };
    },
  },
  {
    name: 'noise-mean',
    blendType: 'mean',
    judge: 'psnr',
    make(photo, _people, next) {
      const noise = uniform(next, 15, 30);
      return { frames: noisy(Array(8).fill(photo), noise, next), truth: photo, params: { noise: r(noise) } };
    },
  },
  {
    name: 'handheld-mean',
    blendType: 'mean',
    judge: 'psnr',
    make(photo, _people, next) {
      const toFrame = handheld(photo, 6, next);
      const noise = uniform(next, 8, 15);
      return { frames: noisy(toFrame.map((h) => warped(photo, h)), noise, next), truth: photo, toFrame, params: { noise: r(noise) } };
    },
  },
  {
    name: 'exposure-bracket',
    blendType: 'exposure',
    judge: 'exposure',
    make(photo, _people, next) {
      const evs = [-uniform(next, 1.5, 2.5), 0, uniform(next, 1.5, 2.5)];
      const noise = uniform(next, 1, 3);
      return { frames: noisy(exposureBracket(photo, evs), noise, next), truth: photo, params: { evs: evs.map((e) => r(e)).join(' '), noise: r(noise) } };
    },
  },
  {
    name: 'focus-stack',
    blendType: 'focus',
    judge: 'psnr',
    async make(photo, _people, next) {
      const [count, sigma, noise] = [3 + Math.floor(next() * 3), uniform(next, 3, 5), uniform(next, 1, 3)];
      return { frames: noisy(await focusBracket(photo, count, next, sigma), noise, next), truth: photo, params: { frames: count, blur: r(sigma), noise: r(noise) } };
    },
  },
  {
    name: 'star-trails',
    blendType: 'lighten',
    judge: 'psnr',
    make(photo, _people, next) {
      // Synthetic: the photo gives only the size. The truth is the maximum of the frames before JPEG.
      const [stars, noise] = [100 + Math.floor(next() * 101), uniform(next, 1.5, 3)];
      const frames = starTrails(photo.width, photo.height, next, 10, stars, noise);
      const truth = sharedImage(photo.width, photo.height);
      for (const f of frames) for (let i = 0; i < f.data.length; i++) if (f.data[i]! > truth.data[i]!) truth.data[i] = f.data[i]!;
      return { frames, truth, params: { stars, noise: r(noise) } };
    },
  },
  {
    name: 'tripod-drift-mean',
    blendType: 'mean',
    judge: 'psnr',
    make(photo, _people, next) {
      const toFrame = drifts(5, next, 0.5).map(([dx, dy, degrees]) => similarity(photo.width, photo.height, dx, dy, degrees));
      const noise = uniform(next, 5, 12);
      return { frames: noisy(toFrame.map((h) => warped(photo, h)), noise, next), truth: photo, toFrame, params: { noise: r(noise) } };
    },
  },
  {
    name: 'handheld-crowd-median',
    blendType: 'median',
    judge: 'psnr',
    make(photo, people, next) {
      const [most, noise] = [2 + Math.floor(uniform(next, 1, 4)), uniform(next, 1, 4)];
      const toFrame = handheld(photo, 7, next);
      const frames = crowd(photo, people, 7, next, most).map((f, i) => warped(f, toFrame[i]!));
      return { frames: noisy(frames, noise, next), truth: photo, toFrame, params: { people: `2–${most}`, noise: r(noise) } };
    },
  },
  {
    name: 'focus-breathing',
    blendType: 'focus',
    judge: 'psnr',
    async make(photo, _people, next) {
      // Focus breathing: the field of view changes by 1–3 % from the first frame to the last.
      const [count, sigma, noise] = [3 + Math.floor(next() * 3), uniform(next, 3, 5), uniform(next, 1, 3)];
      const breathing = (next() < 0.5 ? -1 : 1) * uniform(next, 0.01, 0.03);
      const toFrame = Array.from({ length: count }, (_, i) => similarity(photo.width, photo.height, 0, 0, 0, 1 + (breathing * i) / (count - 1)));
      const frames = (await focusBracket(photo, count, next, sigma)).map((f, i) => warped(f, toFrame[i]!));
      return { frames: noisy(frames, noise, next), truth: photo, toFrame, params: { frames: count, blur: r(sigma), breathing: r(breathing, 4), noise: r(noise) } };
    },
  },
  {
    name: 'exposure-walker',
    blendType: 'exposure',
    judge: 'exposure',
    make(photo, people, next) {
      // The 0 EV frame first: the engine takes the middle exposure as its reference, whatever the order.
      const evs = [0, -uniform(next, 1.5, 2.5), uniform(next, 1.5, 2.5)];
      const noise = uniform(next, 1, 3);
      const scene = exposureWithWalker(photo, people, next, { evs, noise });
      return { frames: scene.frames, truth: scene.truth, walking: scene, still: scene.still, params: { evs: evs.map((e) => r(e)).join(' '), noise: r(noise) } };
    },
  },
  {
    name: 'mean-walker',
    blendType: 'mean',
    judge: 'psnr',
    make(photo, people, next) {
      const [count, noise] = [5 + Math.floor(next() * 4), uniform(next, 5, 15)];
      const scene = meanWithWalker(photo, people, count, next, { noise });
      return { frames: scene.frames, truth: scene.truth, walking: scene, params: { frames: count, noise: r(noise) } };
    },
  },
];

/** The part of the truth every frame shows: the frame less a margin of the largest distance a corner moves. */
function insideEveryFrame(width: number, height: number, toFrame: Homography[]): Box {
  let most = 0;
  for (const h of toFrame) {
    for (const [x, y] of [[0, 0], [width - 1, 0], [0, height - 1], [width - 1, height - 1]] as const) {
      const w = h[6]! * x + h[7]! * y + h[8]!;
      most = Math.max(most, Math.hypot((h[0]! * x + h[1]! * y + h[2]!) / w - x, (h[3]! * x + h[4]! * y + h[5]!) / w - y));
    }
  }
  const m = Math.ceil(most) + 1;
  return { x: m, y: m, width: width - 2 * m, height: height - 2 * m };
}

/** A frame brought back onto the truth by its known motion, with the engine's own warp. */
function broughtBack(frame: RgbImage, toFrame: Homography): RgbImage {
  const out = sharedImage(frame.width, frame.height);
  warpRows(frame, out, toFrame, 0, frame.height);
  return out;
}

/** How one image scores against the target: PSNR on the judged part (a walking scene's: static PSNR), SSIM, and a walking scene's ghost energy. */
export interface Score {
  psnr: number;
  ssim: number;
  /** Ghost energy (test/blend-scenes-walking.ts `ghostEnergy`; walking scenes only). */
  ghost?: number;
  /** PSNR over the whole frame against the target (walking scenes only): what a case is judged by, as the ghost and the static part both count. */
  whole?: number;
}

/**
 * Whether a PSNR of `a` is at least `b` at the precision the report gives (0.01 dB): on a tripod set
 * of a still scene the naive mean is itself the ideal answer, so the engine can at best equal it,
 * and a difference below the report's precision is a tie, not a miss.
 */
/** The PSNR a case is judged by: a walking scene's over the whole frame (a naive mean's ghost counts against it), the others' on their judged part. */
const judged = (s: Score) => s.whole ?? s.psnr;

function atLeast(a: number, b: number): boolean {
  return Math.round(a * 100) >= Math.round(b * 100);
}

export interface Case {
  scenario: string;
  photo: string;
  draw: number;
  seed: number;
  params: Record<string, number | string>;
  jpegQuality: number;
  /** The job's error (code: message) when it did not complete. */
  error?: string;
  result?: Score;
  /** The alignment methods the job reported, one per frame. */
  methods?: string;
  baselines: { first: Score; mean: Score; median: Score };
  best: keyof Case['baselines'];
  oracle: Score;
  /** Exposure: the result's clipped fraction and the brackets' mean. */
  clipped?: { result: number; brackets: number };
  /** exposure-bracket, where Debian's enfuse is installed: its fusion of the same JPEGs (its defaults), judged by the same rule (ENFUSE_SCENARIOS). */
  enfuse?: { ssim: number; clipped: number; pass: boolean };
  pass: boolean;
  why: string;
}

export interface MatrixOptions {
  api: QualityApi;
  pool: WorkerPool;
  /** Photo files (test/fixtures/photos/*.jpg by default, in name order). */
  photos?: string[];
  scenarios?: Scenario[];
  draws?: number;
  /** The first draw's number (0 by default): `firstDraw`, `firstDraw + 1`, … are run, each with its own seed (caseSeed), so draws beyond the usual ones probe cases nobody tuned on. */
  firstDraw?: number;
  /** Which scenario (index in `scenarios`) runs on which photo (index in `photos`): every pair by default. */
  select?: (scenario: number, photo: number) => boolean;
  /** Working width of the photos (pixels; height by the aspect). */
  width?: number;
  onCase?: (c: Case) => void;
}

export function photoFiles(): string[] {
  return fs
    .readdirSync(PHOTOS_DIR)
    .filter((f) => f.endsWith('.jpg'))
    .sort()
    .map((f) => path.join(PHOTOS_DIR, f));
}

/**
 * The scenarios whose fusion is also made by enfuse, for reference: those judged against a truth
 * that is no engine's output (exposure-bracket: the 0 EV photo). exposure-walker's target is the
 * engine's own fusion of the still bracket, against which another tool's tones would be judged
 * unfairly.
 */
const ENFUSE_SCENARIOS = new Set(['exposure-bracket']);

/** Whether `enfuse` (Debian's package of that name) runs here: the reference is left out where it does not. */
const enfuseInstalled = (() => {
  let known: boolean | undefined;
  return () => (known ??= spawnSync('enfuse', ['--version'], { stdio: 'ignore' }).status === 0);
})();

/** enfuse's fusion of the JPEGs `jpegs`, with its default weights, decoded. */
async function enfuse(jpegs: Buffer[]): Promise<RgbImage> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'montage-enfuse-'));
  try {
    const inputs = jpegs.map((jpeg, i) => {
      const file = path.join(dir, `${i}.jpg`);
      fs.writeFileSync(file, jpeg);
      return file;
    });
    const output = path.join(dir, 'fused.tif');
    await promisify(execFile)('enfuse', ['-o', output, ...inputs]);
    return await decode(output);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs every photo × scenario × draw through the API; the people of crowds and walkers come from the next photo. */
export async function runMatrix(options: MatrixOptions): Promise<Case[]> {
  const { api, pool, scenarios = SCENARIOS, draws = 3, firstDraw = 0, width = 416, select = () => true, onCase } = options;
  const files = options.photos ?? photoFiles();
  const photos = await Promise.all(files.map((f) => loadPhoto(f, width)));
  const cases: Case[] = [];
  for (const [k, scenario] of scenarios.entries()) {
    for (const [p, photo] of photos.entries()) {
      if (!select(k, p)) continue;
      const people = photos[(p + 1) % photos.length]!;
      for (let draw = firstDraw; draw < firstDraw + draws; draw++) {
        const c = await runCase(api, pool, scenario, photo, people, path.basename(files[p]!, '.jpg'), draw, caseSeed(k, p, draw));
        cases.push(c);
        onCase?.(c);
      }
    }
  }
  return cases;
}

/** The seed of a case: scenario k (index into SCENARIOS), photo p (index into photoFiles()), draw (below 1000, so that no two cases share a seed). */
export const caseSeed = (k: number, p: number, draw: number): number => 1 + 1_000_000 * k + 1000 * p + draw;

/**
 * A case's scene, drawn from `seed` (caseSeed), its frames as the JPEGs sent (at a quality drawn
 * per case) and as decoded from them: what the server, the baselines and the oracle see.
 */
export async function caseFrames(scenario: Scenario, photo: RgbImage, people: RgbImage, seed: number): Promise<{ scene: Scene; jpegQuality: number; jpegs: Buffer[]; sent: RgbImage[] }> {
  const next = random(seed);
  const scene = await scenario.make(photo, people, next);
  const jpegQuality = 75 + Math.floor(next() * 21);
  const jpegs = await Promise.all(
    scene.frames.map((f) => sharp(Buffer.from(f.data.buffer, f.data.byteOffset, f.data.length), { raw: { width: f.width, height: f.height, channels: 3 } }).jpeg({ quality: jpegQuality }).toBuffer()),
  );
  const sent = await Promise.all(jpegs.map((j) => decode(j)));
  return { scene, jpegQuality, jpegs, sent };
}

async function runCase(api: QualityApi, pool: WorkerPool, scenario: Scenario, photo: RgbImage, people: RgbImage, name: string, draw: number, seed: number): Promise<Case> {
  const { scene, jpegQuality, jpegs, sent } = await caseFrames(scenario, photo, people, seed);
  const { width, height } = scene.truth;
  const box = scene.toFrame ? insideEveryFrame(width, height, scene.toFrame) : { x: 0, y: 0, width, height };
  const target = scene.still ? await blendFrames(pool, scenario.blendType, scene.still) : scene.truth;
  const { walking } = scene;
  const score = (image: RgbImage): Score =>
    walking
      ? { psnr: staticPsnr(image, target, walking), ssim: ssim(image, target, box), ghost: ghostEnergy(image, target, walking), whole: psnr(image, target, box) }
      : { psnr: psnr(image, target, box), ssim: ssim(image, target, box) };
  const baselines = {
    first: score(sent[0]!),
    mean: score(await blendFrames(pool, 'mean', sent)),
    median: score(await blendFrames(pool, 'median', sent)),
  };
  const best = (Object.keys(baselines) as Array<keyof typeof baselines>).reduce((a, b) => (judged(baselines[b]) > judged(baselines[a]) ? b : a));
  // The oracle deghosts where the job does by default.
  const deghost = DEGHOST_BY_DEFAULT && canDeghost(scenario.blendType);
  const oracle = score(await blendFrames(pool, scenario.blendType, scene.toFrame ? sent.map((f, i) => broughtBack(f, scene.toFrame![i]!)) : sent, deghost));
  const base = { scenario: scenario.name, photo: name, draw, seed, params: scene.params, jpegQuality, baselines, best, oracle };

  const urls = api.serve(jpegs);
  try {
    const { job, image } = await api.blend(urls, { blendType: scenario.blendType });
    const result = score(image);
    const methods = ((job.alignment ?? []) as Array<{ method: string }>).map((a) => a.method).join(',') || 'not aligned';
    if (scenario.judge === 'exposure') {
      const clippedOf = (im: RgbImage) => (({ dark, bright }) => dark + bright)(clippedFractions(im));
      const brackets = sent.reduce((sum, f) => sum + clippedOf(f), 0) / sent.length;
      const clipped = { result: clippedOf(image), brackets };
      const pass = result.ssim >= 0.9 && clipped.result < brackets;
      let reference: Case['enfuse'];
      if (ENFUSE_SCENARIOS.has(scenario.name) && enfuseInstalled()) {
        const fused = await enfuse(jpegs);
        const [ssimOf, clippedFused] = [score(fused).ssim, clippedOf(fused)];
        reference = { ssim: ssimOf, clipped: clippedFused, pass: ssimOf >= 0.9 && clippedFused < brackets };
      }
      const enfuseNote = reference ? `; enfuse: SSIM ${reference.ssim.toFixed(4)}, clipped ${reference.clipped.toFixed(4)}` : '';
      return {
        ...base,
        result,
        methods,
        clipped,
        ...(reference ? { enfuse: reference } : {}),
        pass,
        why: pass ? '' : `SSIM ${result.ssim.toFixed(4)} (≥ 0.9), clipped ${clipped.result.toFixed(4)} (< ${brackets.toFixed(4)})${enfuseNote}`,
      };
    }
    const pass = atLeast(judged(result), judged(baselines[best]));
    const over = walking ? ' over the whole frame' : '';
    return { ...base, result, methods, pass, why: pass ? '' : `${judged(result).toFixed(2)} dB < naive ${best} ${judged(baselines[best]).toFixed(2)} dB${over}` };
  } catch (err) {
    if (!(err instanceof JobFailed)) throw err;
    return { ...base, error: err.message, pass: false, why: `job failed: ${err.message}` };
  } finally {
    api.forget(urls);
  }
}

/** Per scenario: jobs completed, mean PSNR (the judged one: walking scenes' over the whole frame) of result, best baseline and oracle, cases that beat the baseline, and the oracle target. */
export interface Summary {
  scenario: string;
  judge: Scenario['judge'];
  cases: number;
  completed: number;
  beat: number;
  psnr: number;
  worst: number;
  baseline: number;
  oracle: number;
  /** Mean ghost energy (test/blend-scenes-walking.ts): result, naive mean, oracle. */
  ghost?: { result: number; mean: number; oracle: number };
  withinOracle: boolean;
}

const average = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export function summarise(cases: Case[]): Summary[] {
  const names = [...new Set(cases.map((c) => c.scenario))];
  return names.map((scenario) => {
    const mine = cases.filter((c) => c.scenario === scenario);
    const done = mine.filter((c) => c.result);
    const judge = SCENARIOS.find((s) => s.name === scenario)?.judge ?? 'psnr';
    const psnr = done.length ? average(done.map((c) => judged(c.result!))) : NaN;
    const oracle = average(mine.map((c) => judged(c.oracle)));
    const walking = mine[0]!.oracle.ghost !== undefined;
    return {
      scenario,
      judge,
      cases: mine.length,
      completed: done.length,
      beat: mine.filter((c) => c.pass).length,
      psnr,
      worst: Math.min(...done.map((c) => judged(c.result!))),
      baseline: average(mine.map((c) => judged(c.baselines[c.best]))),
      oracle,
      ...(walking ? { ghost: { result: average(done.map((c) => c.result!.ghost!)), mean: average(mine.map((c) => c.baselines.mean.ghost!)), oracle: average(mine.map((c) => c.oracle.ghost!)) } } : {}),
      // Every case must complete for the average to mean anything.
      withinOracle: done.length === mine.length && psnr >= oracle - 1,
    };
  });
}

const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');

/** The report: one row per scenario, then every case that missed a target. */
export function markdown(cases: Case[]): string {
  const rows = summarise(cases).map((s) =>
    [
      s.scenario,
      `${s.completed} / ${s.cases}`,
      `${f2(s.psnr)} (worst ${f2(s.worst)})`,
      f2(s.baseline),
      f2(s.oracle),
      `${s.beat} / ${s.cases}${s.judge === 'exposure' ? ' (SSIM ≥ 0.9, fewer clipped)' : ''}`,
      s.withinOracle ? 'yes' : `no (${f2(s.psnr - s.oracle)} dB)`,
      s.ghost ? `${s.ghost.result.toFixed(0)} / ${s.ghost.mean.toFixed(0)} / ${s.ghost.oracle.toFixed(0)}` : '',
    ].join(' | '),
  );
  const failures = cases.filter((c) => !c.pass);
  const enfused = [...new Set(cases.filter((c) => c.enfuse).map((c) => c.scenario))].map((scenario) => {
    const mine = cases.filter((c) => c.scenario === scenario && c.enfuse && c.result);
    const ours = average(mine.map((c) => c.result!.ssim));
    const theirs = average(mine.map((c) => c.enfuse!.ssim));
    return `${scenario}: enfuse SSIM ${theirs.toFixed(4)} on average against ${ours.toFixed(4)} here, ${mine.filter((c) => c.enfuse!.pass).length} / ${mine.length} meeting the target (here ${mine.filter((c) => c.pass).length})`;
  });
  return [
    '| scenario | jobs completed | PSNR dB, mean | best naive baseline, mean | oracle, mean | beat the baseline | within 1 dB of the oracle | ghost energy: result / naive mean / oracle |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((row) => `| ${row} |`),
    '',
    ...(enfused.length ? [`For reference, Debian's enfuse (its default weights) on the same JPEGs, judged by the same rule: ${enfused.join('; ')}.`, ''] : []),
    failures.length ? 'Cases that missed a target:' : 'Every case met its targets.',
    '',
    ...failures.map((c) => `- ${c.scenario}, ${c.photo}, draw ${c.draw} (seed ${c.seed}, JPEG q${c.jpegQuality}, ${Object.entries(c.params).map(([k, v]) => `${k} ${v}`).join(', ')}; alignment ${c.methods ?? '–'}): ${c.why}`),
  ].join('\n');
}
