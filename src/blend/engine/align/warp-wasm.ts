import { Code, F64, fn, I32, instantiate, KernelArena, type ModuleSource, V128, type WasmMemory } from '../wasm/assembler.js';

/**
 * The full-size warp (align/warp.ts) in WebAssembly, byte for byte the JavaScript definition
 * `warpRowsJs`, four output pixels at a time: their positions in f64 exactly as it computes them
 * (h0·x + (h1·y + h2) and the others, then (n / w)·256 + 0.5 truncated, saturating), in two f64
 * pairs per coordinate, the column terms h0·x, h3·x, h6·x made once per band and loaded in each
 * row; the fixed-point split and the clamp to the frame's edges in i32x4 lanes (no branches). Then
 * the four pixels' samples: when their top-left ones are consecutive in one source row, as nearly
 * all are in a frame turned by up to a degree or slightly tilted, each row's 16 bytes are loaded
 * twice (at the first sample and 3 bytes on) and blended channel by channel with each pixel's
 * weights; otherwise (a group across source rows, clamped at the left edge, at a row's end, or
 * scaled) each pixel's two rows are gathered and blended, its three channels at once (two i16 dot
 * products). Either way the four pixels are 12 bytes written with one store. An affine homography
 * (h6 = h7 = 0, h8 = 1) takes a path without the division: w is exactly 1 there, so the numbers are
 * the same. A band of output rows is warped per call: JavaScript copies in the source rows the band
 * can reach (all of them when it cannot tell) and copies the band out. One kernel per thread; its
 * memory grows to the largest band asked for.
 */

/**
 * The kernel's parameters: source rows from row `first` at `src`, output rows [rowStart, rowEnd)
 * written from `dst`; at `h` the homography's nine entries as f64, then the f64 pairs (0, 1) and (2, 3);
 * at `columnTerms` room for the columns' terms, COLUMN_TERMS bytes a group of four columns.
 */
const PARAMS = {
  src: I32,
  first: I32,
  width: I32,
  height: I32,
  dst: I32,
  columns: I32,
  rowStart: I32,
  rowEnd: I32,
  h: I32,
  columnTerms: I32,
} as const;

const LOCALS = {
  y: I32,
  x: I32,
  o: I32,
  t: I32,
  q: I32,
  stride: I32,
  // f64 pairs: the row's terms h1·y + h2, h4·y + h5, h7·y + h8, the per-column ones, the last column
  rowX: V128,
  rowY: V128,
  rowW: V128,
  h0: V128,
  h3: V128,
  h6: V128,
  last: V128,
  low: V128,
  high: V128,
  xa: V128,
  xb: V128,
  wa: V128,
  wb: V128,
  // i32x4 constants
  zero: V128,
  half: V128,
  full: V128,
  fraction: V128,
  three: V128,
  maxX: V128,
  maxY: V128,
  strideV: V128,
  base: V128,
  scale: V128,
  round: V128,
  // the four pixels' positions, sample addresses and weights
  X: V128,
  Y: V128,
  x0: V128,
  y0: V128,
  fx: V128,
  fy: V128,
  outside: V128,
  p: V128,
  across: V128,
  weights: V128,
  gy: V128,
  v0: V128,
  v1: V128,
  v2: V128,
  v3: V128,
  // the consecutive path's: the steps (0, 3, 6, 9), each channel's weights (channels 0–3, 4–7, 8–11),
  // a row's 16 bytes at p0 and p0 + 3 and their first 8 interleaved, each row's horizontal blends
  steps: V128,
  across0: V128,
  across1: V128,
  across2: V128,
  gy0: V128,
  gy1: V128,
  gy2: V128,
  fy0: V128,
  fy1: V128,
  fy2: V128,
  here: V128,
  next: V128,
  pairs: V128,
  top0: V128,
  top1: V128,
  top2: V128,
  bottom0: V128,
  bottom1: V128,
  bottom2: V128,
} as const;

