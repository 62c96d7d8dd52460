import { exposureWeightCode, widen } from './exposure.js';
import { Code, F32, floatLanes, I32, instantiate, KernelArena, V128, type WasmMemory } from './wasm.js';

/**
 * The row loops of the pyramid blend (pyramid.ts) as WebAssembly SIMD kernels, assembled once
 * per thread: 4 floats, 8 shorts or 16 bytes an instruction. A kernel works on rows copied into
 * its memory (`RowMemory`); JavaScript only picks the rows, copies them in and out, and replicates
 * the edges. Every kernel runs whole vectors, so it may read and write up to 64 bytes past a row
 * (and the expands read a vector before it): `RowMemory` rows are padded for that.
 */

type Kernel = (...args: number[]) => void;

/** The kernels' signatures: addresses are byte offsets into the memory, `n` counts elements. */
export interface RowKernels {
  /** Interleaved RGB bytes at `src` → planar R, G, B bytes. */
  split(src: number, r: number, g: number, b: number, n: number): void;
  /** Bytes → floats. */
  bytesToFloats(src: number, dst: number, n: number): void;
  /** Float rows of R, G and B → interleaved RGB bytes (the inverse of split), rounded half up and clipped to 0..255. */
  floatsToRgb(r: number, g: number, b: number, dst: number, n: number): void;
  /** Unsigned shorts × `scale` → floats. */
  shortsToFloats(src: number, dst: number, n: number, scale: number): void;
  /** Floats × `scale` → unsigned shorts, rounded half up and clipped to 0..65535. */
  floatsToShorts(src: number, dst: number, n: number, scale: number): void;
  /** Bytes of five rows → r0 + r4 + 4·(r1 + r3) + 6·r2 as shorts (≤ 4080, exact). */
  sumBytes5(r0: number, r1: number, r2: number, r3: number, r4: number, dst: number, n: number): void;
  /** The same on floats. */
  sumFloats5(r0: number, r1: number, r2: number, r3: number, r4: number, dst: number, n: number): void;
  /**
   * out[x] = t[2x − 2] + t[2x + 2] + 4·(t[2x − 1] + t[2x + 1]) + 6·t[2x] of shorts (wrapping; the
   * rows here stay ≤ 65 280), t starting 2 elements after `t` (edges replicated into them);
   * `even` and `odd` are scratch of n + 16 shorts.
   */
  decimateShorts(t: number, n: number, even: number, odd: number, dst: number): void;
  /** The same on floats, times `scale`. */
  decimateFloats(t: number, n: number, even: number, odd: number, dst: number, scale: number): void;
  /**
   * A row of an expand from the n-element coarse rows a, b, c around it (edges replicated at
   * [−1] and [n]): t = (a + c)·p + b·q down, then dst[2x] = (t[x − 1] + 6·t[x] + t[x + 1]) / 8,
   * dst[2x + 1] = (t[x] + t[x + 1]) / 2 across; 2n elements.
   */
  expandRow(a: number, b: number, c: number, n: number, p: number, q: number, dst: number): void;
  /** acc += w · (g − e) with e that row of the expand (`accumulate` fused with `expandRow`), g floats. */
  expandAccumulate(a: number, b: number, c: number, n: number, p: number, q: number, acc: number, w: number, g: number): void;
  /** The same with g bytes. */
  expandAccumulateBytes(a: number, b: number, c: number, n: number, p: number, q: number, acc: number, w: number, g: number): void;
  /** a += w · (g − e). */
  accumulate(a: number, w: number, g: number, e: number, n: number): void;
  /** a += s · b. */
  addScaled(a: number, b: number, n: number, s: number): void;
  /** dst = value. */
  fill(dst: number, n: number, value: number): void;
  /** w = (w + epsilon) / sum. */
  normalise(w: number, sum: number, n: number, epsilon: number): void;
  /** dst = 1 where choice = k, else 0 (floats). */
  oneHot(choice: number, k: number, dst: number, n: number): void;
  /** A row's planar R, G, B bytes → its BT.601 grey (0..1), saturation and well-exposedness (exposure.ts). */
  exposurePixels(r: number, g: number, b: number, grey: number, saturation: number, exposedness: number, n: number): void;
  /**
   * Mertens' weight before normalisation, |Laplacian| of grey (`mid` with edges at mid[−1],
   * mid[n]) · saturation · well-exposedness, into `dst` and added to `sum`.
   */
  exposureWeight(up: number, mid: number, down: number, saturation: number, exposedness: number, dst: number, sum: number, n: number): void;
}

