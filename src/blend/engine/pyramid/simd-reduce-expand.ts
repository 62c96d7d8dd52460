import { widen } from './exposure.js';
import { Code, F32, floatLanes, fn, I32, V128 } from '../wasm/assembler.js';

/**
 * The pyramid's row kernels that filter with the 1-4-6-4-1 kernel (pyramid/simd.ts): REDUCE as the
 * sum of five rows down, then decimation across; EXPAND as one pass per fine row, alone or fused
 * with the blend's accumulation.
 */

/** Lanes of a byte shuffle (`Code.shuffle`) that picks 2-byte lane `lanes[j]` (0..15 over both vectors) into lane j. */
const shortLanes = (lanes: number[]): number[] => lanes.flatMap((l) => [2 * l, 2 * l + 1]);

export function sumBytes5(): Code {
  const params = { r0: I32, r1: I32, r2: I32, r3: I32, r4: I32, dst: I32, n: I32 };
  return fn({ params, locals: { i: I32, o: I32, v0: V128, v1: V128, v2: V128, v3: V128, v4: V128, six: V128 } }, (code, $) => {
    const { dst, n, i, o, six } = $;
    const rows = [$.r0, $.r1, $.r2, $.r3, $.r4];
    const v = [$.v0, $.v1, $.v2, $.v3, $.v4];
    code.i32(0x60006).op('i32x4.splat').set(six); // 6 in every 16-bit lane
    code.get(dst).set(o);
    code.forStep(i, n, 16, () => {
      rows.forEach((r, k) => code.address(r, i).load(0).set(v[k]!));
      (['i16x8.extend_low_i8x16_u', 'i16x8.extend_high_i8x16_u'] as const).forEach((h, k) => {
        code.get(o);
        code.get(v[0]!).op(h).get(v[4]!).op(h, 'i16x8.add');
        code.get(v[1]!).op(h).get(v[3]!).op(h, 'i16x8.add').i32(2).op('i16x8.shl', 'i16x8.add');
        code.get(v[2]!).op(h).get(six).op('i16x8.mul', 'i16x8.add');
        code.store(16 * k);
      });
      code.get(o).i32(32).op('i32.add').set(o);
    });
  });
}

export function sumFloats5(): Code {
  const params = { r0: I32, r1: I32, r2: I32, r3: I32, r4: I32, dst: I32, n: I32 };
  return fn({ params, locals: { i: I32, end: I32 } }, (code, { r0, r1, r2, r3, r4, dst, n, i, end }) => {
    const [four, six] = [code.floats(4), code.floats(6)];
    code.get(n).i32(4).op('i32.mul').set(end);
    code.forStep(i, end, 16, () => {
      code.address(dst, i);
      code.address(r0, i).load(0);
      code.address(r4, i).load(0).op('f32x4.add');
      code.address(r1, i).load(0);
      code.address(r3, i).load(0).op('f32x4.add').get(four).op('f32x4.mul', 'f32x4.add');
      code.address(r2, i).load(0).get(six).op('f32x4.mul', 'f32x4.add');
      code.store(0);
    });
  });
}

const DECIMATE_PARAMS = { t: I32, n: I32, even: I32, odd: I32, dst: I32 };
const DECIMATE_LOCALS = { i: I32, j: I32, end: I32, x: V128, y: V128 };
type Decimation = Record<keyof typeof DECIMATE_PARAMS | keyof typeof DECIMATE_LOCALS, number>;

/** decimateShorts (size 2) or decimateFloats (size 4, which scales by its parameter `scale`). */
export function decimate(size: 2 | 4): Code {
  const add = size === 2 ? 'i16x8.add' : 'f32x4.add';
  if (size === 2) {
    return fn({ params: DECIMATE_PARAMS, locals: DECIMATE_LOCALS }, (code, $) => {
      const { dst, even, odd, i, end } = $;
      splitEvenOdd(code, $, size);
      const six = code.local(V128);
      code.i32(0x60006).op('i32x4.splat').set(six);
      code.forStep(i, end, 16, () => {
        code.address(dst, i);
        code.address(even, i).load(0);
        code.address(even, i).load(2 * size).op(add);
        code.address(odd, i).load(0);
        code.address(odd, i).load(size).op(add).i32(2).op('i16x8.shl', add);
        code.address(even, i).load(size).get(six).op('i16x8.mul', add);
        code.store(0);
      });
    });
  }
  return fn({ params: { ...DECIMATE_PARAMS, scale: F32 }, locals: DECIMATE_LOCALS }, (code, $) => {
    const { dst, even, odd, scale, i, end } = $;
    splitEvenOdd(code, $, size);
    const [four, six, s] = [code.floats(4), code.floats(6), code.local(V128)];
    code.get(scale).op('f32x4.splat').set(s);
    code.forStep(i, end, 16, () => {
      code.address(dst, i);
      code.address(even, i).load(0);
      code.address(even, i).load(2 * size).op(add);
      code.address(odd, i).load(0);
      code.address(odd, i).load(size).op(add).get(four).op('f32x4.mul', add);
      code.address(even, i).load(size).get(six).op('f32x4.mul', add);
      code.get(s).op('f32x4.mul').store(0);
    });
  });
}