/** i8x16.shuffle lanes that take a pixel and its right neighbour (bytes 0–5) to bytes P.r, Q.r, P.g, Q.g, P.b, Q.b (of the first vector only, so one byte shuffle), widened after. */
const PAIRS = [0, 3, 1, 4, 2, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0];
/** i8x16.shuffle lanes that repeat 4-byte lane `k` of the first vector. */
const laneOf = (k: number) => Array.from({ length: 16 }, (_, i) => 4 * k + (i % 4));
/** i8x16.shuffle lanes that take the low i32 pairs of two vectors (trunc_sat_f64x2_s_zero's results) to one vector of four. */
const LOW_PAIRS = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
/**
 * i8x16.shuffle lanes that repeat, for channels 0–3, 4–7 and 8–11 of four consecutive pixels (pixel
 * k's three bytes are 3k, 3k + 1, 3k + 2), the 4-byte lane of the pixel each channel belongs to.
 */
const CHANNELS = [
  [0, 0, 0, 1],
  [1, 1, 2, 2],
  [2, 3, 3, 3],
].map((pixels) => pixels.flatMap((k) => [4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3]));
/** i8x16.shuffle lanes that interleave the low (`INTERLEAVE_LOW`) or high 8 bytes of two vectors: P0, Q0, P1, Q1... */
const INTERLEAVE_LOW = Array.from({ length: 16 }, (_, i) => (i >> 1) + (i % 2) * 16);
const INTERLEAVE_HIGH = INTERLEAVE_LOW.map((lane) => lane + 8);
/** i8x16.shuffle lanes that drop every fourth byte: four pixels [r g b 0] to 12 bytes (the last 4 unused). */
const PACK = [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 3, 7, 11, 15];

/** Bytes of a group of four columns' terms (warp): h0·x, h3·x, h6·x, each as two f64 pairs. */
const COLUMN_TERMS = 96;

/**
 * `warp(src, first, width, height, dst, columns, rowStart, rowEnd, h, columnTerms)`: a band of warpRowsJs,
 * projective or (`affine`) without the division. A row is written in groups of four pixels; the
 * last group's pixels beyond the row repeat its last pixel's position (so they sample inside the
 * rows copied in) and are written over by the next row, or land in the slack after the band.
 */
