import { Code, fn, I32, V128 } from '../wasm/assembler.js';

/**
 * Exposure fusion weights (Mertens, Kautz & Van Reeth 2007): per pixel and frame,
 * contrast · saturation · well-exposedness (Mertens' exponents, all 1), normalised to sum 1 over
 * the frames. Contrast is |4-neighbour Laplacian| of BT.601 grey (0..1, edges replicated),
 * saturation the standard deviation of R, G and B (0..1), well-exposedness
 * Π_c exp(−(v_c/255 − ½)² / 2σ²). The weights are WebAssembly SIMD kernels (pyramid/simd.ts
 * assembles them with the pyramid's), computed row by row where the blend needs them and never
 * stored at full resolution (pyramid/level-zero.ts and pyramid/pyramid.ts, driven by blend.ts).
 */

export const SIGMA = 0.2;
/** Keeps a pixel where every frame scores 0 (flat and clipped) an equal mix instead of 0 / 0. */
export const EPSILON = 1e-12;
const GREY_R = 0.299 / 255, GREY_G = 0.587 / 255, GREY_B = 0.114 / 255;

/** Row y of the frame in BT.601 grey, 0..1. */
export function greyRow(frame: Uint8Array, width: number, y: number, into: Float64Array = new Float64Array(width)): Float64Array {
  for (let x = 0, q = y * width * 3; x < width; x++, q += 3) {
    into[x] = GREY_R * frame[q]! + GREY_G * frame[q + 1]! + GREY_B * frame[q + 2]!;
  }
  return into;
}

/** |4-neighbour Laplacian| of the middle of three rows, edges replicated. */
export function laplacianRow(up: Float64Array, mid: Float64Array, down: Float64Array, width: number, out: Float64Array): void {
  let left = mid[0]!, centre = left;
  for (let x = 0; x < width; x++) {
    const right = x + 1 < width ? mid[x + 1]! : centre;
    out[x] = Math.abs(up[x]! + down[x]! + left + right - 4 * centre);
    left = centre;
    centre = right;
  }
}

/**
 * The 16 bytes of vector `bytes` as four float vectors `into` (exact); `half` is scratch. The
 * signed conversion: one x86 instruction where the unsigned one takes eight, and the same floats
 * for these non-negative integers.
 */
export function widen(code: Code, bytes: number, half: number, into: number[]): void {
  (['i16x8.extend_low_i8x16_u', 'i16x8.extend_high_i8x16_u'] as const).forEach((h, k) => {
    code.get(bytes).op(h).set(half);
    code.get(half).op('i32x4.extend_low_i16x8_u').op('f32x4.convert_i32x4_s').set(into[2 * k]!);
    code.get(half).op('i32x4.extend_high_i16x8_u').op('f32x4.convert_i32x4_s').set(into[2 * k + 1]!);
  });
}

/**
 * The kernels `exposurePixels(r, g, b, grey, saturation, exposedness, n)` (a row's planar bytes →
 * its grey, saturation and well-exposedness, the bytes widened once for all three) and
 * `exposureWeight(up, mid, down, saturation, exposedness, dst, sum, n)` (grey rows around the
 * pixels' row, `mid` with its edges replicated at mid[−1] and mid[n] → Mertens' weight before
 * normalisation into `dst`, also added to `sum`), 16 pixels a step.
 */
export function exposureWeightCode(): { exposurePixels: Code; exposureWeight: Code } {
  return { exposurePixels: exposurePixels(), exposureWeight: exposureWeight() };
}

type Six = [number, number, number, number, number, number];

