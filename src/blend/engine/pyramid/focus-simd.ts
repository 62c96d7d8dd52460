import { split } from './simd-convert.js';
import { Code, fn, I32, instantiate, type ModuleSource, V128, type WasmMemory } from '../wasm/assembler.js';

/**
 * Focus stacking's sharpness measure (pyramid/focus.ts) as WebAssembly SIMD kernels in 32-bit integers,
 * 16 pixels a step: grey is 299·R + 587·G + 114·B (BT.601 times 1000, so every sum below is
 * exact and ranks pixels as the real-valued measure does), its |Laplacian|, the window sums
 * across and down, and the running choice of the sharpest frame. One module per window radius
 * (the sums across are unrolled), assembled once per thread. Kernels run whole vectors, so they
 * read and write up to 64 bytes past a row and read `radius` elements before it: rows are padded.
 */

export interface FocusKernels {
  /** Interleaved RGB bytes at `src` → planar R, G, B bytes. */
  split(src: number, r: number, g: number, b: number, n: number): void;
  /** 299·R + 587·G + 114·B of planar bytes, as 32-bit integers. */
  grey(r: number, g: number, b: number, dst: number, n: number): void;
  /** |up + down + mid[x − 1] + mid[x + 1] − 4·mid[x]|, mid's edges replicated at mid[−1] and mid[n]. */
  laplacian(up: number, mid: number, down: number, dst: number, n: number): void;
  /** Σ src[x − radius .. x + radius], src's edges replicated `radius` elements out. */
  across(src: number, dst: number, n: number): void;
  /** column += add. */
  add(column: number, add: number, n: number): void;
  /** column += add − drop. */
  slide(column: number, add: number, drop: number, n: number): void;
  /** Where column > best: best = column and the choice byte = k. */
  pick(column: number, best: number, choice: number, k: number, n: number): void;
}

// addr + i on the stack.
const at = (code: Code, addr: number, i: number): Code => code.get(addr).get(i).op('i32.add');

function grey(): Code {
  return fn({ params: { r: I32, g: I32, b: I32, dst: I32, n: I32 }, locals: { i: I32, o: I32, x: V128, half: V128, sum: V128 } }, (code, { r, g, b, dst, n, i, o, x, half, sum }) => {
    const weights = [299, 587, 114].map((w) => {
      const local = code.local(V128);
      code.i32(w).op('i32x4.splat').set(local);
      return local;
    });
    const lanes = [0, 1, 2].map(() => [0, 1, 2, 3].map(() => code.local(V128)));
    code.get(dst).set(o);
    code.forStep(i, n, 16, () => {
      [r, g, b].forEach((plane, c) => {
        at(code, plane, i).load(0).set(x);
        (['i16x8.extend_low_i8x16_u', 'i16x8.extend_high_i8x16_u'] as const).forEach((h, k) => {
          code.get(x).op(h).set(half);
          code.get(half).op('i32x4.extend_low_i16x8_u').set(lanes[c]![2 * k]!);
          code.get(half).op('i32x4.extend_high_i16x8_u').set(lanes[c]![2 * k + 1]!);
        });
      });
      for (let q = 0; q < 4; q++) {
        code.get(lanes[0]![q]!).get(weights[0]!).op('i32x4.mul').set(sum);
        code.get(sum).get(lanes[1]![q]!).get(weights[1]!).op('i32x4.mul', 'i32x4.add').set(sum);
        code.get(o).get(sum).get(lanes[2]![q]!).get(weights[2]!).op('i32x4.mul', 'i32x4.add').store(16 * q);
      }
      code.get(o).i32(64).op('i32.add').set(o);
    });
  });
}

function laplacian(): Code {
  return fn({ params: { up: I32, mid: I32, down: I32, dst: I32, n: I32 }, locals: { i: I32, p: I32, left: I32 } }, (code, { up, mid, down, dst, n, i, p, left }) => {
    code.get(mid).i32(4).op('i32.sub').set(left);
    code.forStep(i, n, 16, () => {
      code.get(i).i32(4).op('i32.mul').set(p);
      for (let q = 0; q < 4; q++) {
        const f = 16 * q;
        at(code, dst, p);
        at(code, up, p).load(f);
        at(code, down, p).load(f).op('i32x4.add');
        at(code, left, p).load(f).op('i32x4.add');
        at(code, left, p).load(f + 8).op('i32x4.add');
        at(code, mid, p).load(f).i32(2).op('i32x4.shl', 'i32x4.sub', 'i32x4.abs').store(f);
      }
    });
  });
}