function warp(affine: boolean): Code {
  return fn({ params: PARAMS, locals: LOCALS }, (code, $) => {
    const f64Splat = (offset: number, local: number) => code.get($.h).loadF64(offset).op('f64x2.splat').set(local);
    const i32Splat = (value: () => void, local: number) => {
      value();
      code.op('i32x4.splat').set(local);
    };
    code.get($.width).i32(3).op('i32.mul').set($.stride);
    code.get($.dst).set($.o);
    f64Splat(0, $.h0);
    f64Splat(24, $.h3);
    f64Splat(48, $.h6);
    code.get($.h).load(72).set($.low);
    code.get($.h).load(88).set($.high);
    code.get($.columns).i32(1).op('i32.sub', 'f64.convert_i32_s', 'f64x2.splat').set($.last);
    code.f64(256).op('f64x2.splat').set($.scale);
    code.f64(0.5).op('f64x2.splat').set($.round);
    i32Splat(() => code.i32(0), $.zero);
    i32Splat(() => code.i32(32768), $.half);
    i32Splat(() => code.i32(256), $.full);
    i32Splat(() => code.i32(255), $.fraction);
    i32Splat(() => code.i32(3), $.three);
    i32Splat(() => code.get($.width).i32(1).op('i32.sub'), $.maxX);
    i32Splat(() => code.get($.height).i32(1).op('i32.sub'), $.maxY);
    i32Splat(() => code.get($.stride), $.strideV);
    // (0, 3, 6, 9): the columns' pairs (0, 1) and (2, 3) truncated to one i32x4, times 3
    code.get($.low).op('i32x4.trunc_sat_f64x2_s_zero').get($.high).op('i32x4.trunc_sat_f64x2_s_zero').shuffle(LOW_PAIRS).get($.three).op('i32x4.mul').set($.steps);
    // the address of source row 0 (rows before `first` are not copied in; none is read)
    i32Splat(() => code.get($.src).get($.first).get($.stride).op('i32.mul', 'i32.sub'), $.base);

    /** Splits the fixed-point positions (i32x4 local `at`) into whole pixels and fractions, clamped as warpRowsJs clamps them. */
    const split = (at: number, whole: number, fraction: number, max: number) => {
      code.get(at).i32(8).op('i32x4.shr_s').set(whole);
      code.get(at).get($.fraction).op('v128.and').set(fraction);
      // outside [0, max) (negative ones are large unsigned): the edge, 0 below and max beyond, with fraction 0
      code.get(whole).get(max).op('i32x4.ge_u').set($.outside);
      code.get(max).get(whole).get($.zero).op('i32x4.lt_s', 'v128.andnot').get(whole).get($.outside).op('v128.bitselect').set(whole);
      code.get(fraction).get($.outside).op('v128.andnot').set(fraction);
    };
    /** Fixed-point positions of the four pixels for one coordinate: (n / w)·256 + 0.5 of both pairs, truncated, saturating; the column terms (h0·x or h3·x) of both pairs at `t` + `offset`. */
    const positions = (offset: number, row: number, into: number) => {
      for (const [at, w] of [
        [offset, $.wa],
        [offset + 16, $.wb],
      ] as const) {
        code.get($.t).load(at).get(row).op('f64x2.add');
        if (!affine) code.get(w).op('f64x2.div');
        code.get($.scale).op('f64x2.mul').get($.round).op('f64x2.add', 'i32x4.trunc_sat_f64x2_s_zero');
      }
      code.shuffle(LOW_PAIRS).set(into);
    };
    /** The blended pixel `k` of the four, as i32 lanes [r, g, b, ·]. */
    const pixel = (k: number, into: number) => {
      const lane = (local: number) => code.get(local).get(local).shuffle(laneOf(k));
      code.get($.p).extractLane(k).set($.q);
      lane($.across).set($.weights);
      // a row's P and Q (6 bytes at its address) as i16 lanes P.r, Q.r, P.g, Q.g, P.b, Q.b, dotted with the weights
      const row = () => code.shuffle(PAIRS).op('i16x8.extend_low_i8x16_u').get($.weights).op('i32x4.dot_i16x8_s');
      code.get($.q).load64Splat(0).get($.zero);
      row();
      lane($.gy);
      code.op('i32x4.mul');
      code.get($.q).get($.stride).op('i32.add').load64Splat(0).get($.zero);
      row();
      lane($.fy);
      code.op('i32x4.mul', 'i32x4.add').get($.half).op('i32x4.add').i32(16).op('i32x4.shr_u').set(into);
    };
    /** The four pixels gathered one by one (pixel), packed into 12 bytes and stored at `o` (16 bytes written). */
    const gathered = () => {
      pixel(0, $.v0);
      pixel(1, $.v1);
      pixel(2, $.v2);
      pixel(3, $.v3);
      code.get($.o);
      code.get($.v0).get($.v1).op('i16x8.narrow_i32x4_u').get($.v2).get($.v3).op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u');
      code.get($.zero).shuffle(PACK).store(0);
    };
    /** A source row's horizontal blends P·(256 − fx) + Q·fx of channels 0–3, 4–7, 8–11 (i32 lanes) from the 16 bytes at `q` (P) and `q` + 3 (Q): each pair of bytes interleaved and dotted with its pixel's weights. */
    const row = (into: [number, number, number]) => {
      code.get($.q).load(0).set($.here);
      code.get($.q).load(3).set($.next);
      code.get($.here).get($.next).shuffle(INTERLEAVE_LOW).set($.pairs);
      code.get($.pairs).op('i16x8.extend_low_i8x16_u').get($.across0).op('i32x4.dot_i16x8_s').set(into[0]);
      code.get($.pairs).op('i16x8.extend_high_i8x16_u').get($.across1).op('i32x4.dot_i16x8_s').set(into[1]);
      code.get($.here).get($.next).shuffle(INTERLEAVE_HIGH).op('i16x8.extend_low_i8x16_u').get($.across2).op('i32x4.dot_i16x8_s').set(into[2]);
    };
    /**
     * The four pixels when their top-left samples are consecutive in the source (p = p0 + (0, 3, 6,
     * 9)), as most of a turned or slightly tilted frame's are: their 12 bytes are the first 12 of
     * the 16 at p0, their right neighbours' those at p0 + 3, and the same a row down, so each row is
     * two 16-byte loads instead of a gather a pixel. The arithmetic is the gathered path's in the
     * same lanes, channel by channel instead of pixel by pixel: the horizontal blend an i16 dot
     * product of each channel's P and Q, the vertical one in i32 lanes, each channel with its
     * pixel's weights (i32 lanes repeated: one 32-bit shuffle each). The 12 bytes come out in order;
     * the 4 after them (0) are written at o + 12..15 as the gathered path writes its slack. Reads
     * p0..p0 + 18 of both rows (the gathered path p0..p0 + 16).
     */
    const consecutive = () => {
      code.get($.p).extractLane(0).set($.q);
      CHANNELS.forEach((lanes, i) => {
        code.get($.across).get($.across).shuffle(lanes).set([$.across0, $.across1, $.across2][i]!);
        code.get($.gy).get($.gy).shuffle(lanes).set([$.gy0, $.gy1, $.gy2][i]!);
        code.get($.fy).get($.fy).shuffle(lanes).set([$.fy0, $.fy1, $.fy2][i]!);
      });
      row([$.top0, $.top1, $.top2]);
      code.get($.q).get($.stride).op('i32.add').set($.q);
      row([$.bottom0, $.bottom1, $.bottom2]);
      const down = (top: number, bottom: number, gy: number, fy: number) =>
        code.get(top).get(gy).op('i32x4.mul').get(bottom).get(fy).op('i32x4.mul', 'i32x4.add').get($.half).op('i32x4.add').i32(16).op('i32x4.shr_u');
      code.get($.o);
      down($.top0, $.bottom0, $.gy0, $.fy0);
      down($.top1, $.bottom1, $.gy1, $.fy1);
      code.op('i16x8.narrow_i32x4_u');
      down($.top2, $.bottom2, $.gy2, $.fy2);
      code.get($.zero).op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').store(0);
    };

    // Each group's column terms h0·x, h3·x (and h6·x) as f64 pairs, COLUMN_TERMS bytes a group, made
    // once for all rows of the band: the same products as computed in every row, without the
    // columns' conversion, their clamp to the last column (a NaN-aware f64x2.min) and the products
    code.get($.columnTerms).set($.t);
    code.forStep($.x, $.columns, 4, () => {
      // columns x..x+3 as f64 pairs, the ones beyond the row at its last column
      code.get($.x).op('f64.convert_i32_u', 'f64x2.splat').get($.low).op('f64x2.add').get($.last).op('f64x2.min').set($.xa);
      code.get($.x).op('f64.convert_i32_u', 'f64x2.splat').get($.high).op('f64x2.add').get($.last).op('f64x2.min').set($.xb);
      const products: Array<[number, number]> = [
        [$.h0, 0],
        [$.h3, 32],
      ];
      if (!affine) products.push([$.h6, 64]);
      for (const [h, offset] of products) {
        code.get($.t).get(h).get($.xa).op('f64x2.mul').store(offset);
        code.get($.t).get(h).get($.xb).op('f64x2.mul').store(offset + 16);
      }
      code.get($.t).i32(COLUMN_TERMS).op('i32.add').set($.t);
    });

    code.get($.rowStart).set($.y);
    code.whileBelow($.y, $.rowEnd, () => {
      const rowTerm = (a: number, b: number, into: number) =>
        code.get($.h).loadF64(a).get($.y).op('f64.convert_i32_u', 'f64.mul').get($.h).loadF64(b).op('f64.add', 'f64x2.splat').set(into);
      rowTerm(8, 16, $.rowX);
      rowTerm(32, 40, $.rowY);
      if (!affine) rowTerm(56, 64, $.rowW);
      code.get($.columnTerms).set($.t);
      code.forStep($.x, $.columns, 4, () => {
        if (!affine) {
          code.get($.t).load(64).get($.rowW).op('f64x2.add').set($.wa);
          code.get($.t).load(80).get($.rowW).op('f64x2.add').set($.wb);
        }
        positions(0, $.rowX, $.X);
        positions(32, $.rowY, $.Y);
        split($.X, $.x0, $.fx, $.maxX);
        split($.Y, $.y0, $.fy, $.maxY);
        // p: each top-left sample's address. The right and lower neighbours are read even at an
        // edge, where their weight is 0: P·256 + Q·0 is P exactly.
        code.get($.y0).get($.strideV).op('i32x4.mul').get($.x0).get($.three).op('i32x4.mul', 'i32x4.add').get($.base).op('i32x4.add').set($.p);
        // weights as i16 pairs (256 − fx, fx), and the rows' 256 − fy (fy as it is)
        code.get($.full).get($.fx).op('i32x4.sub').get($.fx).i32(16).op('i32x4.shl', 'v128.or').set($.across);
        code.get($.full).get($.fy).op('i32x4.sub').set($.gy);
        // p = p0 + (0, 3, 6, 9) in every lane: one row's consecutive samples; otherwise a gather a pixel
        code.get($.p).get($.p).shuffle(laneOf(0)).get($.steps).op('i32x4.add').get($.p).op('i32x4.eq', 'i32x4.all_true').when(consecutive, gathered);
        code.get($.o).i32(12).op('i32.add').set($.o);
        code.get($.t).i32(COLUMN_TERMS).op('i32.add').set($.t);
      });
      // the group's pixels beyond the row are written over from the next row's start
      code.get($.dst).get($.y).i32(1).op('i32.add').get($.rowStart).op('i32.sub').get($.columns).i32(3).op('i32.mul', 'i32.mul', 'i32.add').set($.o);
      code.get($.y).i32(1).op('i32.add').set($.y);
    });
  });
}

