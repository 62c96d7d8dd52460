import { kernel, type Step } from './simd-shared.js';
import { Code, F64, floatLanes, I32, V128 } from '../wasm/assembler.js';

/**
 * The composite pyramid's row loops (composite/pyramid.ts) in WebAssembly: REDUCE, EXPAND and the
 * band sums, four channels a pixel, in f64 two lanes at a time with the JavaScript's operations in
 * its order, so every float is the one it stored. Each kernel runs over a band of rows copied into
 * its memory, JavaScript having picked per row the rows and pixels it reads. Assembled into one
 * module with the other composite kernels (composite/simd.ts), which share its memory.
 */

/** The kernels' signatures: addresses are byte offsets into the memory. */
export interface PyramidKernels {
  /**
   * REDUCE of `rows` rows of 4-float pixels → dst (`count` pixels a row): per row, the vertical step
   * f32((a + e + 4·(b + d) + 6·c) · (1/16)) in f64 over the `stride` floats of the five source rows
   * at `sources` (5 addresses a row) → `column`, then the same across, output pixel x from the 5
   * pixels at column + taps[5x + k] (byte offsets).
   */
  reduceLevelRows(rows: number, sources: number, column: number, stride: number, taps: number, count: number, dst: number): void;
  /**
   * `rows` rows of bandRows' sum (3 floats a pixel, `width` a row → out, from the level's rows of 4
   * floats at `level`), as `plan` says per row (BAND_PLAN_BYTES: BandPlan): pixels [x0, x1] of
   * f32((g − expanded level) · w + expanded sum), the level's term 0 unless `hasLevel` and the
   * sum's 0 outside [ea, eb]; where w = 0, the expanded sum or 0. The level above's rows (4 floats)
   * at `next` and its sum's (3 floats) at `sumNext`, `sw` pixels a row, from the first a row reads.
   */
  bandSumRows(rows: number, plan: number, level: number, next: number, sumNext: number, width: number, sw: number, hasLevel: number, column: number, expandedLevel: number, expandedSum: number, out: number): void;
}

/** What bandSumRows does on a row: i32 fields, in this order. */
export const BandPlan = { x0: 0, x1: 1, wa: 2, wb: 3, ea: 4, eb: 5, a: 6, b: 7, c: 8, odd: 9 } as const;

/** Bytes of a row's BandPlan: x0..x1 are computed, the level's weights span wa..wb and the sum above reaches ea..eb; a, b, c: an EXPAND's source rows; odd: the row's parity. */
export const BAND_PLAN_BYTES = 40;

/** The f64x2 constants and scratch a [1 4 6 4 1] / 16 step needs. */
interface Binomial {
  four: number;
  six: number;
  sixteenth: number;
  wide: number[];
}

function binomialLocals(code: Code): Binomial {
  return { four: code.doubles(4), six: code.doubles(6), sixteenth: code.doubles(1 / 16), wide: [0, 1, 2, 3, 4].map(() => code.local(V128)) };
}

/**
 * Pushes f32((A + E + 4·(B + D) + 6·C) · (1/16)) of the f32x4 locals `v` (A..E), computed in
 * f64 two lanes at a time in the JavaScript's order, so every float is the one it stored.
 */
function binomial(code: Code, v: number[], { four, six, sixteenth, wide }: Binomial): Code {
  const [a, b, c, d, e] = wide as [number, number, number, number, number];
  for (const high of [false, true]) {
    v.forEach((local, k) => {
      code.get(local);
      // the high two floats moved down for their promotion
      if (high) code.get(local).shuffle(floatLanes([2, 3, 2, 3]));
      code.op('f64x2.promote_low_f32x4').set(wide[k]!);
    });
    code.get(a).get(e);
    code.op('f64x2.add').get(four).get(b).get(d);
    code.op('f64x2.add', 'f64x2.mul', 'f64x2.add').get(six).get(c);
    code.op('f64x2.mul', 'f64x2.add').get(sixteenth);
    code.op('f64x2.mul', 'f32x4.demote_f64x2_zero');
  }
  return code.shuffle(floatLanes([0, 1, 4, 5]));
}

