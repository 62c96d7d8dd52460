import { widen } from './exposure.js';
import { Code, fn, F32, I32, V128 } from '../wasm/assembler.js';

/**
 * The pyramid's row kernels that only change a row's form (pyramid/simd.ts): interleaved RGB bytes
 * to planar ones and back from floats, bytes to floats, and 16-bit fixed point to floats and back.
 */

export function split(): Code {
  return fn({ params: { src: I32, r: I32, g: I32, b: I32, n: I32 }, locals: { i: I32, p: I32, x: V128, y: V128, z: V128 } }, (code, { src, r, g, b, n, i, p, x, y, z }) => {
    code.get(src).set(p);
    code.forStep(i, n, 16, () => {
      code.get(p).load(0).set(x).get(p).load(16).set(y).get(p).load(32).set(z);
      [r, g, b].forEach((dst, c) => {
        // bytes c, c + 3, ... of 48: the first 11 or so from x and y, the rest from z
        const picks = Array.from({ length: 16 }, (_, j) => c + 3 * j);
        const fromXY = picks.map((q) => (q < 32 ? q : 0));
        const fromZ = picks.map((q, j) => (q < 32 ? j : q - 32 + 16));
        code.address(dst, i).get(x).get(y).shuffle(fromXY).get(z).shuffle(fromZ).store(0);
      });
      code.get(p).i32(48).op('i32.add').set(p);
    });
  });
}

export function floatsToRgb(): Code {
  return fn({ params: { r: I32, g: I32, b: I32, dst: I32, n: I32 }, locals: { i: I32, p: I32, o: I32, x: V128, y: V128, z: V128 } }, (code, { r, g, b, dst, n, i, p, o, x, y, z }) => {
    const half = code.floats(0.5);
    // signed truncation is the cheaper instruction, and every float the two truncations tell apart
    // (NaN, below 0, from 2³¹) ends as byte 0 through both narrowings, which read their lanes signed
    const round = (plane: number, offset: number) => code.address(plane, p).load(offset).get(half).op('f32x4.add', 'i32x4.trunc_sat_f32x4_s');
    code.i32(0).set(p).get(dst).set(o);
    code.forStep(i, n, 16, () => {
      [r, g, b].forEach((plane, c) => {
        round(plane, 0);
        round(plane, 16);
        code.op('i16x8.narrow_i32x4_u');
        round(plane, 32);
        round(plane, 48);
        code.op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').set([x, y, z][c]!);
      });
      for (let v = 0; v < 3; v++) {
        const bytes = Array.from({ length: 16 }, (_, j) => 16 * v + j);
        // first R and G (lanes of x, y), then B into the lanes left over
        const fromXY = bytes.map((q) => (q % 3 === 2 ? 0 : (q % 3) * 16 + Math.floor(q / 3)));
        const withZ = bytes.map((q, j) => (q % 3 === 2 ? 16 + Math.floor(q / 3) : j));
        code.get(o).get(x).get(y).shuffle(fromXY).get(z).shuffle(withZ).store(16 * v);
      }
      code.get(p).i32(64).op('i32.add').set(p);
      code.get(o).i32(48).op('i32.add').set(o);
    });
  });
}

export function bytesToFloats(): Code {
  return fn({ params: { src: I32, dst: I32, n: I32 }, locals: { i: I32, o: I32, x: V128, half: V128 } }, (code, { src, dst, n, i, o, x, half }) => {
    const f = [0, 1, 2, 3].map(() => code.local(V128));
    code.get(dst).set(o);
    code.forStep(i, n, 16, () => {
      code.address(src, i).load(0).set(x);
      widen(code, x, half, f);
      f.forEach((v, k) => code.get(o).get(v).store(16 * k));
      code.get(o).i32(64).op('i32.add').set(o);
    });
  });
}

export function shortsToFloats(): Code {
  return fn({ params: { src: I32, dst: I32, n: I32, scale: F32 }, locals: { i: I32, o: I32, x: V128, s: V128 } }, (code, { src, dst, n, scale, i, o, x, s }) => {
    code.get(scale).op('f32x4.splat').set(s);
    code.get(dst).set(o);
    code.forStep(i, n, 8, () => {
      code.get(src).get(i).get(i).op('i32.add', 'i32.add').load(0).set(x);
      code.get(o).get(x).op('i32x4.extend_low_i16x8_u').op('f32x4.convert_i32x4_s').get(s).op('f32x4.mul').store(0);
      code.get(o).get(x).op('i32x4.extend_high_i16x8_u').op('f32x4.convert_i32x4_s').get(s).op('f32x4.mul').store(16);
      code.get(o).i32(32).op('i32.add').set(o);
    });
  });
}

export function floatsToShorts(): Code {
  return fn({ params: { src: I32, dst: I32, n: I32, scale: F32 }, locals: { i: I32, p: I32, s: V128 } }, (code, { src, dst, n, scale, i, p, s }) => {
    const half = code.floats(0.5);
    code.get(scale).op('f32x4.splat').set(s);
    code.get(src).set(p);
    code.forStep(i, n, 8, () => {
      code.get(dst).get(i).get(i).op('i32.add', 'i32.add');
      code.get(p).load(0).get(s).op('f32x4.mul').get(half).op('f32x4.add', 'i32x4.trunc_sat_f32x4_u');
      code.get(p).load(16).get(s).op('f32x4.mul').get(half).op('f32x4.add', 'i32x4.trunc_sat_f32x4_u');
      code.op('i16x8.narrow_i32x4_u').store(0);
      code.get(p).i32(32).op('i32.add').set(p);
    });
  });
}