function across(radius: number): Code {
  return fn({ params: { src: I32, dst: I32, n: I32 }, locals: { i: I32, p: I32, first: I32 } }, (code, { src, dst, n, i, p, first }) => {
    code.get(src).i32(4 * radius).op('i32.sub').set(first);
    code.forStep(i, n, 16, () => {
      code.get(i).i32(4).op('i32.mul').set(p);
      for (let q = 0; q < 4; q++) {
        at(code, dst, p);
        for (let j = 0; j <= 2 * radius; j++) {
          at(code, first, p).load(16 * q + 4 * j);
          if (j > 0) code.op('i32x4.add');
        }
        code.store(16 * q);
      }
    });
  });
}

/**
 * `column += added` (`add`) or `column += added − dropped` (`slide`, the running window's step),
 * 16 columns of i32 an iteration.
 */
function columnStep(withDropped: boolean): Code {
  const locals = { i: I32, p: I32 };
  return withDropped
    ? fn({ params: { column: I32, added: I32, dropped: I32, n: I32 }, locals }, (code, $) => columnStepBody(code, $))
    : fn({ params: { column: I32, added: I32, n: I32 }, locals }, (code, $) => columnStepBody(code, $));
}

/** The body of either kind of `columnStep`: `dropped` is a parameter of `slide` only. */
function columnStepBody(code: Code, { column, added, dropped, n, i, p }: Record<'column' | 'added' | 'n' | 'i' | 'p', number> & { dropped?: number }): void {
  code.forStep(i, n, 16, () => {
    code.get(i).i32(4).op('i32.mul').set(p);
    for (let q = 0; q < 4; q++) {
      at(code, column, p);
      at(code, column, p).load(16 * q);
      at(code, added, p).load(16 * q).op('i32x4.add');
      if (dropped !== undefined) at(code, dropped, p).load(16 * q).op('i32x4.sub');
      code.store(16 * q);
    }
  });
}

function pick(): Code {
  return fn({ params: { column: I32, best: I32, choice: I32, k: I32, n: I32 }, locals: { i: I32, p: I32, key: V128, c: V128, b: V128 } }, (code, { column, best, choice, k, n, i, p, key, c, b }) => {
    const masks = [0, 1, 2, 3].map(() => code.local(V128));
    code.get(k).op('i8x16.splat').set(key);
    code.forStep(i, n, 16, () => {
      code.get(i).i32(4).op('i32.mul').set(p);
      masks.forEach((m, q) => {
        at(code, column, p).load(16 * q).set(c);
        at(code, best, p).load(16 * q).set(b);
        code.get(c).get(b).op('i32x4.gt_s').set(m);
        at(code, best, p).get(c).get(b).get(m).op('v128.bitselect').store(16 * q);
      });
      // the four 32-bit masks narrowed to one of 16 bytes (all ones stay all ones)
      at(code, choice, i).get(key);
      at(code, choice, i).load(0);
      code.get(masks[0]!).get(masks[1]!).op('i16x8.narrow_i32x4_s').get(masks[2]!).get(masks[3]!).op('i16x8.narrow_i32x4_s', 'i8x16.narrow_i16x8_s');
      code.op('v128.bitselect').store(0);
    });
  });
}

/** The module of the kernels for windows of `radius`. */
export function focusModule(radius: number): ModuleSource {
  return {
    functions: { split: split(), grey: grey(), laplacian: laplacian(), across: across(radius), add: columnStep(false), slide: columnStep(true), pick: pick() },
    pages: 1,
  };
}

const compiled = new Map<number, { run: FocusKernels; memory: WasmMemory }>();

/** The kernels for windows of `radius`, assembled on first use in this thread. */
export function focusKernels(radius: number): { run: FocusKernels; memory: WasmMemory } {
  let kernels = compiled.get(radius);
  if (!kernels) {
    const { exports, memory } = instantiate(focusModule(radius));
    kernels = { run: exports as unknown as FocusKernels, memory };
    compiled.set(radius, kernels);
  }
  return kernels;
}
