import { halve } from './grey.js';
import type { Homography } from './homography.js';

/**
 * The OpenCV.js half of alignment, run on the pool's first thread on thumbnails (~1000 px, so
 * its wasm heap stays small): AKAZE features per frame, then matching and a RANSAC homography per
 * pair (refined on the pixels by align/refine.ts, on any thread). Every cv object is deleted before
 * returning; only plain arrays leave this module.
 */

interface Mat {
  rows: number;
  data: Uint8Array;
  data64F: Float64Array;
  delete(): void;
}
interface KeyPoint {
  pt: { x: number; y: number };
  response: number;
}
interface Vector<T> {
  size(): number;
  get(i: number): T;
  delete(): void;
}
interface DMatch {
  queryIdx: number;
  trainIdx: number;
  distance: number;
}
interface Akaze {
  setNOctaveLayers(layers: number): void;
  detectAndCompute(image: Mat, mask: Mat, keypoints: Vector<KeyPoint>, descriptors: Mat): void;
  delete(): void;
}
interface Matcher {
  knnMatch(query: Mat, train: Mat, matches: Vector<Vector<DMatch>>, k: number): void;
  delete(): void;
}
/** The few OpenCV.js functions alignment uses (the package's own typings do not match 4.12's bindings). */
interface Cv {
  calledRun?: boolean;
  onRuntimeInitialized?: () => void;
  Mat: new (rows?: number, cols?: number, type?: number) => Mat;
  KeyPointVector: new () => Vector<KeyPoint>;
  DMatchVectorVector: new () => Vector<Vector<DMatch>>;
  AKAZE: new () => Akaze;
  BFMatcher: new (normType: number, crossCheck: boolean) => Matcher;
  matFromArray(rows: number, cols: number, type: number, values: ArrayLike<number>): Mat;
  findHomography(src: Mat, dst: Mat, method: number, reprojectionThreshold: number, mask: Mat, maxIters: number, confidence: number): Mat;
  exceptionFromPtr(pointer: number): { msg: string };
  CV_8U: number;
  CV_8UC1: number;
  CV_32FC2: number;
  NORM_HAMMING: number;
  RANSAC: number;
}

let loading: Promise<{ cv: Cv }> | undefined;

/**
 * OpenCV.js 4.12 under Node: the CommonJS export is the Emscripten module object, usable once
 * `calledRun` is set (~0.5 s after import, wasm compiled asynchronously); until then
 * `onRuntimeInitialized` is called. The object is a thenable whose `then` hands back the object
 * itself, so awaiting or returning it bare never settles: it is always passed boxed, `{ cv }`.
 */
function openCv(): Promise<{ cv: Cv }> {
  loading ??= import('@techstark/opencv-js').then(
    (mod) =>
      new Promise<{ cv: Cv }>((resolve) => {
        const cv = mod.default as unknown as Cv;
        if (cv.calledRun) return resolve({ cv });
        const previous = cv.onRuntimeInitialized;
        cv.onRuntimeInitialized = () => {
          previous?.();
          resolve({ cv });
        };
      }),
  );
  return loading;
}

/** OpenCV.js throws C++ exceptions as bare pointers; this makes one an Error with OpenCV's message. */
function asError(cv: Cv, err: unknown): unknown {
  return typeof err === 'number' ? new Error(`OpenCV: ${cv.exceptionFromPtr(err).msg}`) : err;
}

/** Loads OpenCV.js in this thread ahead of the first job. */
export async function loadOpenCv(): Promise<void> {
  await openCv();
}

export interface Features {
  count: number;
  /** x, y of each keypoint (thumbnail pixels). */
  points: Float32Array;
  /** `count × descriptorBytes` binary AKAZE descriptors. */
  descriptors: Uint8Array;
  descriptorBytes: number;
  /** Thumbnail pixels a pixel of the image searched covers a side (FEATURE_SIDE): how precisely a point is placed. */
  scale: number;
}

/** The strongest keypoints kept per frame, which bounds the brute-force matching time. */
const MAX_FEATURES = 2500;
/**
 * Features are found on the thumbnail halved while its longest side stays at least this long: a
 * 12 MP frame's ~1000 px thumbnail is searched at 500 px, a quarter of the work on the one thread
 * that runs OpenCV (the path every frame that must be aligned waits on), with matches enough on a
 * photo and a homography that refineEstimate then fits at the thumbnail's full resolution.
 */
const FEATURE_SIDE = 500;

/** The grey image halved (grey.ts `halve`: 2 × 2 means; rounded to whole levels; an odd last row or column dropped) while its longest side stays ≥ FEATURE_SIDE, and how many times. */
function featureLevel(grey: Uint8Array, width: number, height: number): { grey: Uint8Array; width: number; height: number; times: number } {
  let level = { grey, width, height, times: 0 };
  while (Math.max(level.width, level.height) >= 2 * FEATURE_SIDE) {
    const halved = halve(Float32Array.from(level.grey), level.width, level.height);
    const out = new Uint8Array(halved.length);
    for (let i = 0; i < halved.length; i++) out[i] = Math.round(halved[i]!);
    level = { grey: out, width: level.width >> 1, height: level.height >> 1, times: level.times + 1 };
  }
  return level;
}

