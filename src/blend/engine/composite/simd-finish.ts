import { finishRow } from './simd-finish-row.js';
import { kernel, ROW_TAP_BYTES, type Step, TAP_BYTES } from './simd-shared.js';
import { type Code, F64, I32 } from '../wasm/assembler.js';

/**
 * The composite's result in WebAssembly (composite/kernels.ts finishRows), over a band of rows
 * copied into the kernels' memory: per row, the owners' base levels and the layers' summed bands
 * interpolated between two coarse grid rows, then finishRow (composite/simd-finish-row.ts). The
 * floats are scalar f64 with the JavaScript's operations in its order, rounded where it stored f32.
 */

/** The kernels' signatures: addresses are byte offsets into the memory. */
export interface FinishKernels {
  /** a += b over n floats (f32, as a Float32Array's +=). */
  addFloats(a: number, b: number, n: number): void;
  /**
   * Per row of `rows` rows of `width` pixels, per frame (of `count`) the first and last pixel with
   * a weight above zero (i32; width and −1 where none) → spans, 8 · count bytes a row: the firsts, then the lasts.
   */
  ownerSpans(rows: number, winner: number, weight: number, width: number, count: number, spans: number): void;
  /**
   * `rows` rows of the result → out (3 bytes a pixel, from the background's rows at `background`),
   * their row taps at `rowTaps` (ROW_TAP_BYTES a row, grid rows from the first the band reads) and
   * their ownerSpans at `spans`. `layers`: per layer (16 bytes) its frame's index, its base level's
   * grid rows (4 f32 a cell, `cells` a row), the frame's rows and a row of scratch for its
   * interpolated base level. `summed`: the layers' bands summed (3 f32 a cell); `reached`: a byte
   * per grid row, 1 where they are not all 0. `owners`, `bands`, `still`: scratch.
   */
  resultRows(rows: number, rowTaps: number, spans: number, count: number, layers: number, layerCount: number, owners: number, cells: number, summed: number, reached: number, bands: number, still: number, background: number, winner: number, weight: number, taps: number, width: number, out: number, quadEnd: number, fractions: number): void;
}

/** Bytes per layer in resultRows' `layers`: frame index, base level, frame rows, base row (i32 each). */
export const LAYER_BYTES = 16;

/** a += b over n floats (FinishKernels.addFloats). */
const addFloats: Step<'a' | 'b' | 'n'> = (code, { a, b, n }) => {
  const { i, end, p } = code.declare({ i: I32, end: I32, p: I32 });
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => {
    code.address(a, i).set(p);
    code.get(p).get(p).load(0);
    code.address(b, i).load(0).op('f32x4.add').store(0);
  });
};

/** Per frame, the first and last pixel with a weight above zero (i32; left as they are where none). */
const rowSpans: Step<'winner' | 'weight' | 'width' | 'first' | 'last'> = (code, { winner, weight, width, first, last }) => {
  const { x, k } = code.declare({ x: I32, k: I32 });
  code.forStep(x, width, 1, () => {
    code.address(weight, x).load8().when(() => {
      code.address(winner, x).load8().i32(2).op('i32.shl').set(k);
      code.get(x).get(first).get(k).op('i32.add').load32(0).op('i32.lt_s').when(() => code.address(first, k).get(x).store32(0));
      code.address(last, k).get(x).store32(0);
    });
  });
};

/** dst[3i + k] = f32(top[c·i + k] + (bottom[c·i + k] − top[c·i + k]) · fy) for k < 3, i < n (c = channels). */
const lerpRows: Step<'top' | 'bottom' | 'n' | 'channels' | 'fy' | 'dst'> = (code, { top, bottom, n, channels, fy, dst }) => {
  const { i, step } = code.declare({ i: I32, step: I32 });
  const t = code.local(F64);
  code.get(channels).i32(4).op('i32.mul').set(step);
  code.forStep(i, n, 1, () => {
    for (let k = 0; k < 3; k++) {
      code.get(top).loadF32(4 * k).op('f64.promote_f32').set(t);
      code.get(dst).get(t);
      code.get(bottom).loadF32(4 * k).op('f64.promote_f32').get(t);
      code.op('f64.sub').get(fy).op('f64.mul', 'f64.add');
      code.op('f32.demote_f64').storeF32(4 * k);
    }
    code.get(top).get(step).op('i32.add').set(top);
    code.get(bottom).get(step).op('i32.add').set(bottom);
    code.get(dst).i32(12).op('i32.add').set(dst);
  });
};