/** The module of the two kernels. */
export function warpModule(): ModuleSource {
  return { functions: { projective: warp(false), affine: warp(true) }, pages: 1 };
}

interface Kernel {
  projective(...args: number[]): void;
  affine(...args: number[]): void;
  memory: WasmMemory;
}

let kernel: Kernel | null = null;
let arena: KernelArena | null = null;

/** Source rows a bilinear sample may need beyond the band's corners: the corners' row and the next, and slack for rounding. */
const ROW_SLACK = 2;

/**
 * The source rows [first, last] that output rows [rowStart, rowEnd) of `columns` pixels can
 * sample under `h`. Where the divisor is positive at the band's four corners it is positive over
 * the band (it is linear), and the band's image is then the convex quadrilateral of the corners'
 * images: its rows are those between the corners'. Otherwise (a horizon crosses the band, or
 * numbers are not finite) every row.
 */
export function sourceRows(h: number[], columns: number, rowStart: number, rowEnd: number, height: number): [number, number] {
  const [h0, h1, h2, h3, h4, h5, h6, h7, h8] = h as [number, number, number, number, number, number, number, number, number];
  let low = Infinity;
  let high = -Infinity;
  for (const x of [0, columns - 1]) {
    for (const y of [rowStart, rowEnd - 1]) {
      const w = h6 * x + h7 * y + h8;
      const sy = (h3 * x + h4 * y + h5) / w;
      if (!(w > 0) || !Number.isFinite(sy) || !Number.isFinite((h0 * x + h1 * y + h2) / w)) return [0, height - 1];
      low = Math.min(low, sy);
      high = Math.max(high, sy);
    }
  }
  const first = Math.min(height - 1, Math.max(0, Math.floor(low) - ROW_SLACK));
  const last = Math.max(0, Math.min(height - 1, Math.ceil(high) + ROW_SLACK));
  return [Math.min(first, last), last];
}

