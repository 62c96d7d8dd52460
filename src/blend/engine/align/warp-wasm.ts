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

/** The kernel's parameters: source rows from row `first` at `src`, output rows [rowStart, rowEnd) written from `dst`, then the homography. */
const PARAMS = {
  src: I32,
  first: I32,
  width: I32,
  height: I32,
  dst: I32,
  columns: I32,
  rowStart: I32,
  rowEnd: I32,
  h0: F64,
  h1: F64,
  h2: F64,
  h3: F64,
  h4: F64,
  h5: F64,
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
  nx: F64,
  ny: F64,
  w: F64,
  t: F64,
  zero: V128,
  half: V128,
  across: V128,
  v: V128,
} as const;

/** i8x16.shuffle lanes that take a pixel and its right neighbour (bytes 0–5) to i16 lanes P.r, Q.r, P.g, Q.g, P.b, Q.b (16: a zero byte). */
const PAIRS = [0, 16, 3, 16, 1, 16, 4, 16, 2, 16, 5, 16, 6, 16, 7, 16];

/** Pushes the i32 `t` truncated, saturating at ±2^31 and 0 for NaN (warp.ts `toFixed`). */
function toFixed(code: Code, t: number): void {
  code.f64(0).get(t).f64(2147483647).op('f64.min').f64(-2147483648).op('f64.max');
  code.get(t).get(t).op('f64.ne', 'select', 'i32.trunc_f64_s');
}

/** Splits the fixed-point position `t` (f64) into a whole pixel `whole`, clamped to [0, max] with its fraction `fraction` 0 at the edges. */
function split(code: Code, t: number, whole: number, fraction: number, max: number): void {
  toFixed(code, t);
  code.set(whole);
  code.get(whole).i32(255).op('i32.and').set(fraction);
  code.get(whole).i32(8).op('i32.shr_s').set(whole);
  code.get(whole).get(max).op('i32.ge_u').when(() => {
    code.i32(0).get(max).get(whole).i32(0).op('i32.lt_s', 'select').set(whole);
    code.i32(0).set(fraction);
  });
}

/** `warp(src, first, width, height, dst, columns, rowStart, rowEnd, h0..h8)`: a band of warpRowsJs, projective or (`affine`) without the division. */
function warp(affine: boolean): Code {
  return fn({ params: PARAMS, locals: LOCALS }, (code, $) => {
    code.get($.width).i32(1).op('i32.sub').set($.maxX);
    code.get($.height).i32(1).op('i32.sub').set($.maxY);
    code.get($.width).i32(3).op('i32.mul').set($.stride);
    code.get($.dst).set($.o);
    code.i32(0).op('i32x4.splat').set($.zero);
    code.i32(32768).op('i32x4.splat').set($.half);
    code.get($.rowStart).set($.y);
    code.whileBelow($.y, $.rowEnd, () => {
      // numerators and divisor at the row's start, then advanced by a constant per pixel
      code.get($.h1).get($.y).op('f64.convert_i32_u', 'f64.mul').get($.h2).op('f64.add').set($.nx);
      code.get($.h4).get($.y).op('f64.convert_i32_u', 'f64.mul').get($.h5).op('f64.add').set($.ny);
      if (!affine) code.get($.h7).get($.y).op('f64.convert_i32_u', 'f64.mul').get($.h8).op('f64.add').set($.w);
      code.forStep($.x, $.columns, 1, () => {
        for (const [n, whole, fraction, max] of [
          [$.nx, $.x0, $.fx, $.maxX],
          [$.ny, $.y0, $.fy, $.maxY],
        ] as const) {
          code.get(n);
          if (!affine) code.get($.w).op('f64.div');
          code.f64(256).op('f64.mul').f64(0.5).op('f64.add').set($.t);
          split(code, $.t, whole, fraction, max);
        }
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
        code.get($.nx).get($.h0).op('f64.add').set($.nx);
        code.get($.ny).get($.h3).op('f64.add').set($.ny);
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
  const { u8 } = arena.ready();
  u8.set(src.subarray(first * stride, first * stride + inBytes), srcAt);
  const affine = h[6] === 0 && h[7] === 0 && h[8] === 1;
  (affine ? kernel.affine : kernel.projective)(srcAt, first, width, height, dstAt, columns, rowStart, rowEnd, ...h);
  dst.set(u8.subarray(dstAt, dstAt + outBytes), rowStart * columns * 3);
}
