import { type Code, F64, fn, I32, instantiate, KernelArena, type ModuleSource, V128 } from '../wasm/assembler.js';
import { BAND_SHIFT, BANDS, DETAIL_CLASSES, HIGH, LOW, MOSTLY, RESIDUAL_BINS, RESIDUAL_STEPS, WINDOW } from './agreement-constants.js';

/**
 * The per-pixel passes of the agreement test (deghost/agreement.ts) in WebAssembly, to the byte of
 * the JavaScript (deghost/agreement-reference.ts): every value is computed in f64 as JavaScript
 * computes it and rounded to f32 where the JavaScript stores it in a Float32Array, in the same
 * order, so each stored value is the same. What runs per channel or per set (histogram matching,
 * the bands' spreads, the detail classes' levels) stays in agreement.ts and reaches the kernels as
 * tables in their memory.
 */

/** Bytes of a channel's tables (`tables`): per value v, f64 each, at v·8 plus these offsets. */
export const TABLE = { refLow: 0, refHigh: 2048, ownLow: 4096, ownHigh: 6144, scale: 8192, mapping: 10240, bytes: 12288 } as const;
/** Bytes of a channel's units (`units`): f64, by the two bands (own · BANDS + reference), then by the reference's band alone. */
export const UNITS = { refUnits: 8 * BANDS * BANDS, bytes: 8 * (BANDS * BANDS + BANDS) } as const;
/** Bytes of the window levels (`levels`): f64, the DETAIL_CLASSES − 1 bounds, the classes' levels, the theory's by pixel count. */
export const LEVELS = { empirical: 8 * (DETAIL_CLASSES - 1), theory: 8 * (2 * DETAIL_CLASSES - 1), bytes: 8 * (2 * DETAIL_CLASSES - 1 + (2 * WINDOW + 1) ** 2 + 1) } as const;

/** Pushes the smaller (`i32.lt_s`) or larger (`i32.gt_s`) of two i32 locals or values pushed by `a` and `b`. */
function pick(code: Code, a: () => void, b: () => void, which: 'i32.lt_s' | 'i32.gt_s'): void {
  a();
  b();
  a();
  b();
  code.op(which, 'select');
}

/** Pushes 1 where the byte in local `value` is clipped (≤ LOW or ≥ HIGH): value − (LOW + 1) > HIGH − LOW − 2, unsigned. */
function clippedValue(code: Code, value: number): void {
  code.get(value).i32(LOW + 1).op('i32.sub').i32(HIGH - LOW - 2).op('i32.gt_u');
}

/** `valueCounts(rgb, pixels, counts)`: how many pixels of the RGB bytes at `rgb` hold each value, per channel (i32, 256 a channel, R, G, B, added to those at `counts`). */
function valueCounts(): Code {
  return fn({ params: { rgb: I32, pixels: I32, counts: I32 }, locals: { p: I32, q: I32, at: I32 } }, (code, { rgb, pixels, counts, p, q, at }) => {
    code.get(rgb).set(q);
    code.forStep(p, pixels, 1, () => {
      for (let c = 0; c < 3; c++) {
        code.get(q).load8(c).i32(2).op('i32.shl').get(counts).op('i32.add').set(at);
        code.get(at).get(at).load32(1024 * c).i32(1).op('i32.add').store32(1024 * c);
      }
      code.get(q).i32(3).op('i32.add').set(q);
    });
  });
}

/**
 * `residuals(ref, own, pixels, c, tables, residual, byOwn, byRef)`: channel c of each pixel of the
 * RGB bytes at `ref` and `own`: its residual (f32 at `residual`) and, where neither value is
 * clipped, its count in the i32 histograms by band of the frame's value and of the reference's
 * (the histogram of all is the sum of the frame's bands).
 */
