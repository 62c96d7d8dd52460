import { Code, F32, I32, V128 } from '../wasm/assembler.js';

/**
 * The pyramid's element-wise float row kernels (pyramid/simd.ts): the blend's weighted sums, the
 * normalisation of the exposure weights, one-hot weights and fills.
 */

export function accumulate(): Code {
  const code = new Code([I32, I32, I32, I32, I32]);
  const [a, w, g, e, n] = [0, 1, 2, 3, 4];
  const [i, end, p] = [code.local(I32), code.local(I32), code.local(I32)];
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => {
    code.address(a, i).set(p);
    code.get(p).get(p).load(0);
    code.address(w, i).load(0);
    code.address(g, i).load(0);
    code.address(e, i).load(0).op('f32x4.sub', 'f32x4.mul', 'f32x4.add').store(0);
  });
  return code;
}

export function addScaled(): Code {
  const code = new Code([I32, I32, I32, F32]);
  const [a, b, n, s] = [0, 1, 2, 3];
  const [i, end, p] = [code.local(I32), code.local(I32), code.local(I32)];
  const vs = code.local(V128);
  code.get(s).op('f32x4.splat').set(vs);
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => {
    code.address(a, i).set(p);
    code.get(p).get(p).load(0);
    code.address(b, i).load(0).get(vs).op('f32x4.mul', 'f32x4.add').store(0);
  });
  return code;
}

export function fill(): Code {
  const code = new Code([I32, I32, F32]);
  const [dst, n, value] = [0, 1, 2];
  const [i, end] = [code.local(I32), code.local(I32)];
  const v = code.local(V128);
  code.get(value).op('f32x4.splat').set(v);
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => code.address(dst, i).get(v).store(0));
  return code;
}

export function normalise(): Code {
  const code = new Code([I32, I32, I32, F32]);
  const [w, sum, n, epsilon] = [0, 1, 2, 3];
  const [i, end, p] = [code.local(I32), code.local(I32), code.local(I32)];
  const e = code.local(V128);
  code.get(epsilon).op('f32x4.splat').set(e);
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => {
    code.address(w, i).set(p);
    code.get(p).get(p).load(0).get(e).op('f32x4.add');
    code.address(sum, i).load(0).op('f32x4.div').store(0);
  });
  return code;
}

export function oneHot(): Code {
  const code = new Code([I32, I32, I32, I32]);
  const [choice, k, dst, n] = [0, 1, 2, 3];
  const [i, o] = [code.local(I32), code.local(I32)];
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
  return code;
}