/** Output rows [rowStart, rowEnd) of `out` = `frame` warped by `h` (see warpRowsJs), in the kernel. */
export function warpBand(src: Uint8Array, width: number, height: number, dst: Uint8Array, columns: number, h: number[], rowStart: number, rowEnd: number): void {
  if (rowEnd <= rowStart) return;
  kernel ??= instantiate(warpModule()).exports as unknown as Kernel;
  arena ??= new KernelArena(kernel.memory);
  const [first, last] = sourceRows(h, columns, rowStart, rowEnd, height);
  const stride = width * 3;
  const inBytes = (last - first + 1) * stride;
  const outBytes = (rowEnd - rowStart) * columns * 3;
  // one row more than copied in: the lower neighbour of the last row is read, with weight 0; and 16
  // bytes more: four consecutive samples ending at the last pixel of a row read 16 bytes from its
  // right neighbour's in the row below, 7 bytes beyond that row (gathered, 5), with weight 0
  const srcAt = arena.reset().alloc(inBytes + stride + 16);
  // the last group of four pixels may reach 3 pixels beyond the band, and its store 4 bytes further
  const dstAt = arena.alloc(outBytes + 16);
  const terms = arena.alloc(13 * 8);
  const columnTerms = arena.alloc(Math.ceil(columns / 4) * COLUMN_TERMS);
  const { u8, f64 } = arena.ready();
  u8.set(src.subarray(first * stride, first * stride + inBytes), srcAt);
  f64.set([...h.slice(0, 9), 0, 1, 2, 3], terms / 8);
  const affine = h[6] === 0 && h[7] === 0 && h[8] === 1;
  (affine ? kernel.affine : kernel.projective)(srcAt, first, width, height, dstAt, columns, rowStart, rowEnd, terms, columnTerms);
  dst.set(u8.subarray(dstAt, dstAt + outBytes), rowStart * columns * 3);
}