function residuals(): Code {
  return fn(
    { params: { ref: I32, own: I32, pixels: I32, c: I32, tables: I32, residual: I32, byOwn: I32, byRef: I32 }, locals: { p: I32, q: I32, r: I32, v: I32, rt: I32, vt: I32, bin: I32, at: I32, e: F64 } },
    (code, { ref, own, pixels, c, tables, residual, byOwn, byRef, p, q, r, v, rt, vt, bin, at, e }) => {
      const count = (address: () => void) => {
        address();
        code.set(at).get(at).get(at).load32(0).i32(1).op('i32.add').store32(0);
      };
      code.get(c).set(q);
      code.forStep(p, pixels, 1, () => {
        code.get(ref).get(q).op('i32.add').load8(0).set(r);
        code.get(own).get(q).op('i32.add').load8(0).set(v);
        code.get(r).i32(3).op('i32.shl').get(tables).op('i32.add').set(rt);
        code.get(v).i32(3).op('i32.shl').get(tables).op('i32.add').set(vt);
        // max(0, ownLow[v] − refHigh[r], refLow[r] − ownHigh[v]) · scale[v]
        code.f64(0).get(vt).loadF64(TABLE.ownLow).get(rt).loadF64(TABLE.refHigh).op('f64.sub', 'f64.max');
        code.get(rt).loadF64(TABLE.refLow).get(vt).loadF64(TABLE.ownHigh).op('f64.sub', 'f64.max');
        code.get(vt).loadF64(TABLE.scale).op('f64.mul').set(e);
        code.get(residual).get(p).i32(2).op('i32.shl', 'i32.add').get(e).op('f32.demote_f64').storeF32(0);
        clippedValue(code, r);
        clippedValue(code, v);
        code.op('i32.or', 'i32.eqz').when(() => {
          code.get(e).f64(RESIDUAL_STEPS).op('f64.mul').f64(RESIDUAL_BINS - 1).op('f64.min', 'i32.trunc_f64_u').set(bin);
          count(() => code.get(v).i32(BAND_SHIFT).op('i32.shr_u').i32(RESIDUAL_BINS).op('i32.mul').get(bin).op('i32.add').i32(2).op('i32.shl').get(byOwn).op('i32.add'));
          count(() => code.get(r).i32(BAND_SHIFT).op('i32.shr_u').i32(RESIDUAL_BINS).op('i32.mul').get(bin).op('i32.add').i32(2).op('i32.shl').get(byRef).op('i32.add'));
        });
        code.get(q).i32(3).op('i32.add').set(q);
      });
    },
  );
}

/**
 * `scores(ref, own, width, height, c, tables, units, residual, z, refDetail, ownDetail)`: adds to
 * each pixel's z (f32) its channel-c residual in units of its bands' spread, and to its detail
 * (f32, the reference's and the frame's in the reference's values) the absolute differences to its
 * right and lower neighbours in the same units.
 */