const reduceColumn: Step<'a' | 'b' | 'c' | 'd' | 'e' | 'dst' | 'n'> = (code, { a, b, c, d, e, dst, n }) => {
  const rows = [a, b, c, d, e];
  const { i, end } = code.declare({ i: I32, end: I32 });
  const v = rows.map(() => code.local(V128));
  const locals = binomialLocals(code);
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => {
    rows.forEach((r, k) => code.address(r, i).load(0).set(v[k]!));
    code.address(dst, i);
    binomial(code, v, locals).store(0);
  });
};

const reduceAcross: Step<'column' | 'taps' | 'count' | 'dst'> = (code, { column, taps, count, dst }) => {
  const { x, t, o } = code.declare({ x: I32, t: I32, o: I32 });
  const v = [0, 1, 2, 3, 4].map(() => code.local(V128));
  const locals = binomialLocals(code);
  code.get(taps).set(t).get(dst).set(o);
  code.forStep(x, count, 1, () => {
    v.forEach((local, k) => code.get(column).get(t).load32(4 * k).op('i32.add').load(0).set(local));
    code.get(o);
    binomial(code, v, locals).store(0);
    code.get(t).i32(20).op('i32.add').set(t);
    code.get(o).i32(16).op('i32.add').set(o);
  });
};

const expandColumns: Step<'a' | 'b' | 'c' | 'n' | 'odd' | 'dst'> = (code, { a, b, c, n, odd, dst }) => {
  const { i, end } = code.declare({ i: I32, end: I32 });
  const vectors = [0, 1, 2].map(() => code.local(V128));
  const wide = [0, 1, 2].map(() => code.local(V128));
  const halves = [code.local(V128), code.local(V128)];
  const [half, eighth, threeQuarters] = [code.doubles(0.5), code.doubles(0.125), code.doubles(0.75)];
  code.get(n).i32(4).op('i32.mul').set(end);
  // f32((a + b) · 0.5) on odd rows, f32((a + c) · 0.125 + b · 0.75) on even ones, in f64 two lanes at a time
  const loop = (isOdd: boolean) =>
    code.forStep(i, end, 16, () => {
      [a, b, c].forEach((row, k) => code.address(row, i).load(0).set(vectors[k]!));
      halves.forEach((result, high) => {
        vectors.forEach((vector, k) => {
          code.get(vector);
          if (high) code.get(vector).shuffle(floatLanes([2, 3, 2, 3]));
          code.op('f64x2.promote_low_f32x4').set(wide[k]!);
        });
        const [wa, wb, wc] = wide as [number, number, number];
        if (isOdd) code.get(wa).get(wb).op('f64x2.add').get(half);
        else code.get(wa).get(wc).op('f64x2.add').get(eighth).op('f64x2.mul').get(wb).get(threeQuarters);
        code.op(...(isOdd ? (['f64x2.mul'] as const) : (['f64x2.mul', 'f64x2.add'] as const)), 'f32x4.demote_f64x2_zero').set(result);
      });
      code.address(dst, i).get(halves[0]!).get(halves[1]!).shuffle(floatLanes([0, 1, 4, 5])).store(0);
    });
  code.get(odd).when(() => loop(true), () => loop(false));
};