/** The locals both translation kernels (blendRow, blendRows) name alike: the fractions, their weights, and the 16 bytes read at `at` and `at` + 3. */
type FixedWeights = Record<'fx' | 'fy' | 'gx' | 'wx' | 'gy' | 'wy' | 'half' | 'at' | 'p' | 'q', number>;

/** The weights every pixel of the row shares: 256 − fx, fx, 256 − fy and fy as i16x8 splats, and the rounding 32768 as i32x4. */
function setWeights(code: Code, $: FixedWeights): void {
  code.i32(256).get($.fx).op('i32.sub', 'i16x8.splat').set($.gx);
  code.get($.fx).op('i16x8.splat').set($.wx);
  code.i32(256).get($.fy).op('i32.sub', 'i16x8.splat').set($.gy);
  code.get($.fy).op('i16x8.splat').set($.wy);
  code.i32(32768).op('i32x4.splat').set($.half);
}

/** A source row's 16 bytes from `at`: P·(256 − fx) + Q·fx (Q the bytes from `at` + 3) as two u16 vectors, bytes 0–7 into `low`, 8–15 into `high`. */
function across(code: Code, $: FixedWeights, low: number, high: number): void {
  code.get($.at).load(0).set($.p);
  code.get($.at).load(3).set($.q);
  code.get($.p).op('i16x8.extend_low_i8x16_u').get($.gx).op('i16x8.mul').get($.q).op('i16x8.extend_low_i8x16_u').get($.wx).op('i16x8.mul', 'i16x8.add').set(low);
  code.get($.p).op('i16x8.extend_high_i8x16_u').get($.gx).op('i16x8.mul').get($.q).op('i16x8.extend_high_i8x16_u').get($.wx).op('i16x8.mul', 'i16x8.add').set(high);
}

/**
 * The vertical blend of two rows' horizontal ones, (top·(256 − fy) + bottom·fy + 32768) >> 16 in
 * i32 lanes, narrowed back to 16 bytes and stored at the address on the stack.
 */
function downAndStore(code: Code, $: FixedWeights, topLow: number, topHigh: number, bottomLow: number, bottomHigh: number): void {
  const down = (top: number, bottom: number, extmul: 'i32x4.extmul_low_i16x8_u' | 'i32x4.extmul_high_i16x8_u') =>
    code.get(top).get($.gy).op(extmul).get(bottom).get($.wy).op(extmul, 'i32x4.add').get($.half).op('i32x4.add').i32(16).op('i32x4.shr_u');
  down(topLow, bottomLow, 'i32x4.extmul_low_i16x8_u');
  down(topLow, bottomLow, 'i32x4.extmul_high_i16x8_u');
  code.op('i16x8.narrow_i32x4_u');
  down(topHigh, bottomHigh, 'i32x4.extmul_low_i16x8_u');
  down(topHigh, bottomHigh, 'i32x4.extmul_high_i16x8_u');
  code.op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').store(0);
}

/**
 * `blend(top, bottom, dst, bytes, fx, fy)`: one output row of a translation by a fractional shift
 * (align/warp.ts warpTranslationRows), where every pixel's sample has the same weights: byte i of
 * the row is ((top[i]·(256 − fx) + top[i + 3]·fx)·(256 − fy) + (bottom[i]·(256 − fx) +
 * bottom[i + 3]·fx)·fy + 32768) >> 16, warpRowsJs's arithmetic for a pixel whose top-left sample
 * is at `top` (its lower neighbour's row at `bottom`), channel by channel. 16 bytes a step:
 * unaligned loads at i and i + 3 of both rows, widened to u16; the horizontal blend in u16 lanes
 * (at most 255·256 = 65280); the vertical one in i32 lanes (extended multiplies), rounded, shifted
 * and narrowed back to bytes. The last step may read 18 bytes and write 15 beyond `bytes`.
 */