function scores(): Code {
  return fn(
    {
      params: { ref: I32, own: I32, width: I32, height: I32, c: I32, tables: I32, units: I32, residual: I32, z: I32, refDetail: I32, ownDetail: I32 },
      locals: { x: I32, y: I32, p: I32, q: I32, r: I32, v: I32, row: I32, neighbour: I32, down: I32, unit: F64, m: F64, refStep: F64, ownStep: F64 },
    },
    (code, { ref, own, width, height, c, tables, units, residual, z, refDetail, ownDetail, x, y, p, q, r, v, row, neighbour, down, unit, m, refStep, ownStep }) => {
      const mappingOf = (address: () => void) => {
        address();
        code.load8(0).i32(3).op('i32.shl').get(tables).op('i32.add').loadF64(TABLE.mapping);
      };
      // refStep += |ref − r|, ownStep += |mapping[own] − m| of the neighbour whose byte offset `offsetOf` pushes
      const step = (offsetOf: () => void) => {
        offsetOf();
        code.set(neighbour);
        code.get(refStep).get(ref).get(neighbour).op('i32.add').load8(0).get(r).op('i32.sub', 'f64.convert_i32_s', 'f64.abs', 'f64.add').set(refStep);
        code.get(ownStep);
        mappingOf(() => code.get(own).get(neighbour).op('i32.add'));
        code.get(m).op('f64.sub', 'f64.abs', 'f64.add').set(ownStep);
      };
      const add = (base: number, value: () => void) => {
        code.get(base).get(p).i32(2).op('i32.shl', 'i32.add').set(row);
        code.get(row).get(row).loadF32(0).op('f64.promote_f32');
        value();
        code.get(unit).op('f64.mul', 'f64.add', 'f32.demote_f64').storeF32(0);
      };
      code.get(c).set(q);
      code.i32(0).set(p);
      code.get(width).i32(3).op('i32.mul').set(down);
      code.forStep(y, height, 1, () => {
        code.forStep(x, width, 1, () => {
          code.get(ref).get(q).op('i32.add').load8(0).set(r);
          code.get(own).get(q).op('i32.add').load8(0).set(v);
          // a value clipped in the frame: the reference's band alone
          clippedValue(code, v);
          code.when(
            () => void code.get(units).get(r).i32(BAND_SHIFT).op('i32.shr_u').i32(3).op('i32.shl', 'i32.add').loadF64(UNITS.refUnits).set(unit),
            () =>
              void code
                .get(units)
                .get(v)
                .i32(BAND_SHIFT)
                .op('i32.shr_u')
                .i32(BANDS)
                .op('i32.mul')
                .get(r)
                .i32(BAND_SHIFT)
                .op('i32.shr_u', 'i32.add')
                .i32(3)
                .op('i32.shl', 'i32.add')
                .loadF64(0)
                .set(unit),
          );
          add(z, () => code.get(residual).get(p).i32(2).op('i32.shl', 'i32.add').loadF32(0).op('f64.promote_f32'));
          mappingOf(() => code.get(own).get(q).op('i32.add'));
          code.set(m);
          code.f64(0).set(refStep).f64(0).set(ownStep);
          code.get(x).i32(1).op('i32.add').get(width).op('i32.lt_u').when(() => step(() => code.get(q).i32(3).op('i32.add')));
          code.get(y).i32(1).op('i32.add').get(height).op('i32.lt_u').when(() => step(() => code.get(q).get(down).op('i32.add')));
          add(refDetail, () => code.get(refStep));
          add(ownDetail, () => code.get(ownStep));
          code.get(p).i32(1).op('i32.add').set(p);
          code.get(q).i32(3).op('i32.add').set(q);
        });
      });
    },
  );
}

/** Pushes the count of a window's pixels along one axis: min(size − 1, i + r) − max(0, i − r) + 1. */
function windowSpan(code: Code, i: number, size: number, r: number): void {
  pick(code, () => code.get(size).i32(1).op('i32.sub'), () => code.get(i).get(r).op('i32.add'), 'i32.lt_s');
  pick(code, () => code.i32(0), () => code.get(i).get(r).op('i32.sub'), 'i32.gt_s');
  code.op('i32.sub').i32(1).op('i32.add');
}

/**
 * `boxMean(values, out, rows, sums, spans, width, height, r)`: the mean (f32 at `out`) of the f32
 * `values` over the (2r + 1)² window around each pixel, cut at the edges. As the JavaScript: each
 * row's running sum in f64, stored as f32 (`rows`), then each column's running sum of those in f64
 * divided by the window's pixel count, in the same order per column. The columns' sums (f64 at
 * `sums`) run two at a time in SIMD, row by row, where the JavaScript runs one column after
 * another; `spans` (f64) gets each column's window width. Scratch: `sums` and `spans` hold
 * width + 1 values (an odd width's last pair reads one past it), and a pair's result is stored as
 * four floats, the two after it overwritten by the next pair or, after the last row, in the
 * buffer's margin. `out` may be `values`.
 */