function exposurePixels(): Code {
  return fn({ params: { r: I32, g: I32, b: I32, grey: I32, saturation: I32, exposedness: I32, n: I32 }, locals: { i: I32, p: I32, x: V128, half: V128, sum: V128, y: V128, k: V128, t: V128 } }, (code, { r, g, b, grey, saturation, exposedness, n, i, p, x, half, sum, y, k, t }) => {
    const channels = [0, 1, 2].map(() => [0, 1, 2, 3].map(() => code.local(V128)));
    const coefficients = [GREY_R, GREY_G, GREY_B].map((c) => code.floats(c));
    const [three, byteUnit, middle, toBase2, ln2, saturationUnit] = [3, 1 / 255, 0.5, -Math.LOG2E / (2 * SIGMA * SIGMA), Math.LN2, 1 / 765].map((v) =>
      code.floats(v),
    ) as Six;
    const bias = code.local(V128);
    code.i32(127).op('i32x4.splat').set(bias);
    // e^t = Σ tⁿ/n! to n = 6 on |t| ≤ ln2 / 2: relative error < 2·10⁻⁷
    const taylor = [1 / 720, 1 / 120, 1 / 24, 1 / 6, 1 / 2, 1, 1].map((v) => code.floats(v));
    code.i32(0).set(p);
    code.forStep(i, n, 16, () => {
      [r, g, b].forEach((plane, c) => {
        code.address(plane, i).load(0).set(x);
        widen(code, x, half, channels[c]!);
      });
      for (let q = 0; q < 4; q++) {
        const [vr, vg, vb] = [channels[0]![q]!, channels[1]![q]!, channels[2]![q]!];
        const f = 16 * q;
        code.address(grey, p);
        code.get(vr).get(coefficients[0]!).op('f32x4.mul');
        code.get(vg).get(coefficients[1]!).op('f32x4.mul', 'f32x4.add');
        code.get(vb).get(coefficients[2]!).op('f32x4.mul', 'f32x4.add');
        code.store(f);
        // saturation: √(3·Σv² − (Σv)²) / 765, exact in floats (every term < 2²⁴)
        code.address(saturation, p);
        code.get(vr).get(vg).op('f32x4.add').get(vb).op('f32x4.add').set(sum);
        code.get(vr).get(vr).op('f32x4.mul').get(vg).get(vg).op('f32x4.mul', 'f32x4.add').get(vb).get(vb).op('f32x4.mul', 'f32x4.add');
        code.get(three).op('f32x4.mul').get(sum).get(sum).op('f32x4.mul', 'f32x4.sub', 'f32x4.sqrt').get(saturationUnit).op('f32x4.mul');
        code.store(f);
        // well-exposedness: 2^y with y = −Σ(v/255 − ½)² · log2(e) / 2σ², split into k + t/ln2 with k whole, |t| ≤ ln2 / 2
        code.address(exposedness, p);
        for (const [j, v] of [vr, vg, vb].entries()) {
          code.get(v).get(byteUnit).op('f32x4.mul').get(middle).op('f32x4.sub').set(t);
          code.get(t).get(t).op('f32x4.mul');
          if (j > 0) code.op('f32x4.add');
        }
        code.get(toBase2).op('f32x4.mul').set(y);
        code.get(y).op('f32x4.nearest').set(k);
        code.get(y).get(k).op('f32x4.sub').get(ln2).op('f32x4.mul').set(t);
        code.get(taylor[0]!);
        for (const c of taylor.slice(1)) code.get(t).op('f32x4.mul').get(c).op('f32x4.add');
        // × 2^k, built from its exponent bits
        code.get(k).op('i32x4.trunc_sat_f32x4_s').get(bias).op('i32x4.add').i32(23).op('i32x4.shl', 'f32x4.mul');
        code.store(f);
      }
      code.get(p).i32(64).op('i32.add').set(p);
    });
  });
}

function exposureWeight(): Code {
  return fn({ params: { up: I32, mid: I32, down: I32, saturation: I32, exposedness: I32, dst: I32, sum: I32, n: I32 }, locals: { i: I32, end: I32, left: I32 } }, (code, { up, mid, down, saturation, exposedness, dst, sum, n, i, end, left }) => {
    const [w, four] = [code.local(V128), code.floats(4)];
    code.get(mid).i32(4).op('i32.sub').set(left);
    code.get(n).i32(4).op('i32.mul').set(end);
    code.forStep(i, end, 64, () => {
      for (let f = 0; f < 64; f += 16) {
        // contrast, then (contrast · saturation) · exposedness in this order: the blends' bytes depend on these floats
        code.address(up, i).load(f);
        code.address(down, i).load(f).op('f32x4.add');
        code.address(left, i).load(f).op('f32x4.add');
        code.address(left, i).load(f + 8).op('f32x4.add');
        code.address(mid, i).load(f).get(four).op('f32x4.mul', 'f32x4.sub', 'f32x4.abs');
        code.address(saturation, i).load(f).op('f32x4.mul');
        code.address(exposedness, i).load(f).op('f32x4.mul').set(w);
        code.address(dst, i).get(w).store(f);
        code.address(sum, i);
        code.address(sum, i).load(f).get(w).op('f32x4.add').store(f);
      }
    });
  });
}