const expandAcross: Step<'column' | 'channels' | 'sw' | 's0' | 'x0' | 'x1' | 'dst'> = (code, { column, channels, sw, s0, x0, x1, dst }) => {
  const { x, h, l, r, step, firstLeft, lastRight } = code.declare({ x: I32, h: I32, l: I32, r: I32, step: I32, firstLeft: I32, lastRight: I32 });
  const value = code.local(F64);
  // channel k of source column `index` (columns from s0, `channels` floats each), as f64
  const tap = (index: number, k: number) => code.get(index).get(s0).op('i32.sub').get(step).op('i32.mul').get(column).op('i32.add').loadF32(4 * k).op('f64.promote_f32');
  code.get(channels).i32(4).op('i32.mul').set(step);
  // the mirrored neighbours at the edges: column −1 is 1, column sw is sw − 2 (0 for a single column)
  code.i32(1).i32(0).get(sw).i32(1);
  code.op('i32.gt_u').op('select').set(firstLeft);
  code.get(sw).i32(2).op('i32.sub').i32(0).get(sw).i32(1);
  code.op('i32.gt_u').op('select').set(lastRight);
  code.get(x0).set(x);
  code.get(x1).i32(1).op('i32.add').set(x1);
  code.whileBelow(x, x1, () => {
    code.get(x).i32(1).op('i32.shr_u').set(h);
    code.get(h).i32(1).op('i32.sub').get(firstLeft).get(h).op('select').set(l);
    code.get(lastRight).get(h).i32(1).op('i32.add').get(h).i32(1).op('i32.add').get(sw);
    code.op('i32.eq').op('select').set(r);
    for (let k = 0; k < 3; k++) {
      // odd pixels: (h + r) · 0.5; even ones: (l + r) · 0.125 + h · 0.75, as the JavaScript took them
      code.get(x).i32(1).op('i32.and').when(() => {
          tap(h, k);
          tap(r, k);
          code.op('f64.add').f64(0.5).op('f64.mul').set(value);
        },
        () => {
          tap(l, k);
          tap(r, k);
          code.op('f64.add').f64(0.125).op('f64.mul');
          tap(h, k);
          code.f64(0.75).op('f64.mul', 'f64.add').set(value);
        });
      code.get(dst).get(x).i32(12).op('i32.mul', 'i32.add');
      code.get(value).op('f32.demote_f64').storeF32(4 * k);
    }
    code.get(x).i32(1).op('i32.add').set(x);
  });
};

const bandCombine: Step<'g' | 'expandedLevel' | 'expandedSum' | 'x0' | 'x1' | 'ra' | 'rb' | 'hasLevel' | 'out'> = (code, { g, expandedLevel, expandedSum, x0, x1, ra, rb, hasLevel, out }) => {
  const { x, reached } = code.declare({ x: I32, reached: I32 });
  const w = code.local(F64);
  const float = (row: number, size: number, k: number) => code.get(row).get(x).i32(size).op('i32.mul', 'i32.add').loadF32(4 * k).op('f64.promote_f32');
  // the expanded sum where reached, else 0 (the value read elsewhere is never used)
  const sumAbove = (k: number) => float(expandedSum, 12, k).f64(0).get(reached).op('select');
  code.get(x0).set(x);
  code.get(x1).i32(1).op('i32.add').set(x1);
  code.whileBelow(x, x1, () => {
    float(g, 16, 3).set(w);
    code.get(x).get(ra).op('i32.ge_s');
    code.get(x).get(rb).op('i32.le_s', 'i32.and').set(reached);
    for (let k = 0; k < 3; k++) {
      // w ≠ 0: (g − expanded level) · w + expanded sum, as the JavaScript took it; w = 0: the expanded sum
      code.get(out).get(x).i32(12).op('i32.mul', 'i32.add');
      float(g, 16, k);
      float(expandedLevel, 12, k).f64(0).get(hasLevel).op('select');
      code.op('f64.sub').get(w).op('f64.mul');
      sumAbove(k).op('f64.add');
      sumAbove(k);
      code.get(w).f64(0).op('f64.ne').op('select');
      code.op('f32.demote_f64').storeF32(4 * k);
    }
    code.get(x).i32(1).op('i32.add').set(x);
  });
};

function reduceLevelRows(): Code {
  return kernel({ rows: I32, sources: I32, column: I32, stride: I32, taps: I32, count: I32, dst: I32 }, (code, { rows, sources, column, stride, taps, count, dst }) => {
    const { r, at, out } = code.declare({ r: I32, at: I32, out: I32 });
    const source = code.locals(I32, 5);
    code.forStep(r, rows, 1, () => {
      code.get(r).i32(20).op('i32.mul').get(sources).op('i32.add').set(at);
      source.forEach((local, k) => code.get(at).load32(4 * k).set(local));
      code.get(r).get(count).op('i32.mul').i32(16).op('i32.mul').get(dst).op('i32.add').set(out);
      reduceColumn(code, { a: source[0], b: source[1], c: source[2], d: source[3], e: source[4], dst: column, n: stride });
      reduceAcross(code, { column, taps, count, dst: out });
    });
  });
}