function blendRow(): Code {
  return fn(
    {
      params: { top: I32, bottom: I32, dst: I32, bytes: I32, fx: I32, fy: I32 },
      locals: { i: I32, at: I32, gx: V128, wx: V128, gy: V128, wy: V128, half: V128, topLow: V128, topHigh: V128, bottomLow: V128, bottomHigh: V128, p: V128, q: V128 },
    },
    (code, $) => {
      setWeights(code, $);
      code.forStep($.i, $.bytes, 16, () => {
        code.get($.top).get($.i).op('i32.add').set($.at);
        across(code, $, $.topLow, $.topHigh);
        code.get($.bottom).get($.i).op('i32.add').set($.at);
        across(code, $, $.bottomLow, $.bottomHigh);
        code.get($.dst).get($.i).op('i32.add');
        downAndStore(code, $, $.topLow, $.topHigh, $.bottomLow, $.bottomHigh);
      });
    },
  );
}

/**
 * `blendRows(src, stride, dst, dstStride, rows, bytes, fx, fy)`: `rows` output rows of blendRow
 * (bytes ≥ 16), row r from source rows r and r + 1 of `src` with the same fractions: the
 * horizontal blend of each source row is made once and serves two output rows, as the kernel goes
 * down each 16-byte column of the rows before the next. The last column starts at bytes − 16
 * (written twice, with the same bytes): nothing is read beyond a row's bytes + 3 or written beyond
 * its bytes, which the next row's first column, written before, may hold.
 */
function blendRows(): Code {
  return fn(
    {
      params: { src: I32, stride: I32, dst: I32, dstStride: I32, rows: I32, bytes: I32, fx: I32, fy: I32 },
      locals: { i: I32, r: I32, at: I32, o: I32, gx: V128, wx: V128, gy: V128, wy: V128, half: V128, topLow: V128, topHigh: V128, bottomLow: V128, bottomHigh: V128, p: V128, q: V128 },
    },
    (code, $) => {
      setWeights(code, $);
      code.i32(0).set($.i);
      code.whileBelow($.i, $.bytes, () => {
        // the column's first byte: i, or bytes − 16 for the last one
        code.get($.i).get($.bytes).i32(16).op('i32.sub').get($.i).get($.bytes).i32(16).op('i32.sub', 'i32.lt_s', 'select').set($.o);
        code.get($.src).get($.o).op('i32.add').set($.at);
        code.get($.dst).get($.o).op('i32.add').set($.o);
        across(code, $, $.topLow, $.topHigh);
        code.forStep($.r, $.rows, 1, () => {
          code.get($.at).get($.stride).op('i32.add').set($.at);
          across(code, $, $.bottomLow, $.bottomHigh);
          code.get($.o);
          downAndStore(code, $, $.topLow, $.topHigh, $.bottomLow, $.bottomHigh);
          code.get($.bottomLow).set($.topLow);
          code.get($.bottomHigh).set($.topHigh);
          code.get($.o).get($.dstStride).op('i32.add').set($.o);
        });
        code.get($.i).i32(16).op('i32.add').set($.i);
      });
    },
  );
}

/** The module of the translation's row kernels (its own memory: align/warp.ts copies in only the rows it blends). */
export function warpTranslationModule(): ModuleSource {
  return { functions: { blendRow: blendRow(), blendRows: blendRows() }, pages: 1 };
}

interface TranslationKernel {
  blendRow(top: number, bottom: number, dst: number, bytes: number, fx: number, fy: number): void;
  blendRows(src: number, stride: number, dst: number, dstStride: number, rows: number, bytes: number, fx: number, fy: number): void;
  memory: WasmMemory;
}

let translation: { kernel: TranslationKernel; arena: KernelArena } | null = null;

/** This thread's instance of the translation kernel and the arena over its memory. */
export function translationKernel(): { kernel: TranslationKernel; arena: KernelArena } {
  if (!translation) {
    const kernel = instantiate(warpTranslationModule()).exports as unknown as TranslationKernel;
    translation = { kernel, arena: new KernelArena(kernel.memory) };
  }
  return translation;
}