/** A decimation's first pass: the row at `t` split into its even and odd elements; leaves `end` at n elements' bytes. */
function splitEvenOdd(code: Code, { t, n, even, odd, i, j, end, x, y }: Decimation, size: 2 | 4): void {
  const lanes = 16 / size;
  const pick = size === 2 ? shortLanes : floatLanes;
  const evens = pick(Array.from({ length: lanes }, (_, k) => 2 * k));
  const odds = pick(Array.from({ length: lanes }, (_, k) => 2 * k + 1));
  // split into even and odd elements, two outputs' worth beyond n for the last ones' neighbours
  code.get(n).i32(2).op('i32.add').i32(size).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => {
    code.get(t).get(i).get(i).op('i32.add', 'i32.add').set(j);
    code.get(j).load(0).set(x).get(j).load(16).set(y);
    code.address(even, i).get(x).get(y).shuffle(evens).store(0);
    code.address(odd, i).get(x).get(y).shuffle(odds).store(0);
  });
  code.get(n).i32(size).op('i32.mul').set(end);
}

/**
 * expandRow ('store'), expandAccumulate ('floats') or expandAccumulateBytes ('bytes'), 8 coarse
 * elements (16 fine) a step. The down pass of each coarse vector is made once and its neighbours
 * across are shuffled out of the vectors either side, in the operations and order of the
 * separate down and across passes, so the floats are theirs.
 */
export function expand(mode: 'store' | 'floats' | 'bytes'): Code {
  const params = { a: I32, b: I32, c: I32, n: I32, p: F32, q: F32, out: I32 };
  const locals = { i: I32, end: I32, o: I32, gi: I32 };
  return mode === 'store'
    ? fn({ params, locals }, (code, $) => expandBody(code, $, mode))
    : fn({ params: { ...params, w: I32, g: I32 }, locals }, (code, $) => expandBody(code, $, mode));
}

/** The body of `expand`: the accumulating modes have the weights `w` and the level `g` as parameters. */
function expandBody(
  code: Code,
  { a, b, c, n, p, q, out, w, g, i, end, o, gi }: Record<'a' | 'b' | 'c' | 'n' | 'p' | 'q' | 'out' | 'i' | 'end' | 'o' | 'gi', number> & { w?: number; g?: number },
  mode: 'store' | 'floats' | 'bytes',
): void {
  const vector = (): number => code.local(V128);
  const [vp, vq, before, now, next, after] = [vector(), vector(), vector(), vector(), vector(), vector()];
  const [left, right, even, odd, x, half] = [vector(), vector(), vector(), vector(), vector(), vector()];
  const e = [vector(), vector(), vector(), vector()];
  const values = [vector(), vector(), vector(), vector()];
  const [eighth, six, halve] = [code.floats(0.125), code.floats(6), code.floats(0.5)];
  // the down pass of the coarse vector at byte i + offset
  const down = (offset: number) => {
    code.address(a, i).load(offset);
    code.address(c, i).load(offset).op('f32x4.add').get(vp).op('f32x4.mul');
    code.address(b, i).load(offset).get(vq).op('f32x4.mul', 'f32x4.add');
  };
  code.get(p).op('f32x4.splat').set(vp).get(q).op('f32x4.splat').set(vq);
  code.i32(-16).set(i);
  down(0);
  code.set(before);
  code.i32(0).set(i);
  down(0);
  code.set(now);
  code.get(n).i32(4).op('i32.mul').set(end);
  code.i32(0).set(o).i32(0).set(gi);
  code.forStep(i, end, 32, () => {
    down(16);
    code.set(next);
    down(32);
    code.set(after);
    for (const [h, [l, t, r]] of ([[before, now, next], [now, next, after]] as const).entries()) {
      code.get(l).get(t).shuffle(floatLanes([3, 4, 5, 6])).set(left);
      code.get(t).get(r).shuffle(floatLanes([1, 2, 3, 4])).set(right);
      code.get(left).get(right).op('f32x4.add').get(t).get(six).op('f32x4.mul', 'f32x4.add').get(eighth).op('f32x4.mul').set(even);
      code.get(t).get(right).op('f32x4.add').get(halve).op('f32x4.mul').set(odd);
      code.get(even).get(odd).shuffle(floatLanes([0, 4, 1, 5])).set(e[2 * h]!);
      code.get(even).get(odd).shuffle(floatLanes([2, 6, 3, 7])).set(e[2 * h + 1]!);
    }
    if (mode === 'bytes') {
      code.address(g!, gi).load(0).set(x);
      widen(code, x, half, values);
    }
    e.forEach((v, m) => {
      code.address(out, o);
      if (mode === 'store') {
        code.get(v).store(16 * m);
        return;
      }
      // acc + w · (g − e), as accumulate
      code.address(out, o).load(16 * m);
      code.address(w!, o).load(16 * m);
      if (mode === 'bytes') code.get(values[m]!);
      else code.address(g!, o).load(16 * m);
      code.get(v).op('f32x4.sub', 'f32x4.mul', 'f32x4.add').store(16 * m);
    });
    code.get(next).set(before).get(after).set(now);
    code.get(o).i32(64).op('i32.add').set(o);
    code.get(gi).i32(16).op('i32.add').set(gi);
  });
}