/** AKAZE keypoints and descriptors of a grey thumbnail. */
export async function detectFeatures(grey: Uint8Array, width: number, height: number): Promise<Features> {
  const { cv } = await openCv();
  const level = featureLevel(grey, width, height);
  // a pixel u of a level halved `times` times covers thumbnail pixels from 2^times·u
  const [scale, offset] = [2 ** level.times, (2 ** level.times - 1) / 2];
  const image = new cv.Mat(level.height, level.width, cv.CV_8UC1);
  const mask = new cv.Mat();
  const keypoints = new cv.KeyPointVector();
  const descriptors = new cv.Mat();
  const akaze = new cv.AKAZE();
  try {
    image.data.set(level.grey);
    // Two sublevels per octave instead of four: half the time, still ~1 px accurate on photos.
    akaze.setNOctaveLayers(2);
    akaze.detectAndCompute(image, mask, keypoints, descriptors);
    const total = keypoints.size();
    const descriptorBytes = total > 0 ? descriptors.data.length / total : 0;
    const found = Array.from({ length: total }, (_, i) => keypoints.get(i));
    const order = found.map((_, i) => i).sort((a, b) => found[b]!.response - found[a]!.response).slice(0, MAX_FEATURES);
    const points = new Float32Array(order.length * 2);
    const kept = new Uint8Array(order.length * descriptorBytes);
    order.forEach((k, j) => {
      const { pt } = found[k]!;
      points[2 * j] = scale * pt.x + offset;
      points[2 * j + 1] = scale * pt.y + offset;
      kept.set(descriptors.data.subarray(k * descriptorBytes, (k + 1) * descriptorBytes), j * descriptorBytes);
    });
    return { count: order.length, points, descriptors: kept, descriptorBytes, scale };
  } catch (err) {
    throw asError(cv, err);
  } finally {
    for (const o of [image, mask, keypoints, descriptors, akaze]) o.delete();
  }
}

export interface FeatureMatch {
  /** Reference thumbnail pixel → frame thumbnail pixel, or null when RANSAC found none. */
  homography: Homography | null;
  /** Matches that passed the ratio test. */
  matches: number;
  inliers: number;
}

/** Lowe's ratio: a match counts when clearly better than the second-best candidate. */
const RATIO = 0.8;
/** RANSAC inlier distance, in pixels of the image the features were found on (Features.scale thumbnail pixels each). */
const REPROJECTION_THRESHOLD = 2;

/** Pairs (reference keypoint, frame keypoint) whose descriptors match under Lowe's ratio test. */
function matchFeatures(cv: Cv, ref: Features, frame: Features): Array<[number, number]> {
  const refDescriptors = cv.matFromArray(ref.count, ref.descriptorBytes, cv.CV_8U, ref.descriptors);
  const frameDescriptors = cv.matFromArray(frame.count, frame.descriptorBytes, cv.CV_8U, frame.descriptors);
  const knn = new cv.DMatchVectorVector();
  const matcher = new cv.BFMatcher(cv.NORM_HAMMING, false);
  try {
    matcher.knnMatch(frameDescriptors, refDescriptors, knn, 2);
    const pairs: Array<[number, number]> = [];
    for (let i = 0; i < knn.size(); i++) {
      const candidates = knn.get(i);
      if (candidates.size() === 2) {
        const best = candidates.get(0);
        if (best.distance < RATIO * candidates.get(1).distance) pairs.push([best.trainIdx, best.queryIdx]);
      }
      candidates.delete();
    }
    return pairs;
  } finally {
    for (const o of [refDescriptors, frameDescriptors, knn, matcher]) o.delete();
  }
}

/** RANSAC homography (reference point → frame point) of the matched pairs and its inlier count, or null. */
function fitHomography(cv: Cv, ref: Features, frame: Features, pairs: Array<[number, number]>): { homography: Homography; inliers: number } | null {
  const refPoints = pairs.flatMap(([r]) => [ref.points[2 * r]!, ref.points[2 * r + 1]!]);
  const framePoints = pairs.flatMap(([, f]) => [frame.points[2 * f]!, frame.points[2 * f + 1]!]);
  const src = cv.matFromArray(pairs.length, 1, cv.CV_32FC2, refPoints);
  const dst = cv.matFromArray(pairs.length, 1, cv.CV_32FC2, framePoints);
  const inlierMask = new cv.Mat();
  let found: Mat | undefined;
  try {
    found = cv.findHomography(src, dst, cv.RANSAC, REPROJECTION_THRESHOLD * Math.max(ref.scale, frame.scale), inlierMask, 2000, 0.995);
    if (found.rows !== 3) return null;
    return { homography: Array.from(found.data64F), inliers: inlierMask.data.reduce((n, v) => n + (v ? 1 : 0), 0) };
  } finally {
    for (const o of [src, dst, inlierMask]) o.delete();
    found?.delete();
  }
}

/** Matches a frame's features to the reference's and fits a RANSAC homography to them. */
export async function matchHomography(ref: Features, frame: Features): Promise<FeatureMatch> {
  const none: FeatureMatch = { homography: null, matches: 0, inliers: 0 };
  if (ref.count < 2 || frame.count < 2 || ref.descriptorBytes !== frame.descriptorBytes) return none;
  const { cv } = await openCv();
  try {
    const pairs = matchFeatures(cv, ref, frame);
    const fitted = pairs.length >= 4 ? fitHomography(cv, ref, frame, pairs) : null;
    return { homography: fitted?.homography ?? null, matches: pairs.length, inliers: fitted?.inliers ?? 0 };
  } catch (err) {
    throw asError(cv, err);
  }
}