/** dst[i] = 1 where the 3 floats of column i are all 0, else 0 (bytes). */
const stillColumns: Step<'bands' | 'n' | 'dst'> = (code, { bands, n, dst }) => {
  const { i, p } = code.declare({ i: I32, p: I32 });
  code.get(bands).set(p);
  code.forStep(i, n, 1, () => {
    code.address(dst, i);
    for (let c = 0; c < 3; c++) code.get(p).loadF32(4 * c).f32(0).op('f32.eq');
    code.op('i32.and', 'i32.and').store8(0);
    code.get(p).i32(12).op('i32.add').set(p);
  });
};

function ownerSpans(): Code {
  return kernel({ rows: I32, winner: I32, weight: I32, width: I32, count: I32, spans: I32 }, (code, { rows, winner, weight, width, count, spans }) => {
    const { r, k, at, first, last, pixel, winnerRow, weightRow } = code.declare({ r: I32, k: I32, at: I32, first: I32, last: I32, pixel: I32, winnerRow: I32, weightRow: I32 });
    code.forStep(r, rows, 1, () => {
      code.get(r).get(count).op('i32.mul').i32(8).op('i32.mul').get(spans).op('i32.add').set(first);
      code.get(count).i32(4).op('i32.mul').get(first).op('i32.add').set(last);
      code.forStep(k, count, 1, () => {
        code.get(k).i32(4).op('i32.mul').set(at);
        code.address(first, at).get(width).store32(0);
        code.address(last, at).i32(-1).store32(0);
      });
      code.get(r).get(width).op('i32.mul').set(pixel);
      code.address(winner, pixel).set(winnerRow);
      code.address(weight, pixel).set(weightRow);
      rowSpans(code, { winner: winnerRow, weight: weightRow, width, first, last });
    });
  });
}

