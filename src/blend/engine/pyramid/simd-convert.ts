import { widen } from './exposure.js';
import { Code, F32, I32, V128 } from '../wasm/assembler.js';

/**
 * The pyramid's row kernels that only change a row's form (pyramid/simd.ts): interleaved RGB bytes
 * to planar ones and back from floats, bytes to floats, and 16-bit fixed point to floats and back.
 */

export function split(): Code {
  const code = new Code([I32, I32, I32, I32, I32]);
  const [src, r, g, b, n] = [0, 1, 2, 3, 4];
  const [i, p] = [code.local(I32), code.local(I32)];
  const [x, y, z] = [code.local(V128), code.local(V128), code.local(V128)];
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
  return code;
}

export function floatsToRgb(): Code {
  const code = new Code([I32, I32, I32, I32, I32]);
  const [r, g, b, dst, n] = [0, 1, 2, 3, 4];
  const [i, p, o] = [code.local(I32), code.local(I32), code.local(I32)];
  const [x, y, z] = [code.local(V128), code.local(V128), code.local(V128)];
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
  return code;
}

export function bytesToFloats(): Code {
  const code = new Code([I32, I32, I32]);
  const [src, dst, n] = [0, 1, 2];
  const [i, o] = [code.local(I32), code.local(I32)];
  const [x, half] = [code.local(V128), code.local(V128)];
  const f = [0, 1, 2, 3].map(() => code.local(V128));
  code.get(dst).set(o);
  code.forStep(i, n, 16, () => {
    code.address(src, i).load(0).set(x);
    widen(code, x, half, f);
    f.forEach((v, k) => code.get(o).get(v).store(16 * k));
    code.get(o).i32(64).op('i32.add').set(o);
  });
  return code;
}

export function shortsToFloats(): Code {
  const code = new Code([I32, I32, I32, F32]);
  const [src, dst, n, scale] = [0, 1, 2, 3];
  const [i, o] = [code.local(I32), code.local(I32)];
  const [x, s] = [code.local(V128), code.local(V128)];
  code.get(scale).op('f32x4.splat').set(s);
  code.get(dst).set(o);
  code.forStep(i, n, 8, () => {
    code.get(src).get(i).get(i).op('i32.add', 'i32.add').load(0).set(x);
    code.get(o).get(x).op('i32x4.extend_low_i16x8_u').op('f32x4.convert_i32x4_s').get(s).op('f32x4.mul').store(0);
    code.get(o).get(x).op('i32x4.extend_high_i16x8_u').op('f32x4.convert_i32x4_s').get(s).op('f32x4.mul').store(16);
    code.get(o).i32(32).op('i32.add').set(o);
  });
  return code;
}

export function floatsToShorts(): Code {
  const code = new Code([I32, I32, I32, F32]);
  const [src, dst, n, scale] = [0, 1, 2, 3];
  const [i, p] = [code.local(I32), code.local(I32)];
  const s = code.local(V128);
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
  return code;
}