const shortLanes = (lanes: number[]): number[] => lanes.flatMap((l) => [2 * l, 2 * l + 1]);

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

function floatsToRgb(): Code {
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

function bytesToFloats(): Code {
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

function shortsToFloats(): Code {
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

function floatsToShorts(): Code {
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

function sumBytes5(): Code {
  const code = new Code([I32, I32, I32, I32, I32, I32, I32]);
  const rows = [0, 1, 2, 3, 4];
  const [dst, n] = [5, 6];
  const [i, o] = [code.local(I32), code.local(I32)];
  const v = rows.map(() => code.local(V128));
  const six = code.local(V128);
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
  return code;
}

function sumFloats5(): Code {
  const code = new Code([I32, I32, I32, I32, I32, I32, I32]);
  const rows = [0, 1, 2, 3, 4];
  const [dst, n] = [5, 6];
  const [i, end] = [code.local(I32), code.local(I32)];
  const [four, six] = [code.floats(4), code.floats(6)];
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => {
    code.address(dst, i);
    code.address(rows[0]!, i).load(0);
    code.address(rows[4]!, i).load(0).op('f32x4.add');
    code.address(rows[1]!, i).load(0);
    code.address(rows[3]!, i).load(0).op('f32x4.add').get(four).op('f32x4.mul', 'f32x4.add');
    code.address(rows[2]!, i).load(0).get(six).op('f32x4.mul', 'f32x4.add');
    code.store(0);
  });
  return code;
}

/** decimateShorts (size 2) or decimateFloats (size 4). */
function decimate(size: 2 | 4): Code {
  const code = size === 2 ? new Code([I32, I32, I32, I32, I32]) : new Code([I32, I32, I32, I32, I32, F32]);
  const [t, n, even, odd, dst, scale] = [0, 1, 2, 3, 4, 5];
  const [i, j, end] = [code.local(I32), code.local(I32), code.local(I32)];
  const [x, y] = [code.local(V128), code.local(V128)];
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
  const add = size === 2 ? 'i16x8.add' : 'f32x4.add';
  code.get(n).i32(size).op('i32.mul').set(end);
  if (size === 2) {
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
  } else {
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
  }
  return code;
}

/**
 * expandRow ('store'), expandAccumulate ('floats') or expandAccumulateBytes ('bytes'), 8 coarse
 * elements (16 fine) a step. The down pass of each coarse vector is made once and its neighbours
 * across are shuffled out of the vectors either side, in the operations and order of the
 * separate down and across passes, so the floats are theirs.
 */
function expand(mode: 'store' | 'floats' | 'bytes'): Code {
  const code = new Code(mode === 'store' ? [I32, I32, I32, I32, F32, F32, I32] : [I32, I32, I32, I32, F32, F32, I32, I32, I32]);
  const [a, b, c, n, p, q, out, w, g] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const [i, end, o, gi] = [code.local(I32), code.local(I32), code.local(I32), code.local(I32)];
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
      code.address(g, gi).load(0).set(x);
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
      code.address(w, o).load(16 * m);
      if (mode === 'bytes') code.get(values[m]!);
      else code.address(g, o).load(16 * m);
      code.get(v).op('f32x4.sub', 'f32x4.mul', 'f32x4.add').store(16 * m);
    });
    code.get(next).set(before).get(after).set(now);
    code.get(o).i32(64).op('i32.add').set(o);
    code.get(gi).i32(16).op('i32.add').set(gi);
  });
  return code;
}