function resultRows(): Code {
  const params = { rows: I32, rowTaps: I32, spans: I32, count: I32, layers: I32, layerCount: I32, owners: I32, cells: I32, summed: I32, reached: I32, bands: I32, still: I32, background: I32, winner: I32, weight: I32, taps: I32, width: I32, out: I32, quadEnd: I32, fractions: I32 };
  return kernel(params, (code, { rows, rowTaps, spans, count, layers, layerCount, owners, cells, summed, reached, bands, still, background, winner, weight, taps, width, out, quadEnd, fractions }) => {
    const { r, j, k, tap, top, bottom, first, last, pixels, layer, a, b } = code.declare({ r: I32, j: I32, k: I32, tap: I32, top: I32, bottom: I32, first: I32, last: I32, pixels: I32, layer: I32, a: I32, b: I32 });
    const { c0, found, topRow, bottomRow, span, baseRow, three, four, backgroundRow, outRow, winnerRow, weightRow } = code.declare({ c0: I32, found: I32, topRow: I32, bottomRow: I32, span: I32, baseRow: I32, three: I32, four: I32, backgroundRow: I32, outRow: I32, winnerRow: I32, weightRow: I32 });
    const bandsRow = code.local(I32);
    const fy = code.local(F64);
    code.i32(3).set(three).i32(4).set(four);
    code.forStep(r, rows, 1, () => {
      code.get(r).i32(ROW_TAP_BYTES).op('i32.mul').get(rowTaps).op('i32.add').set(tap);
      code.get(tap).load32(0).set(top);
      code.get(tap).load32(4).set(bottom);
      code.get(tap).loadF64(8).set(fy);
      code.get(r).get(count).op('i32.mul').i32(8).op('i32.mul').get(spans).op('i32.add').set(first);
      code.get(count).i32(4).op('i32.mul').get(first).op('i32.add').set(last);
      code.get(r).get(width).op('i32.mul').set(pixels);
      // no frame's row and base row until a layer's frame owns a pixel of this row
      code.get(count).i32(1).op('i32.shl').set(k);
      code.forStep(j, k, 1, () => code.get(j).i32(4).op('i32.mul').get(owners).op('i32.add').i32(0).store32(0));
      code.i32(0).set(found);
      code.forStep(j, layerCount, 1, () => {
        code.get(j).i32(LAYER_BYTES).op('i32.mul').get(layers).op('i32.add').set(layer);
        code.get(layer).load32(0).i32(4).op('i32.mul').set(k);
        code.address(first, k).load32(0).set(a);
        code.address(last, k).load32(0).set(b);
        code.get(a).get(b).op('i32.le_s').when(() => {
          code.i32(1).set(found);
          // the base level's cells the owned pixels read, c0 .. the right tap of the last
          code.get(a).i32(TAP_BYTES).op('i32.mul').get(taps).op('i32.add').load32(0).set(c0);
          code.get(b).i32(TAP_BYTES).op('i32.mul').get(taps).op('i32.add').load32(4).get(c0).op('i32.sub').i32(1).op('i32.add').set(span);
          code.get(layer).load32(12).get(c0).i32(12).op('i32.mul', 'i32.add').set(baseRow);
          code.get(top).get(cells).op('i32.mul').get(c0).op('i32.add').i32(16).op('i32.mul').get(layer).load32(4).op('i32.add').set(topRow);
          code.get(bottom).get(cells).op('i32.mul').get(c0).op('i32.add').i32(16).op('i32.mul').get(layer).load32(4).op('i32.add').set(bottomRow);
          lerpRows(code, { top: topRow, bottom: bottomRow, n: span, channels: four, fy, dst: baseRow });
          code.get(k).i32(1).op('i32.shl').get(owners).op('i32.add').set(k);
          code.get(k).get(layer).load32(8).get(pixels).i32(3).op('i32.mul', 'i32.add').store32(0);
          code.get(k).get(layer).load32(12).store32(4);
        });
      });
      code.get(pixels).i32(3).op('i32.mul').set(outRow);
      code.address(background, outRow).set(backgroundRow);
      code.address(out, outRow).set(outRow);
      code.get(found);
      code.address(reached, top).load8();
      code.address(reached, bottom).load8();
      code.op('i32.or', 'i32.or').when(
        () => {
          code.get(top).get(cells).op('i32.mul').i32(12).op('i32.mul').get(summed).op('i32.add').set(topRow);
          code.get(bottom).get(cells).op('i32.mul').i32(12).op('i32.mul').get(summed).op('i32.add').set(bottomRow);
          // lerpRows moves its destination along the row
          code.get(bands).set(bandsRow);
          lerpRows(code, { top: topRow, bottom: bottomRow, n: cells, channels: three, fy, dst: bandsRow });
          stillColumns(code, { bands, n: cells, dst: still });
          code.address(winner, pixels).set(winnerRow);
          code.address(weight, pixels).set(weightRow);
          finishRow(code, { background: backgroundRow, bands, still, winner: winnerRow, weight: weightRow, owners, taps, width, out: outRow, quadEnd, fractions });
        },
        () => {
          // background + 0 + 0 × f, rounded: the background itself, 16 bytes at a time (the
          // bytes past the row are the next row's, which it writes after)
          code.get(width).i32(3).op('i32.mul').set(span);
          code.forStep(j, span, 16, () => code.address(outRow, j).address(backgroundRow, j).load(0).store(0));
        },
      );
    });
  });
}

/** The result kernels' code, for composite/simd.ts to assemble. */
export function finishKernels(): Record<keyof FinishKernels, Code> {
  return { addFloats: kernel({ a: I32, b: I32, n: I32 }, addFloats), ownerSpans: ownerSpans(), resultRows: resultRows() };
}
