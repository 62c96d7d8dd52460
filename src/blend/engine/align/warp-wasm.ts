import { Code, F64, fn, I32, instantiate, KernelArena, type ModuleSource, V128, type WasmMemory } from '../wasm/assembler.js';
import { cubicWeights, WEIGHT_BITS } from './cubic.js';

/**
 * The full-size warp (align/warp.ts) in WebAssembly, byte for byte the JavaScript definition
 * `warpRowsJs` (bicubic, Catmull–Rom), four output pixels at a time: their positions in f64
 * exactly as it computes them (h0·x + (h1·y + h2) and the others, then (n / w)·256 + 0.5
 * truncated, saturating), in two f64 pairs per coordinate, the column terms h0·x, h3·x, h6·x made
 * once per band and loaded in each row; the fixed-point split and the clamp to the frame's edges
 * in i32x4 lanes (no branches); the taps' weights (cubicWeights) loaded from a table by fraction.
 * The source rows are copied in with their edges replicated (a pixel left of each row, two right
 * of it, a row above the band's first, two below its last), so no tap's address is clamped: the
 * replicated pixels are the clamped taps' values. Then the four pixels' samples: when their
 * centre taps are consecutive in one source row, as nearly all are in a frame turned by up to a
 * degree or slightly tilted, each of the four tap rows is four 16-byte loads (taps −1 and 0
 * interleaved and dotted with their weights in i16 pairs, taps 1 and 2 alike) for the four pixels'
 * twelve channels at once; otherwise (a group across source rows, clamped at the left edge, or
 * scaled) each pixel's tap rows are loaded and reordered channel by channel (R0–R3, G0–G3, B0–B3)
 * and dotted with its weights. Sums in i32 lanes (at most 255 · 1178² ≈ 3.5·10^8), rounded, shifted
 * by 20 and narrowed with saturation to bytes. The four pixels are 12 bytes written with one store.
 * An affine homography (h6 = h7 = 0, h8 = 1) takes a path without the division: w is exactly 1
 * there, so the numbers are the same. A band of output rows is warped per call: JavaScript copies
 * in the source rows the band can reach (all of them when it cannot tell) and copies the band out.
 * One kernel per thread; its memory grows to the largest band asked for.
 */

/**
 * The kernel's parameters: source pixel (0, `first`) at `src`, rows `stride` bytes apart (the
 * replicated edges included: pixel −1 at src − 3), output rows [rowStart, rowEnd) written from
 * `dst`; at `h` the homography's nine entries as f64, then the f64 pairs (0, 1) and (2, 3); at
 * `columnTerms` room for the columns' terms, COLUMN_TERMS bytes a group of four columns.
 */
const PARAMS = {
  src: I32,
  first: I32,
  width: I32,
  height: I32,
  stride: I32,
  dst: I32,
  columns: I32,
  rowStart: I32,
  rowEnd: I32,
  h: I32,
  columnTerms: I32,
  table: I32,
} as const;

const LOCALS = {
  y: I32,
  x: I32,
  o: I32,
  t: I32,
  q: I32,
  j: I32,
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
  fraction: V128,
  three: V128,
  maxX: V128,
  maxY: V128,
  strideV: V128,
  base: V128,
  scale: V128,
  round: V128,
  // the four pixels' positions, centre tap addresses and weights
  X: V128,
  Y: V128,
  x0: V128,
  y0: V128,
  fx: V128,
  fy: V128,
  outside: V128,
  p: V128,
  // scratch of the weights' loads and shuffles
  s0: V128,
  s1: V128,
  s2: V128,
  s3: V128,
  s4: V128,
  // taps −1, 0 and taps 1, 2 horizontally as i16 pairs; the four rows' weights as i32
  pair01: V128,
  pair23: V128,
  wy0: V128,
  wy1: V128,
  wy2: V128,
  wy3: V128,
  v0: V128,
  v1: V128,
  v2: V128,
  v3: V128,
  // the gathered path's: a pixel's horizontal weights (w0 w1 w2 w3 twice, i16), a tap row reordered, sums
  weights: V128,
  taps: V128,
  sumA: V128,
  sumB: V128,
  // the consecutive path's: steps (0, 3, 6, 9), channels 0–3, 4–7, 8–11's weights, loads, sums
  steps: V128,
  a01_0: V128,
  a01_1: V128,
  a01_2: V128,
  a23_0: V128,
  a23_1: V128,
  a23_2: V128,
  here: V128,
  next: V128,
  pairs: V128,
  r0: V128,
  r1: V128,
  r2: V128,
  acc0: V128,
  acc1: V128,
  acc2: V128,
} as const;