function accumulate(): Code {
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

function addScaled(): Code {
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

function fill(): Code {
  const code = new Code([I32, I32, F32]);
  const [dst, n, value] = [0, 1, 2];
  const [i, end] = [code.local(I32), code.local(I32)];
  const v = code.local(V128);
  code.get(value).op('f32x4.splat').set(v);
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => code.address(dst, i).get(v).store(0));
  return code;
}

function normalise(): Code {
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

function oneHot(): Code {
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

let kernels: { run: RowKernels; memory: WasmMemory } | null = null;

function compiled(): { run: RowKernels; memory: WasmMemory } {
  if (!kernels) {
    const { exposurePixels, exposureWeight } = exposureWeightCode();
    const functions = {
      split: split(),
      bytesToFloats: bytesToFloats(),
      floatsToRgb: floatsToRgb(),
      shortsToFloats: shortsToFloats(),
      floatsToShorts: floatsToShorts(),
      sumBytes5: sumBytes5(),
      sumFloats5: sumFloats5(),
      decimateShorts: decimate(2),
      decimateFloats: decimate(4),
      expandRow: expand('store'),
      expandAccumulate: expand('floats'),
      expandAccumulateBytes: expand('bytes'),
      accumulate: accumulate(),
      addScaled: addScaled(),
      fill: fill(),
      normalise: normalise(),
      oneHot: oneHot(),
      exposurePixels,
      exposureWeight,
    };
    const { exports, memory } = instantiate(functions, 1);
    kernels = { run: exports as unknown as RowKernels, memory };
  }
  return kernels;
}

/** A row buffer in the kernels' memory: `at` is its byte address, `length` its elements. */
export interface Row {
  at: number;
  length: number;
}

/**
 * The kernels of this thread with row buffers laid out in their memory. Rows are allocated for
 * one task (`rows`), then views are taken: the memory may grow only before that.
 */
export class RowMemory extends KernelArena {
  readonly run: RowKernels;

  constructor() {
    const { run, memory } = compiled();
    super(memory);
    this.run = run;
  }

  /** A row of `length` elements of `bytes` bytes each. */
  row(length: number, bytes: 1 | 2 | 4): Row {
    return { at: this.alloc(length * bytes), length };
  }

  /** Copies `length` elements of `data` from `from` into `row`. */
  put(row: Row, data: Float32Array | Uint16Array | Uint8Array, from: number, length: number): void {
    const source = data.subarray(from, from + length);
    if (source instanceof Float32Array) this.f32.set(source, row.at >> 2);
    else if (source instanceof Uint16Array) this.u16.set(source, row.at >> 1);
    else this.u8.set(source, row.at);
  }

  /** Copies the first `length` elements of `row` into `data` at `from`. */
  take(row: Row, data: Float32Array | Uint16Array | Uint8Array, from: number, length: number): void {
    if (data instanceof Float32Array) data.set(this.f32.subarray(row.at >> 2, (row.at >> 2) + length), from);
    else if (data instanceof Uint16Array) data.set(this.u16.subarray(row.at >> 1, (row.at >> 1) + length), from);
    else data.set(this.u8.subarray(row.at, row.at + length), from);
  }

  /** Replicates a float row's edges: `before` elements before element 0, `after` after element n − 1. */
  replicateFloats(at: number, n: number, before: number, after: number): void {
    const f = this.f32, e = at >> 2;
    for (let k = 1; k <= before; k++) f[e - k] = f[e]!;
    for (let k = 0; k < after; k++) f[e + n + k] = f[e + n - 1]!;
  }

  replicateShorts(at: number, n: number, before: number, after: number): void {
    const u = this.u16, e = at >> 1;
    for (let k = 1; k <= before; k++) u[e - k] = u[e]!;
    for (let k = 0; k < after; k++) u[e + n + k] = u[e + n - 1]!;
  }
}

/** The one RowMemory of this thread, its rows laid out afresh by each task. */
let shared: RowMemory | null = null;

export function rowMemory(): RowMemory {
  shared ??= new RowMemory();
  return shared.reset();
}