function boxMean(): Code {
  return fn(
    {
      params: { values: I32, out: I32, rows: I32, sums: I32, spans: I32, width: I32, height: I32, r: I32 },
      locals: { x: I32, y: I32, o: I32, end: I32, sum: F64, adds: I32, takes: I32, added: I32, taken: I32, s: V128, counts: V128 },
    },
    (code, { values, out, rows, sums, spans, width, height, r, x, y, o, end, sum, adds, takes, added, taken, s, counts }) => {
      const f32At = (base: number, index: () => void) => {
        code.get(base);
        index();
        code.i32(2).op('i32.shl', 'i32.add');
      };
      // the rows: while x + r < width the value r on is added, from x = r on the one r back is taken
      // off after the store; four stretches of x, split where the one stops and the other starts
      const addAt = (offset: () => void) => {
        code.get(sum);
        f32At(values, () => {
          code.get(o).get(x).op('i32.add');
          offset();
        });
        code.loadF32(0).op('f64.promote_f32', 'f64.add').set(sum);
      };
      const store = () => {
        f32At(rows, () => code.get(o).get(x).op('i32.add'));
        code.get(sum).op('f32.demote_f64').storeF32(0);
      };
      const takeBack = () => {
        code.get(sum);
        f32At(values, () => code.get(o).get(x).op('i32.add').get(r).op('i32.sub'));
        code.loadF32(0).op('f64.promote_f32', 'f64.sub').set(sum);
      };
      const next = () => code.get(x).i32(1).op('i32.add').set(x);
      // adding holds for x < adds = width − r, taking back for x ≥ takes = r (both at most width)
      // (loops compare unsigned: width − r is taken as 0 when r is wider)
      pick(code, () => code.i32(0), () => code.get(width).get(r).op('i32.sub'), 'i32.gt_s');
      code.set(adds);
      pick(code, () => code.get(r), () => code.get(width), 'i32.lt_s');
      code.set(takes);
      code.forStep(y, height, 1, () => {
        code.get(y).get(width).op('i32.mul').set(o);
        code.f64(0).set(sum);
        code.forStep(x, takes, 1, () => addAt(() => {}));
        code.i32(0).set(x);
        // x < r: no taking back; of those, the ones below width − r add
        pick(code, () => code.get(takes), () => code.get(adds), 'i32.lt_s');
        code.set(end);
        code.whileBelow(x, end, () => {
          addAt(() => code.get(r).op('i32.add'));
          store();
          next();
        });
        code.whileBelow(x, takes, () => {
          store();
          next();
        });
        // x ≥ r: taking back; first the ones that still add
        code.whileBelow(x, adds, () => {
          addAt(() => code.get(r).op('i32.add'));
          store();
          takeBack();
          next();
        });
        code.whileBelow(x, width, () => {
          store();
          takeBack();
          next();
        });
      });
      // the columns, two at a time: sums[x], sums[x + 1] ± rows[row][x], rows[row][x + 1]
      const pair = (base: number, shift: number) => code.get(base).get(x).i32(shift).op('i32.shl', 'i32.add');
      const addRow = (row: number, operation: 'f64x2.add' | 'f64x2.sub') => {
        code.get(s);
        f32At(rows, () => code.get(row).get(width).op('i32.mul').get(x).op('i32.add'));
        code.load64Splat(0).op('f64x2.promote_low_f32x4', operation).set(s);
      };
      code.forStep(x, width, 1, () => {
        pair(spans, 3);
        windowSpan(code, x, width, r);
        code.op('f64.convert_i32_s').storeF64(0);
        pair(sums, 3).f64(0).storeF64(0);
      });
      pick(code, () => code.get(r), () => code.get(height), 'i32.lt_s');
      code.set(end);
      code.forStep(y, end, 1, () =>
        code.forStep(x, width, 2, () => {
          pair(sums, 3).load(0).set(s);
          addRow(y, 'f64x2.add');
          pair(sums, 3).get(s).store(0);
        }),
      );
      code.forStep(y, height, 1, () => {
        windowSpan(code, y, height, r);
        code.op('f64.convert_i32_s', 'f64x2.splat').set(counts);
        code.get(y).get(width).op('i32.mul').set(o);
        code.get(y).get(r).op('i32.add').set(added);
        code.get(y).get(r).op('i32.sub').set(taken);
        code.forStep(x, width, 2, () => {
          pair(sums, 3).load(0).set(s);
          code.get(added).get(height).op('i32.lt_s').when(() => addRow(added, 'f64x2.add'));
          f32At(out, () => code.get(o).get(x).op('i32.add'));
          code.get(s);
          pair(spans, 3).load(0).get(counts).op('f64x2.mul', 'f64x2.div', 'f32x4.demote_f64x2_zero').store(0);
          code.get(taken).i32(0).op('i32.ge_s').when(() => addRow(taken, 'f64x2.sub'));
          pair(sums, 3).get(s).store(0);
        });
      });
    },
  );
}