/** i8x16.shuffle lanes that take i32 lanes `lanes` (0–3 of the first vector, 4–7 of the second). */
const lanes32 = (lanes: number[]) => lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]);
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
/** i8x16.shuffle lanes that reorder a tap row's four pixels (12 bytes) channel by channel: R0–R3, G0–G3, B0–B3. */
const BY_CHANNEL = [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, 12, 13, 14, 15];
/** i8x16.shuffle lanes that take pixel k's pairs (w0, w1) and (w2, w3) from two vectors to i16 lanes w0 w1 w2 w3 w0 w1 w2 w3. */
const WEIGHTS_OF = (k: number) => lanes32([k, 4 + k, k, 4 + k]);
/** i32 lanes (as i8x16.shuffle lanes of two vectors) 0, 2 of the first and 0 of the second, and 1, 3 of the first and 1 of the second: a pixel's R, G, B partial sums side by side. */
const EVEN = lanes32([0, 2, 4, 4]);
const ODD = lanes32([1, 3, 5, 5]);

/** The rounding and shift of a sum of taps × horizontal × vertical weights (each in 1/2^WEIGHT_BITS). */
const SHIFT = 2 * WEIGHT_BITS;

/**
 * cubicWeights of every fraction 0–255, 32 bytes each, for the general kernel to load instead of
 * computing: the horizontal weights as i16 pairs (w0, w1), (w2, w3) in bytes 0–7, the four as
 * i32 in bytes 16–31.
 */
const WEIGHT_TABLE = (() => {
  const table = new Int32Array(256 * 8);
  for (let f = 0; f < 256; f++) {
    const [w0, w1, w2, w3] = cubicWeights(f);
    table[8 * f] = (w0 & 0xffff) | (w1 << 16);
    table[8 * f + 1] = (w2 & 0xffff) | (w3 << 16);
    table.set([w0, w1, w2, w3], 8 * f + 4);
  }
  return new Uint8Array(table.buffer);
})();

/** Bytes of a group of four columns' terms (warp): h0·x, h3·x, h6·x, each as two f64 pairs. */
const COLUMN_TERMS = 96;

/**
 * `warp(src, first, width, height, stride, dst, columns, rowStart, rowEnd, h, columnTerms)`: a band
 * of warpRowsJs, projective or (`affine`) without the division. A row is written in groups of four
 * pixels; the last group's pixels beyond the row repeat its last pixel's position (so they sample
 * inside the rows copied in) and are written over by the next row, or land in the slack after the
 * band.
 */
