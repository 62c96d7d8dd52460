import { Code, F64, fn, I32, instantiate, KernelArena, type ModuleSource, V128, type WasmMemory } from '../wasm/assembler.js';

/**
 * The full-size warp (align/warp.ts) in WebAssembly, byte for byte the JavaScript definition
 * `warpRowsJs`: positions in f64 exactly as it computes them (numerators and divisor advanced by
 * h0, h3, h6 per pixel, then (n / w)·256 + 0.5 truncated, saturating), integer bilinear weights,
 * the three channels of a pixel blended at once in SIMD (two i16 dot products, one per row).
 * An affine homography (h6 = h7 = 0, h8 = 1) takes a path without the division: w is exactly 1
 * there, so the numbers are the same. A band of output rows is warped per call: JavaScript copies
 * in the source rows the band can reach (all of them when it cannot tell) and copies the band out.
 * One kernel per thread; its memory grows to the largest band asked for.
 */

/**
 * The kernel's parameters: source rows from row `first` at `src`, output rows [rowStart, rowEnd)
 * written from `dst`; at `pairs` the homography's x and y terms as f64 pairs (h0, h3), (h1, h4),
 * (h2, h5), then 16 bytes of scratch; then the divisor's terms.
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
  pairs: I32,
  h6: F64,
  h7: F64,
  h8: F64,
} as const;

const LOCALS = {
  y: I32,
  x: I32,
  o: I32,
  maxX: I32,
  maxY: I32,
  stride: I32,
  fx: I32,
  fy: I32,
  x0: I32,
  y0: I32,
  p: I32,
  w: F64,
  n: V128,
  step: V128,
  scale: V128,
  round: V128,
  zero: V128,
  half: V128,
  across: V128,
  v: V128,
} as const;

/** i8x16.shuffle lanes that take a pixel and its right neighbour (bytes 0–5) to i16 lanes P.r, Q.r, P.g, Q.g, P.b, Q.b (16: a zero byte). */
const PAIRS = [0, 16, 3, 16, 1, 16, 4, 16, 2, 16, 5, 16, 6, 16, 7, 16];

/** Splits the fixed-point position (i32) on the stack into a whole pixel `whole`, clamped to [0, max] with its fraction `fraction` 0 at the edges. */
function split(code: Code, whole: number, fraction: number, max: number): void {
  code.set(whole);
  code.get(whole).i32(255).op('i32.and').set(fraction);
  code.get(whole).i32(8).op('i32.shr_s').set(whole);
  code.get(whole).get(max).op('i32.ge_u').when(() => {
    code.i32(0).get(max).get(whole).i32(0).op('i32.lt_s', 'select').set(whole);
    code.i32(0).set(fraction);
  });
}

/**
 * `warp(src, first, width, height, dst, columns, rowStart, rowEnd, pairs, h6, h7, h8)`: a band of
 * warpRowsJs, projective or (`affine`) without the division. The x and y numerators travel as one
 * f64 pair (each lane's arithmetic is the scalar's), and one saturating truncation (NaN to 0, as
 * warp.ts `toFixed`) takes both to 1/256 pixel.
 */
function warp(affine: boolean): Code {
  return fn({ params: PARAMS, locals: LOCALS }, (code, $) => {
    code.get($.width).i32(1).op('i32.sub').set($.maxX);
    code.get($.height).i32(1).op('i32.sub').set($.maxY);
    code.get($.width).i32(3).op('i32.mul').set($.stride);
    code.get($.dst).set($.o);
    code.i32(0).op('i32x4.splat').set($.zero);
    code.i32(32768).op('i32x4.splat').set($.half);
    code.f64(256).op('f64x2.splat').set($.scale);
    code.f64(0.5).op('f64x2.splat').set($.round);
    code.get($.pairs).load(0).set($.step);
    code.get($.rowStart).set($.y);
    code.whileBelow($.y, $.rowEnd, () => {
      // numerators and divisor at the row's start, then advanced by a constant per pixel
      code.get($.pairs).load(16).get($.y).op('f64.convert_i32_u', 'f64x2.splat', 'f64x2.mul').get($.pairs).load(32).op('f64x2.add').set($.n);
      if (!affine) code.get($.h7).get($.y).op('f64.convert_i32_u', 'f64.mul').get($.h8).op('f64.add').set($.w);
      code.forStep($.x, $.columns, 1, () => {
        code.get($.pairs).get($.n);
        if (!affine) code.get($.w).op('f64x2.splat', 'f64x2.div');
        code.get($.scale).op('f64x2.mul').get($.round).op('f64x2.add', 'i32x4.trunc_sat_f64x2_s_zero').store(48);
        code.get($.pairs).load32(48);
        split(code, $.x0, $.fx, $.maxX);
        code.get($.pairs).load32(52);
        split(code, $.y0, $.fy, $.maxY);
        // p: the top-left sample (its row relative to the first row copied in). The right and lower
        // neighbours are read even at an edge, where their weight is 0: P·256 + Q·0 is P exactly.
        code.get($.src).get($.y0).get($.first).op('i32.sub').get($.stride).op('i32.mul', 'i32.add');
        code.get($.x0).i32(3).op('i32.mul', 'i32.add').set($.p);
        // weights as i16 pairs (256 − fx, fx) and the two rows' (256 − fy), fy as i32
        code.i32(256).get($.fx).op('i32.sub').get($.fx).i32(16).op('i32.shl', 'i32.or', 'i32x4.splat').set($.across);
        // top = P·gx + Q·fx and bottom = R·gx + S·fx per channel, from the 6 bytes P, Q of each row
        code.get($.p).load64Splat(0).get($.zero).shuffle(PAIRS).get($.across).op('i32x4.dot_i16x8_s');
        code.i32(256).get($.fy).op('i32.sub', 'i32x4.splat', 'i32x4.mul');
        code.get($.p).get($.stride).op('i32.add').load64Splat(0).get($.zero).shuffle(PAIRS).get($.across).op('i32x4.dot_i16x8_s');
        code.get($.fy).op('i32x4.splat', 'i32x4.mul', 'i32x4.add').get($.half).op('i32x4.add').i32(16).op('i32x4.shr_u').set($.v);
        // the three bytes at o; the vector's other 13 bytes land on the next pixels, written after
        code.get($.o).get($.v).get($.v).op('i16x8.narrow_i32x4_u').get($.v).get($.v).op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').store(0);
        code.get($.n).get($.step).op('f64x2.add').set($.n);
        if (!affine) code.get($.w).get($.h6).op('f64.add').set($.w);
        code.get($.o).i32(3).op('i32.add').set($.o);
      });
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

/** Source rows a bilinear sample may need beyond the band's corners: the corners' row and the next, and slack for the per-pixel additions' rounding. */
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
  // one row more than copied in: the lower neighbour of the last row is read, with weight 0
  const srcAt = arena.reset().alloc(inBytes + stride);
  const dstAt = arena.alloc(outBytes);
  const pairs = arena.alloc(64);
  const { u8, f64 } = arena.ready();
  u8.set(src.subarray(first * stride, first * stride + inBytes), srcAt);
  f64.set([h[0]!, h[3]!, h[1]!, h[4]!, h[2]!, h[5]!], pairs / 8);
  const affine = h[6] === 0 && h[7] === 0 && h[8] === 1;
  (affine ? kernel.affine : kernel.projective)(srcAt, first, width, height, dstAt, columns, rowStart, rowEnd, pairs, h[6]!, h[7]!, h[8]!);
  dst.set(u8.subarray(dstAt, dstAt + outBytes), rowStart * columns * 3);
}
