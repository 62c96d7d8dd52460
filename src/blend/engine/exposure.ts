import { Code, I32, V128 } from './wasm.js';

/**
 * Exposure fusion weights (Mertens, Kautz & Van Reeth 2007): per pixel and frame,
 * contrast · saturation · well-exposedness (Mertens' exponents, all 1), normalised to sum 1 over
 * the frames. Contrast is |4-neighbour Laplacian| of BT.601 grey (0..1, edges replicated),
 * saturation the standard deviation of R, G and B (0..1), well-exposedness
 * Π_c exp(−(v_c/255 − ½)² / 2σ²). The weights are WebAssembly SIMD kernels (pyramid-simd.ts
 * assembles them with the pyramid's), computed row by row where the blend needs them and never
 * stored at full resolution (pyramid.ts, driven by blend.ts).
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

// addr + i on the stack.
const at = (code: Code, addr: number, i: number): Code => code.get(addr).get(i).op('i32.add');

/**
 * The kernels `grey(r, g, b, dst, n)` (planar bytes → grey floats) and
 * `exposureWeight(up, mid, down, r, g, b, dst, n)` (grey rows around the pixels' row, `mid` with
 * its edges replicated at mid[−1] and mid[n], and the row's planar bytes → Mertens' weight
 * before normalisation), 16 pixels a step.
 */
export function exposureWeightCode(): { grey: Code; exposureWeight: Code } {
  return { grey: grey(), exposureWeight: exposureWeight() };
}

// 16 bytes at `bytes` as four float vectors.
function widen(code: Code, bytes: number, half: number, into: number[]): void {
  (['i16x8.extend_low_i8x16_u', 'i16x8.extend_high_i8x16_u'] as const).forEach((h, k) => {
    code.get(bytes).op(h).set(half);
    code.get(half).op('i32x4.extend_low_i16x8_u', 'f32x4.convert_i32x4_u').set(into[2 * k]!);
    code.get(half).op('i32x4.extend_high_i16x8_u', 'f32x4.convert_i32x4_u').set(into[2 * k + 1]!);
  });
}

function constant(code: Code, value: number): number {
  const local = code.local(V128);
  code.f32(value).op('f32x4.splat').set(local);
  return local;
}

function grey(): Code {
  const code = new Code([I32, I32, I32, I32, I32]);
  const [r, g, b, dst, n] = [0, 1, 2, 3, 4];
  const [i, o] = [code.local(I32), code.local(I32)];
  const [x, half] = [code.local(V128), code.local(V128)];
  const channels = [0, 1, 2].map(() => [0, 1, 2, 3].map(() => code.local(V128)));
  const coefficients = [GREY_R, GREY_G, GREY_B].map((c) => constant(code, c));
  code.get(dst).set(o);
  code.forStep(i, n, 16, () => {
    [r, g, b].forEach((plane, c) => {
      at(code, plane, i).load(0).set(x);
      widen(code, x, half, channels[c]!);
    });
    for (let q = 0; q < 4; q++) {
      code.get(o);
      code.get(channels[0]![q]!).get(coefficients[0]!).op('f32x4.mul');
      code.get(channels[1]![q]!).get(coefficients[1]!).op('f32x4.mul', 'f32x4.add');
      code.get(channels[2]![q]!).get(coefficients[2]!).op('f32x4.mul', 'f32x4.add');
      code.store(16 * q);
    }
    code.get(o).i32(64).op('i32.add').set(o);
  });
  return code;
}

type Six = [number, number, number, number, number, number];

function exposureWeight(): Code {
  const code = new Code([I32, I32, I32, I32, I32, I32, I32, I32]);
  const [up, mid, down, r, g, b, dst, n] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [i, o, p, left] = [code.local(I32), code.local(I32), code.local(I32), code.local(I32)];
  const [x, half, sum, y, k, t] = Array.from({ length: 6 }, () => code.local(V128)) as Six;
  const channels = [0, 1, 2].map(() => [0, 1, 2, 3].map(() => code.local(V128)));
  const [four, three, byteUnit, middle, toBase2, ln2, saturationUnit] = [4, 3, 1 / 255, 0.5, -Math.LOG2E / (2 * SIGMA * SIGMA), Math.LN2, 1 / 765].map((v) =>
    constant(code, v),
  ) as [...Six, number];
  // e^t = Σ tⁿ/n! to n = 6 on |t| ≤ ln2 / 2: relative error < 2·10⁻⁷
  const taylor = [1 / 720, 1 / 120, 1 / 24, 1 / 6, 1 / 2, 1, 1].map((v) => constant(code, v));
  code.get(mid).i32(4).op('i32.sub').set(left);
  code.get(dst).set(o);
  code.forStep(i, n, 16, () => {
    [r, g, b].forEach((plane, c) => {
      at(code, plane, i).load(0).set(x);
      widen(code, x, half, channels[c]!);
    });
    code.get(i).i32(4).op('i32.mul').set(p);
    for (let q = 0; q < 4; q++) {
      const [vr, vg, vb] = [channels[0]![q]!, channels[1]![q]!, channels[2]![q]!];
      const f = 16 * q;
      code.get(o);
      // contrast
      at(code, up, p).load(f);
      at(code, down, p).load(f).op('f32x4.add');
      at(code, left, p).load(f).op('f32x4.add');
      at(code, left, p).load(f + 8).op('f32x4.add');
      at(code, mid, p).load(f).get(four).op('f32x4.mul', 'f32x4.sub', 'f32x4.abs');
      // saturation: √(3·Σv² − (Σv)²) / 765, exact in floats (every term < 2²⁴)
      code.get(vr).get(vg).op('f32x4.add').get(vb).op('f32x4.add').set(sum);
      code.get(vr).get(vr).op('f32x4.mul').get(vg).get(vg).op('f32x4.mul', 'f32x4.add').get(vb).get(vb).op('f32x4.mul', 'f32x4.add');
      code.get(three).op('f32x4.mul').get(sum).get(sum).op('f32x4.mul', 'f32x4.sub', 'f32x4.sqrt').get(saturationUnit).op('f32x4.mul', 'f32x4.mul');
      // well-exposedness: 2^y with y = −Σ(v/255 − ½)² · log2(e) / 2σ², split into k + t/ln2 with k whole, |t| ≤ ln2 / 2
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
      code.get(k).op('i32x4.trunc_sat_f32x4_s').i32(127).op('i32x4.splat', 'i32x4.add').i32(23).op('i32x4.shl', 'f32x4.mul');
      code.op('f32x4.mul').store(f);
    }
    code.get(o).i32(64).op('i32.add').set(o);
  });
  return code;
}