/** `windowCounts(counts, width, height, r)`: the number of pixels (i32) of the (2r + 1)² window around each pixel, cut at the edges. */
function windowCounts(): Code {
  return fn({ params: { counts: I32, width: I32, height: I32, r: I32 }, locals: { x: I32, y: I32, span: I32, at: I32 } }, (code, { counts, width, height, r, x, y, span, at }) => {
    code.get(counts).set(at);
    code.forStep(y, height, 1, () => {
      windowSpan(code, y, height, r);
      code.set(span);
      code.forStep(x, width, 1, () => {
        code.get(at);
        windowSpan(code, x, width, r);
        code.get(span).op('i32.mul').store32(0);
        code.get(at).i32(4).op('i32.add').set(at);
      });
    });
  });
}

/** `lesser(a, b, pixels)`: a[p] = min(a[p], b[p]), f32. */
function lesser(): Code {
  return fn({ params: { a: I32, b: I32, pixels: I32 }, locals: { p: I32, at: I32 } }, (code, { a, b, pixels, p, at }) => {
    code.forStep(p, pixels, 1, () => {
      code.get(a).get(p).i32(2).op('i32.shl', 'i32.add').set(at);
      code.get(at).get(at).loadF32(0).get(b).get(p).i32(2).op('i32.shl', 'i32.add').loadF32(0).op('f32.min').storeF32(0);
    });
  });
}

/**
 * `above(mean, detail, counts, levels, out, pixels)`: 1 (f32 at `out`) where a window's mean lies
 * above its level, the higher (rounded to f32) of its detail class's and the theory's for its
 * pixel count; else 0. The class is the number of bounds at or below the detail (they are sorted).
 */
function above(): Code {
  return fn(
    { params: { mean: I32, detail: I32, counts: I32, levels: I32, out: I32, pixels: I32 }, locals: { p: I32, at: I32, k: I32, d: F64 } },
    (code, { mean, detail, counts, levels, out, pixels, p, at, k, d }) => {
      code.forStep(p, pixels, 1, () => {
        code.get(p).i32(2).op('i32.shl').set(at);
        code.get(detail).get(at).op('i32.add').loadF32(0).op('f64.promote_f32').set(d);
        code.i32(0);
        for (let b = 0; b < DETAIL_CLASSES - 1; b++) code.get(d).get(levels).loadF64(8 * b).op('f64.ge', 'i32.add');
        code.set(k);
        code.get(out).get(at).op('i32.add');
        code.get(mean).get(at).op('i32.add').loadF32(0);
        code.get(levels).get(k).i32(3).op('i32.shl', 'i32.add').loadF64(LEVELS.empirical);
        code.get(levels).get(counts).get(at).op('i32.add').load32(0).i32(3).op('i32.shl', 'i32.add').loadF64(LEVELS.theory);
        code.op('f64.max', 'f32.demote_f64', 'f32.gt', 'f32.convert_i32_u').storeF32(0);
      });
    },
  );
}