function warp(affine: boolean): Code {
  return fn({ params: PARAMS, locals: LOCALS }, (code, $) => {
    const f64Splat = (offset: number, local: number) => code.get($.h).loadF64(offset).op('f64x2.splat').set(local);
    const i32Splat = (value: () => void, local: number) => {
      value();
      code.op('i32x4.splat').set(local);
    };
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
    i32Splat(() => code.i32(1 << (SHIFT - 1)), $.half);
    i32Splat(() => code.i32(255), $.fraction);
    i32Splat(() => code.i32(3), $.three);
    i32Splat(() => code.get($.width).i32(1).op('i32.sub'), $.maxX);
    i32Splat(() => code.get($.height).i32(1).op('i32.sub'), $.maxY);
    i32Splat(() => code.get($.stride), $.strideV);
    // (0, 3, 6, 9): the columns' pairs (0, 1) and (2, 3) truncated to one i32x4, times 3
    code.get($.low).op('i32x4.trunc_sat_f64x2_s_zero').get($.high).op('i32x4.trunc_sat_f64x2_s_zero').shuffle(LOW_PAIRS).get($.three).op('i32x4.mul').set($.steps);
    // the address of source pixel (0, 0) (rows before `first` − 1 are not copied in; none is read)
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
    /**
     * The four pixels' weights from the table (WEIGHT_TABLE, at `table`): the horizontal ones as
     * i16 pairs (w0, w1) into pair01 and (w2, w3) into pair23, one i32 lane a pixel; the vertical
     * ones into wy0..wy3, lane k pixel k's. Each pixel's entry loaded at its fraction, then
     * transposed by shuffles.
     */
    const weights = () => {
      const entry = (f: number, k: number) => code.get(f).extractLane(k).i32(5).op('i32.shl').get($.table).op('i32.add');
      const loaded = [$.v0, $.v1, $.v2, $.v3];
      loaded.forEach((into, k) => entry($.fx, k).load64Splat(0).set(into));
      // [p01₀, p23₀, p01₁, p23₁] and [p01₂, p23₂, p01₃, p23₃], then their even and odd lanes
      code.get($.v0).get($.v1).shuffle(lanes32([0, 1, 4, 5])).set($.s0);
      code.get($.v2).get($.v3).shuffle(lanes32([0, 1, 4, 5])).set($.s1);
      code.get($.s0).get($.s1).shuffle(lanes32([0, 2, 4, 6])).set($.pair01);
      code.get($.s0).get($.s1).shuffle(lanes32([1, 3, 5, 7])).set($.pair23);
      loaded.forEach((into, k) => entry($.fy, k).load(16).set(into));
      // a 4 × 4 transpose: pixel k's (w0, w1, w2, w3) → wy_j's lane k
      code.get($.v0).get($.v1).shuffle(lanes32([0, 4, 1, 5])).set($.s2);
      code.get($.v2).get($.v3).shuffle(lanes32([0, 4, 1, 5])).set($.s3);
      code.get($.v0).get($.v1).shuffle(lanes32([2, 6, 3, 7])).set($.s4);
      code.get($.v2).get($.v3).shuffle(lanes32([2, 6, 3, 7])).set($.s0);
      code.get($.s2).get($.s3).shuffle(lanes32([0, 1, 4, 5])).set($.wy0);
      code.get($.s2).get($.s3).shuffle(lanes32([2, 3, 6, 7])).set($.wy1);
      code.get($.s4).get($.s0).shuffle(lanes32([0, 1, 4, 5])).set($.wy2);
      code.get($.s4).get($.s0).shuffle(lanes32([2, 3, 6, 7])).set($.wy3);
    };
    /** The rounding, shift and saturating narrowing of three channel groups' sums (i32x4 locals) to 12 bytes stored at `o` (16 written). */
    const store = (sums: [number, number, number, number]) => {
      const out = (sum: number) => code.get(sum).get($.half).op('i32x4.add').i32(SHIFT).op('i32x4.shr_s');
      code.get($.o);
      out(sums[0]);
      out(sums[1]);
      code.op('i16x8.narrow_i32x4_u');
      out(sums[2]);
      out(sums[3]);
      code.op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u');
    };
    /** Pixel `k` of the four: its 4 × 4 taps, each tap row reordered by channel and dotted with its horizontal weights, as i32 lanes [r, g, b, ·] (before rounding) in `into`. */
    const pixel = (k: number, into: number) => {
      code.get($.pair01).get($.pair23).shuffle(WEIGHTS_OF(k)).set($.weights);
      // tap −1 of row −1
      code.get($.p).extractLane(k).i32(3).op('i32.sub').get($.stride).op('i32.sub').set($.q);
      [$.wy0, $.wy1, $.wy2, $.wy3].forEach((wy, j) => {
        code.get($.q).load(0).get($.zero).shuffle(BY_CHANNEL).set($.taps);
        // [R01, R23, G01, G23] and [B01, B23, ·, ·], times the row's weight
        code.get($.taps).op('i16x8.extend_low_i8x16_u').get($.weights).op('i32x4.dot_i16x8_s').get(wy).get(wy).shuffle(laneOf(k)).op('i32x4.mul');
        if (j > 0) code.get($.sumA).op('i32x4.add');
        code.set($.sumA);
        code.get($.taps).op('i16x8.extend_high_i8x16_u').get($.weights).op('i32x4.dot_i16x8_s').get(wy).get(wy).shuffle(laneOf(k)).op('i32x4.mul');
        if (j > 0) code.get($.sumB).op('i32x4.add');
        code.set($.sumB);
        code.get($.q).get($.stride).op('i32.add').set($.q);
      });
      code.get($.sumA).get($.sumB).shuffle(EVEN).get($.sumA).get($.sumB).shuffle(ODD).op('i32x4.add').set(into);
    };
    /** The four pixels gathered one by one (pixel), packed into 12 bytes and stored at `o` (16 bytes written). */
    const gathered = () => {
      pixel(0, $.v0);
      pixel(1, $.v1);
      pixel(2, $.v2);
      pixel(3, $.v3);
      store([$.v0, $.v1, $.v2, $.v3]);
      code.get($.zero).shuffle(PACK).store(0);
    };
    /** A tap row's taps t and t + 1 for the four pixels' channels 0–3, 4–7, 8–11 (i32 lanes): the 16 bytes at `q` (tap t) and `q` + 3 (tap t + 1) interleaved and dotted with each channel's pixel's weights `across`; added to `into` when `add`. */
    const row = (across: [number, number, number], into: [number, number, number], add: boolean) => {
      code.get($.q).load(0).set($.here);
      code.get($.q).load(3).set($.next);
      code.get($.here).get($.next).shuffle(INTERLEAVE_LOW).set($.pairs);
      const dot = (value: () => void, c: 0 | 1 | 2) => {
        value();
        code.get(across[c]).op('i32x4.dot_i16x8_s');
        if (add) code.get(into[c]).op('i32x4.add');
        code.set(into[c]);
      };
      dot(() => code.get($.pairs).op('i16x8.extend_low_i8x16_u'), 0);
      dot(() => code.get($.pairs).op('i16x8.extend_high_i8x16_u'), 1);
      dot(() => code.get($.here).get($.next).shuffle(INTERLEAVE_HIGH).op('i16x8.extend_low_i8x16_u'), 2);
    };
    /**
     * The four pixels when their centre taps are consecutive in the source (p = p0 + (0, 3, 6, 9)),
     * as most of a turned or slightly tilted frame's are: tap t of the four pixels is the 12 bytes
     * at p0 + 3(t − 1) of each tap row, so a tap row is four 16-byte loads (taps −1 and 0 at q and q
     * + 3, taps 1 and 2 at q + 6 and q + 9) instead of a gather a pixel, its sums made channel by
     * channel with each channel's pixel's weights (i32 lanes repeated: one 32-bit shuffle each),
     * then times the row's vertical weights and added up. The 12 bytes come out in order; the 4
     * after them are written at o + 12..15 as the gathered path writes its slack. Reads p0 − 3 −
     * stride .. p0 + 25 + 2·stride.
     */
    const consecutive = () => {
      CHANNELS.forEach((lanes, i) => {
        code.get($.pair01).get($.pair01).shuffle(lanes).set([$.a01_0, $.a01_1, $.a01_2][i]!);
        code.get($.pair23).get($.pair23).shuffle(lanes).set([$.a23_0, $.a23_1, $.a23_2][i]!);
      });
      code.get($.p).extractLane(0).i32(3).op('i32.sub').get($.stride).op('i32.sub').set($.j);
      [$.wy0, $.wy1, $.wy2, $.wy3].forEach((wy, j) => {
        code.get($.j).set($.q);
        row([$.a01_0, $.a01_1, $.a01_2], [$.r0, $.r1, $.r2], false);
        code.get($.j).i32(6).op('i32.add').set($.q);
        row([$.a23_0, $.a23_1, $.a23_2], [$.r0, $.r1, $.r2], true);
        [$.r0, $.r1, $.r2].forEach((r, c) => {
          code.get(r).get(wy).get(wy).shuffle(CHANNELS[c]!).op('i32x4.mul');
          if (j > 0) code.get([$.acc0, $.acc1, $.acc2][c]!).op('i32x4.add');
          code.set([$.acc0, $.acc1, $.acc2][c]!);
        });
        code.get($.j).get($.stride).op('i32.add').set($.j);
      });
      store([$.acc0, $.acc1, $.acc2, $.zero]);
      code.store(0);
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
        // p: each centre tap's address; its neighbours are read at ±3 and ±stride, the edges replicated
        code.get($.y0).get($.strideV).op('i32x4.mul').get($.x0).get($.three).op('i32x4.mul', 'i32x4.add').get($.base).op('i32x4.add').set($.p);
        // horizontal weights as i16 pairs (w0, w1) and (w2, w3); the rows' weights as they are
        weights();
        // p = p0 + (0, 3, 6, 9) in every lane: one row's consecutive taps; otherwise a gather a pixel
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

/** Source rows beyond the band's corners' rows copied in for rounding (warpBand adds the taps' one above and two below). */
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

/**
 * An address for `bytes` bytes in `arena` at the same offset modulo 8 as byte `index` of `array`:
 * V8 copies between a SharedArrayBuffer and another buffer word by word only when both ends have
 * the same offset in a word, byte by byte otherwise (about 4 times slower).
 */
export function allocAligned(arena: KernelArena, bytes: number, array: Uint8Array, index: number): number {
  const at = arena.alloc(bytes + 8);
  return at + (((array.byteOffset + index - at) % 8) + 8) % 8;
}

/** Pixels replicated left of each source row copied in (the tap at −1 of column 0) and right of it (taps 1 and 2 of the last column). */
const LEFT = 1;
const RIGHT = 2;

/**
 * Bytes between source rows copied in with their edges (copyRowsPadded): a row's own, the
 * replicated pixels, and slack to 16 more, so that every row is at the same offset modulo 8
 * from its bytes in the frame as the first (allocAligned).
 */
export function paddedStride(width: number): number {
  return width * 3 + 16;
}

/**
 * Copies rows `first` … `first` + `rows` − 1 of the frame `src` into `arena`, each clamped to the
 * frame (a row above or below it is its edge row), `paddedStride` bytes apart, each with its first
 * pixel repeated before it (LEFT) and its last after it (RIGHT), and `slack` bytes after the last.
 * Returns the address of row `first`'s pixel 0. The rows keep their offset modulo 8 in the frame,
 * so V8 copies them word by word.
 */
export function copyRowsPadded(arena: KernelArena, src: Uint8Array, width: number, height: number, first: number, rows: number, slack: number): number {
  const rowBytes = width * 3;
  const stride = paddedStride(width);
  // 8 bytes before the first row for its replicated pixel (8: the offset modulo 8 is kept)
  const at0 = allocAligned(arena, 8 + rows * stride + slack, src, first * rowBytes) + 8;
  const { u8 } = arena.ready();
  for (let r = 0; r < rows; r++) {
    const y = Math.min(height - 1, Math.max(0, first + r));
    const at = at0 + r * stride;
    u8.set(src.subarray(y * rowBytes, (y + 1) * rowBytes), at);
    u8.copyWithin(at - LEFT * 3, at, at + 3);
    for (let k = 0; k < RIGHT; k++) u8.copyWithin(at + rowBytes + k * 3, at + rowBytes - 3, at + rowBytes);
  }
  return at0;
}

/** Output rows [rowStart, rowEnd) of `out` = `frame` warped by `h` (see warpRowsJs), in the kernel. */
export function warpBand(src: Uint8Array, width: number, height: number, dst: Uint8Array, columns: number, h: number[], rowStart: number, rowEnd: number): void {
  if (rowEnd <= rowStart) return;
  kernel ??= instantiate(warpModule()).exports as unknown as Kernel;
  arena ??= new KernelArena(kernel.memory);
  const [first, last] = sourceRows(h, columns, rowStart, rowEnd, height);
  const stride = paddedStride(width);
  const outBytes = (rowEnd - rowStart) * columns * 3;
  // rows first − 1 .. last + 2, edges replicated: the taps of a sample in rows [first, last], their
  // coordinates clamped to the frame as warpRowsJs clamps them; 32 bytes more: the consecutive path
  // reads up to 25 bytes past its last group's first pixel, which may be a row's last but three
  const rowAbove = copyRowsPadded(arena.reset(), src, width, height, first - 1, last - first + 4, 32);
  // the last group of four pixels may reach 3 pixels beyond the band, and its store 4 bytes further
  const dstAt = allocAligned(arena, outBytes + 16, dst, rowStart * columns * 3);
  const terms = arena.alloc(13 * 8);
  const columnTerms = arena.alloc(Math.ceil(columns / 4) * COLUMN_TERMS);
  const table = arena.alloc(WEIGHT_TABLE.length);
  const { u8, f64 } = arena.ready();
  f64.set([...h.slice(0, 9), 0, 1, 2, 3], terms / 8);
  u8.set(WEIGHT_TABLE, table);
  const affine = h[6] === 0 && h[7] === 0 && h[8] === 1;
  (affine ? kernel.affine : kernel.projective)(rowAbove + stride, first, width, height, stride, dstAt, columns, rowStart, rowEnd, terms, columnTerms, table);
  dst.set(u8.subarray(dstAt, dstAt + outBytes), rowStart * columns * 3);
}

/**
 * `horizontal(src, dst, bytes, w0, w1, w2, w3)`: one source row of a translation by a fractional
 * shift (align/warp.ts warpTranslationRows), where every pixel has the same horizontal weights:
 * i32 lane i of `dst` is w0·src[i − 3] + w1·src[i] + w2·src[i + 3] + w3·src[i + 6] (the taps at
 * −1, 0, 1, 2 pixels of byte i's channel), for bytes [0, bytes). 16 bytes a step: four unaligned
 * loads, widened to i16, multiplied by each tap's weight into i32 lanes (extended multiplies) and
 * added, 64 bytes stored. Reads src − 3 to 21 bytes past the last step's start; the last step
 * writes up to 60 bytes beyond 4·bytes.
 */
function horizontal(): Code {
  return fn(
    {
      params: { src: I32, dst: I32, bytes: I32, w0: I32, w1: I32, w2: I32, w3: I32 },
      locals: { i: I32, at: I32, out: I32, k0: V128, k1: V128, k2: V128, k3: V128, v: V128, low: V128, high: V128, s0: V128, s1: V128, s2: V128, s3: V128 },
    },
    (code, $) => {
      const weights = [$.k0, $.k1, $.k2, $.k3];
      [$.w0, $.w1, $.w2, $.w3].forEach((w, t) => code.get(w).op('i16x8.splat').set(weights[t]!));
      const sums = [$.s0, $.s1, $.s2, $.s3];
      code.forStep($.i, $.bytes, 16, () => {
        code.get($.src).get($.i).op('i32.add').i32(3).op('i32.sub').set($.at);
        for (let t = 0; t < 4; t++) {
          code.get($.at).load(3 * t).set($.v);
          code.get($.v).op('i16x8.extend_low_i8x16_u').set($.low);
          code.get($.v).op('i16x8.extend_high_i8x16_u').set($.high);
          const parts: Array<[number, 'i32x4.extmul_low_i16x8_s' | 'i32x4.extmul_high_i16x8_s']> = [
            [$.low, 'i32x4.extmul_low_i16x8_s'],
            [$.low, 'i32x4.extmul_high_i16x8_s'],
            [$.high, 'i32x4.extmul_low_i16x8_s'],
            [$.high, 'i32x4.extmul_high_i16x8_s'],
          ];
          parts.forEach(([half, extmul], k) => {
            code.get(half).get(weights[t]!).op(extmul);
            if (t > 0) code.get(sums[k]!).op('i32x4.add');
            code.set(sums[k]!);
          });
        }
        code.get($.dst).get($.i).i32(2).op('i32.shl', 'i32.add').set($.out);
        sums.forEach((sum, k) => code.get($.out).get(sum).store(16 * k));
      });
    },
  );
}

/**
 * `vertical(r0, r1, r2, r3, dst, bytes, w0, w1, w2, w3)`: one output row of a translation from the
 * horizontal sums (i32 lanes, `horizontal`) of its four tap rows at r0..r3: byte i of `dst` is
 * (w0·r0[i] + w1·r1[i] + w2·r2[i] + w3·r3[i] + 2^19) >> 20, clamped to 0–255 (warpRowsJs's sum,
 * rounding and clamp). 16 bytes a step; the last step writes up to 15 bytes beyond `bytes`.
 */
function vertical(): Code {
  return fn(
    {
      params: { r0: I32, r1: I32, r2: I32, r3: I32, dst: I32, bytes: I32, w0: I32, w1: I32, w2: I32, w3: I32 },
      locals: { i: I32, at: I32, k0: V128, k1: V128, k2: V128, k3: V128, half: V128 },
    },
    (code, $) => {
      const weights = [$.k0, $.k1, $.k2, $.k3];
      [$.w0, $.w1, $.w2, $.w3].forEach((w, t) => code.get(w).op('i32x4.splat').set(weights[t]!));
      code.i32(1 << (SHIFT - 1)).op('i32x4.splat').set($.half);
      const rows = [$.r0, $.r1, $.r2, $.r3];
      code.forStep($.i, $.bytes, 16, () => {
        code.get($.i).i32(2).op('i32.shl').set($.at);
        code.get($.dst).get($.i).op('i32.add');
        const lanes = (k: number) => {
          rows.forEach((row, j) => {
            code.get(row).get($.at).op('i32.add').load(16 * k).get(weights[j]!).op('i32x4.mul');
            if (j > 0) code.op('i32x4.add');
          });
          code.get($.half).op('i32x4.add').i32(SHIFT).op('i32x4.shr_s');
        };
        lanes(0);
        lanes(1);
        code.op('i16x8.narrow_i32x4_u');
        lanes(2);
        lanes(3);
        code.op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').store(0);
      });
    },
  );
}

/** The module of the translation's row kernels (its own memory: align/warp.ts copies in only the rows it reads). */
export function warpTranslationModule(): ModuleSource {
  return { functions: { horizontal: horizontal(), vertical: vertical() }, pages: 1 };
}

interface TranslationKernel {
  horizontal(src: number, dst: number, bytes: number, w0: number, w1: number, w2: number, w3: number): void;
  vertical(r0: number, r1: number, r2: number, r3: number, dst: number, bytes: number, w0: number, w1: number, w2: number, w3: number): void;
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
