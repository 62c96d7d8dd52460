import { Code, fn, F32, I32, V128 } from '../wasm/assembler.js';

/**
 * The pyramid's element-wise float row kernels (pyramid/simd.ts): the blend's weighted sums, the
 * normalisation of the exposure weights, one-hot weights and fills.
 */

export function accumulate(): Code {
  return fn({ params: { a: I32, w: I32, g: I32, e: I32, n: I32 }, locals: { i: I32, end: I32, p: I32 } }, (code, { a, w, g, e, n, i, end, p }) => {
    code.get(n).i32(4).op('i32.mul').set(end);
    code.forStep(i, end, 16, () => {
      code.address(a, i).set(p);
      code.get(p).get(p).load(0);
      code.address(w, i).load(0);
      code.address(g, i).load(0);
      code.address(e, i).load(0).op('f32x4.sub', 'f32x4.mul', 'f32x4.add').store(0);
    });
  });
}

export function addScaled(): Code {
  return fn({ params: { a: I32, b: I32, n: I32, s: F32 }, locals: { i: I32, end: I32, p: I32, vs: V128 } }, (code, { a, b, n, s, i, end, p, vs }) => {
    code.get(s).op('f32x4.splat').set(vs);
    code.get(n).i32(4).op('i32.mul').set(end);
    code.forStep(i, end, 16, () => {
      code.address(a, i).set(p);
      code.get(p).get(p).load(0);
      code.address(b, i).load(0).get(vs).op('f32x4.mul', 'f32x4.add').store(0);
    });
  });
}

export function fill(): Code {
  return fn({ params: { dst: I32, n: I32, value: F32 }, locals: { i: I32, end: I32, v: V128 } }, (code, { dst, n, value, i, end, v }) => {
    code.get(value).op('f32x4.splat').set(v);
    code.get(n).i32(4).op('i32.mul').set(end);
    code.forStep(i, end, 16, () => code.address(dst, i).get(v).store(0));
  });
}

export function normalise(): Code {
  return fn({ params: { w: I32, sum: I32, n: I32, epsilon: F32 }, locals: { i: I32, end: I32, p: I32, e: V128 } }, (code, { w, sum, n, epsilon, i, end, p, e }) => {
    code.get(epsilon).op('f32x4.splat').set(e);
    code.get(n).i32(4).op('i32.mul').set(end);
    code.forStep(i, end, 16, () => {
      code.address(w, i).set(p);
      code.get(p).get(p).load(0).get(e).op('f32x4.add');
      code.address(sum, i).load(0).op('f32x4.div').store(0);
    });
  });
}

export function oneHot(): Code {
  return fn({ params: { choice: I32, k: I32, dst: I32, n: I32 }, locals: { i: I32, o: I32 } }, (code, { choice, k, dst, n, i, o }) => {
    const [key, one, m, half] = [code.local(V128), code.floats(1), code.local(V128), code.local(V128)];
    code.get(k).op('i8x16.splat').set(key);
    code.get(dst).set(o);
    code.forStep(i, n, 16, () => {
      // lanes of 0xff where chosen, sign-extended to 32 bits: a mask of 1.0's bits
      code.address(choice, i).load(0).get(key).op('i8x16.eq').set(m);
      (['i16x8.extend_low_i8x16_s', 'i16x8.extend_high_i8x16_s'] as const).forEach((h, j) => {
        code.get(m).op(h).set(half);
        code.get(o).get(half).op('i32x4.extend_low_i16x8_s').get(one).op('v128.and').store(32 * j);
        code.get(o).get(half).op('i32x4.extend_high_i16x8_s').get(one).op('v128.and').store(32 * j + 16);
      });
      code.get(o).i32(64).op('i32.add').set(o);
    });
  });
}