/** `disagree(above, around, pixels, anyAt)`: around[p] = 1 where above[p] and around[p] ≥ MOSTLY, else 0 (f32, in place); the i32 at `anyAt` counts the 1s. */
function disagree(): Code {
  return fn({ params: { above: I32, around: I32, pixels: I32, anyAt: I32 }, locals: { p: I32, at: I32, one: I32, any: I32 } }, (code, { above, around, pixels, anyAt, p, at, one, any }) => {
    code.i32(0).set(any);
    code.forStep(p, pixels, 1, () => {
      code.get(p).i32(2).op('i32.shl').set(at);
      code.get(above).get(at).op('i32.add').loadF32(0).f32(0).op('f32.ne');
      code.get(around).get(at).op('i32.add').loadF32(0).f32(MOSTLY).op('f32.ge', 'i32.and').set(one);
      code.get(around).get(at).op('i32.add').get(one).op('f32.convert_i32_u').storeF32(0);
      code.get(any).get(one).op('i32.add').set(any);
    });
    code.get(anyAt).get(any).store32(0);
  });
}

/** `outside(grown, pixels)`: grown[p] = 0 where grown[p] > 0, else 1 (f32, in place): the disagreement grown, as a mask. */
function outside(): Code {
  return fn({ params: { grown: I32, pixels: I32 }, locals: { p: I32, at: I32 } }, (code, { grown, pixels, p, at }) => {
    code.forStep(p, pixels, 1, () => {
      code.get(grown).get(p).i32(2).op('i32.shl', 'i32.add').set(at);
      code.get(at).get(at).loadF32(0).f32(0).op('f32.gt', 'i32.eqz', 'f32.convert_i32_u').storeF32(0);
    });
  });
}

/**
 * `maskBytes(mask, out, pixels)`: out[p] = Math.round(255 · mask[p]) as ⌊255 · mask + ½⌋ in f64:
 * 255 times an f32 is exact in f64, and so is adding ½ to it, so the floor is Math.round's answer.
 */
function maskBytes(): Code {
  return fn({ params: { mask: I32, out: I32, pixels: I32 }, locals: { p: I32 } }, (code, { mask, out, pixels, p }) => {
    code.forStep(p, pixels, 1, () => {
      code.get(out).get(p).op('i32.add');
      code.get(mask).get(p).i32(2).op('i32.shl', 'i32.add').loadF32(0).op('f64.promote_f32').f64(255).op('f64.mul').f64(0.5).op('f64.add', 'i32.trunc_f64_u').store8(0);
    });
  });
}

/** The module of the agreement test's kernels. */
export function agreementModule(): ModuleSource {
  return { functions: { valueCounts: valueCounts(), residuals: residuals(), scores: scores(), boxMean: boxMean(), windowCounts: windowCounts(), lesser: lesser(), above: above(), disagree: disagree(), outside: outside(), maskBytes: maskBytes() }, pages: 1 };
}

/** The kernels' exports (addresses are bytes of the kernel's memory). */
export interface AgreementKernel {
  valueCounts(rgb: number, pixels: number, counts: number): void;
  residuals(ref: number, own: number, pixels: number, c: number, tables: number, residual: number, byOwn: number, byRef: number): void;
  scores(ref: number, own: number, width: number, height: number, c: number, tables: number, units: number, residual: number, z: number, refDetail: number, ownDetail: number): void;
  boxMean(values: number, out: number, rows: number, sums: number, spans: number, width: number, height: number, r: number): void;
  windowCounts(counts: number, width: number, height: number, r: number): void;
  lesser(a: number, b: number, pixels: number): void;
  above(mean: number, detail: number, counts: number, levels: number, out: number, pixels: number): void;
  disagree(above: number, around: number, pixels: number, anyAt: number): void;
  outside(grown: number, pixels: number): void;
  maskBytes(mask: number, out: number, pixels: number): void;
  /** Buffers for one test, laid out in the kernel's memory. */
  arena: KernelArena;
}

let kernel: AgreementKernel | null = null;

/** The thread's kernels, compiled on first use; its memory grows to the largest grid tested. */
export function agreementKernel(): AgreementKernel {
  if (!kernel) {
    const { exports, memory } = instantiate(agreementModule());
    kernel = { ...(exports as unknown as Omit<AgreementKernel, 'arena'>), arena: new KernelArena(memory) };
  }
  return kernel;
}