function bandSumRows(): Code {
  const params = { rows: I32, plan: I32, level: I32, next: I32, sumNext: I32, width: I32, sw: I32, hasLevel: I32, column: I32, expandedLevel: I32, expandedSum: I32, out: I32 };
  return kernel(params, (code, { rows, plan, level, next, sumNext, width, sw, hasLevel, column, expandedLevel, expandedSum, out }) => {
    const { r, p, x0, x1, wa, wb, ea, eb, odd, last } = code.declare({ r: I32, p: I32, x0: I32, x1: I32, wa: I32, wb: I32, ea: I32, eb: I32, odd: I32, last: I32 });
    const { gRow, outRow, s0, s1, n, a, b, c, to, three, four } = code.declare({ gRow: I32, outRow: I32, s0: I32, s1: I32, n: I32, a: I32, b: I32, c: I32, to: I32, three: I32, four: I32 });
    const field = (name: keyof typeof BandPlan) => code.get(p).load32(4 * BandPlan[name]);
    // EXPAND of the plan's source rows of `src` (`channels` floats a pixel) to pixels [from, upTo] → dst
    const expand = (src: number, channels: number, from: number, upTo: number, dst: number) => {
      // the source columns pixels from..upTo read: (x >> 1) − 1 .. (x >> 1) + 1, within the row
      code.get(from).i32(1).op('i32.shr_u').i32(1).op('i32.sub').set(s0);
      code.get(s0).i32(0).get(s0).i32(0).op('i32.ge_s', 'select').set(s0);
      code.get(upTo).i32(1).op('i32.shr_u').i32(1).op('i32.add').set(s1);
      code.get(s1).get(sw).i32(1).op('i32.sub').get(s1).get(sw).op('i32.lt_s', 'select').set(s1);
      code.get(s1).get(s0).op('i32.sub').i32(1).op('i32.add').get(channels).op('i32.mul').set(n);
      (['a', 'b', 'c'] as const).forEach((name, k) => {
        field(name).get(sw).op('i32.mul').get(s0).op('i32.add').get(channels).op('i32.mul').i32(4).op('i32.mul').get(src).op('i32.add').set([a, b, c][k]!);
      });
      expandColumns(code, { a, b, c, n, odd, dst: column });
      code.get(upTo).set(to);
      expandAcross(code, { column, channels, sw, s0, x0: from, x1: to, dst });
    };
    code.i32(3).set(three).i32(4).set(four);
    code.forStep(r, rows, 1, () => {
      code.get(r).i32(BAND_PLAN_BYTES).op('i32.mul').get(plan).op('i32.add').set(p);
      field('x0').set(x0);
      field('x1').set(x1);
      code.get(x0).get(x1).op('i32.le_s').when(() => {
        [[wa, 'wa'], [wb, 'wb'], [ea, 'ea'], [eb, 'eb'], [odd, 'odd']].forEach(([local, name]) => field(name as keyof typeof BandPlan).set(local as number));
        code.get(ea).get(eb).op('i32.le_s').when(() => expand(sumNext, three, ea, eb, expandedSum));
        code.get(hasLevel).get(wa).get(wb).op('i32.le_s', 'i32.and').when(() => expand(next, four, wa, wb, expandedLevel));
        code.get(r).get(width).op('i32.mul').set(outRow);
        code.get(outRow).i32(16).op('i32.mul').get(level).op('i32.add').set(gRow);
        code.get(outRow).i32(12).op('i32.mul').get(out).op('i32.add').set(outRow);
        // bandCombine moves its end
        code.get(x1).set(last);
        bandCombine(code, { g: gRow, expandedLevel, expandedSum, x0, x1: last, ra: ea, rb: eb, hasLevel, out: outRow });
      });
    });
  });
}

/** The pyramid kernels' code, for composite/simd.ts to assemble. */
export function pyramidKernels(): Record<keyof PyramidKernels, Code> {
  return { reduceLevelRows: reduceLevelRows(), bandSumRows: bandSumRows() };
}
