import { kernel, type Step } from './simd-shared.js';
import { type Code, F64, I32, V128 } from '../wasm/assembler.js';

/**
 * The composite's sums of bytes over cells of `factor` × `factor` pixels in WebAssembly: a mask's
 * per halo cell, the background's and a frame's per cell of its base level (composite/kernels.ts).
 * The sums are SIMD integer arithmetic, exact; a base level's cell means are scalar f64 in the
 * JavaScript's order, rounded to f32 where it stored them. Each kernel runs over a band of cell
 * rows copied into its memory.
 */

/** The kernels' signatures: addresses are byte offsets into the memory. */
export interface SumKernels {
  /**
   * For `rows` cell rows of `count` pixel rows each (`factor` rows apart) of `width` pixels of
   * `channels` bytes at `src`: the i32 sum per channel of each of the `cells` runs of `factor`
   * pixels (the last cut short) → dst, `channels` × `cells` a row. `columns`: scratch (columnBytes).
   */
  cellTotals(rows: number, src: number, width: number, channels: number, count: number, factor: number, cells: number, columns: number, dst: number): void;
  /**
   * `rows` rows of a frame's base level (4 floats a cell, `cells` a row → dst): per cell
   * f32((frame's sum − background's) · scale) per channel and f32(owned weight · scale / 255),
   * the last cell of a row scaled by `lastScale`. The frame's rows (3 bytes a pixel) at `frame`,
   * its owned weights (`ownedBytes`) at `mine`, `count` pixel rows a cell row, `factor` apart;
   * the background's sums (3 f32 a cell) at `sums`. `colours` and `owned`: scratch (columnBytes).
   */
  baseCellRows(rows: number, frame: number, mine: number, width: number, count: number, factor: number, cells: number, colours: number, owned: number, sums: number, scale: number, lastScale: number, dst: number): void;
  /** dst = weight where winner = index, else 0 (bytes). */
  ownedBytes(winner: number, weight: number, index: number, dst: number, n: number): void;
}

/** Bytes of scratch for the column sums of a row of `pixels` pixels of `channels` bytes, by `factor`. */
export const columnBytes = (pixels: number, channels: number, factor: number) => 2 * (pixels + factor) * channels + 16;

/** 16-bit column sums of `rows` rows of `length` bytes at base + r·stride (rows ≤ 257) → `dst`. */
const columnSums: Step<'base' | 'length' | 'rows' | 'stride' | 'dst'> = (code, { base, length, rows, stride, dst }) => {
  const { i, r, p } = code.declare({ i: I32, r: I32, p: I32 });
  const { lo, hi, x } = code.declare({ lo: V128, hi: V128, x: V128 });
  code.forStep(i, length, 16, () => {
    code.i32(0).op('i32x4.splat').set(lo);
    code.i32(0).op('i32x4.splat').set(hi);
    code.address(base, i).set(p);
    code.forStep(r, rows, 1, () => {
      code.get(p).load(0).set(x);
      code.get(lo).get(x).op('i16x8.extend_low_i8x16_u', 'i16x8.add').set(lo);
      code.get(hi).get(x).op('i16x8.extend_high_i8x16_u', 'i16x8.add').set(hi);
      code.get(p).get(stride).op('i32.add').set(p);
    });
    code.get(dst).get(i).get(i).op('i32.add', 'i32.add').set(p);
    code.get(p).get(lo).store(0);
    code.get(p).get(hi).store(16);
  });
};

/** In place, the 16-bit sums per channel of each run of `factor` pixels (the last cut short) of `channels`-interleaved sums, over the run's first pixel. */
const blockSums: Step<'src' | 'pixels' | 'channels' | 'factor'> = (code, { src, pixels, channels, factor }) => {
  const { x, end, c, s, j, o, step } = code.declare({ x: I32, end: I32, c: I32, s: I32, j: I32, o: I32, step: I32 });
  // a pixel's 16-bit sums are 2 · channels bytes apart
  code.get(channels).get(channels).op('i32.add').set(step);
  code.i32(0).set(x);
  code.whileBelow(x, pixels, () => {
    code.get(x).get(factor).op('i32.add').set(end);
    code.get(end).get(pixels).get(end).get(pixels).op('i32.lt_u', 'select').set(end);
    code.forStep(c, channels, 1, () => {
      code.i32(0).set(s);
      // j: the address of channel c of pixel x
      code.get(x).get(step).op('i32.mul').get(src).op('i32.add').get(c).get(c).op('i32.add', 'i32.add').set(j);
      code.get(end).get(step).op('i32.mul').get(src).op('i32.add').get(c).get(c).op('i32.add', 'i32.add').set(end);
      code.whileBelow(j, end, () => {
        code.get(s).get(j).load16(0).op('i32.add').set(s);
        code.get(j).get(step).op('i32.add').set(j);
      });
      // back to a pixel count for the next channel
      code.get(x).get(factor).op('i32.add').set(end);
      code.get(end).get(pixels).get(end).get(pixels).op('i32.lt_u', 'select').set(end);
      // over the run's first pixel, read already
      code.get(x).get(step).op('i32.mul').get(src).op('i32.add').get(c).get(c).op('i32.add', 'i32.add').set(o);
      code.get(o).get(s).store16(0);
    });
    code.get(end).set(x);
  });
};

/** 16-bit src[i] += src[i + shift / 2] for i < lanes (shift in bytes). */
const doubleSums: Step<'src' | 'lanes' | 'shift'> = (code, { src, lanes, shift }) => {
  const { i, end, p } = code.declare({ i: I32, end: I32, p: I32 });
  code.get(lanes).get(lanes).op('i32.add').set(end);
  // forwards in place: lanes i + shift are read before anything writes them
  code.forStep(i, end, 16, () => {
    code.address(src, i).set(p);
    code.get(p).get(p).load(0).get(p).get(shift).op('i32.add').load(0);
    code.op('i16x8.add').store(0);
  });
};

/**
 * In place, the sums of each run of `factor` pixels (the last cut short) of the 16-bit column
 * sums at `columns` (`channels` interleaved, `cells` runs, room for `factor` pixels past the row),
 * over the run's first pixel (16 bits hold 255 × 16 × 16). For a power of two a run's sum is built
 * in SIMD by doubling: each lane plus the one half a run to its right, the row's tail zeroed.
 */
const runSums: Step<'columns' | 'pixels' | 'channels' | 'factor' | 'cells'> = (code, { columns, pixels, channels, factor, cells }) => {
  const { lanes, at, end, step, shift } = code.declare({ lanes: I32, at: I32, end: I32, step: I32, shift: I32 });
  code.get(factor).get(factor).i32(1).op('i32.sub', 'i32.and');
  code.when(
    () => blockSums(code, { src: columns, pixels, channels, factor }),
    () => {
      code.get(cells).get(factor).op('i32.mul').get(channels).op('i32.mul').set(lanes);
      // zero bytes [2 · pixels · channels, 2 · lanes + 16), in 16-bit stores (both ends are even)
      code.get(pixels).get(channels).op('i32.mul').get(columns).op('i32.add').set(at);
      code.get(at).get(pixels).get(channels).op('i32.mul', 'i32.add').set(at);
      code.get(lanes).get(lanes).op('i32.add').get(columns).op('i32.add').i32(16).op('i32.add').set(end);
      code.whileBelow(at, end, () => {
        code.get(at).i32(0).store16(0);
        code.get(at).i32(2).op('i32.add').set(at);
      });
      code.i32(1).set(step);
      code.whileBelow(step, factor, () => {
        code.get(step).get(channels).op('i32.mul').i32(1).op('i32.shl').set(shift);
        doubleSums(code, { src: columns, lanes, shift });
        code.get(step).i32(1).op('i32.shl').set(step);
      });
    },
  );
};

/** dst[channels · b + c] = 16-bit src at b · stride + 2c (bytes), as i32, for b < count, c < channels. */
const pickSums: Step<'src' | 'count' | 'channels' | 'stride' | 'dst'> = (code, { src, count, channels, stride, dst }) => {
  const { b, c, p, o } = code.declare({ b: I32, c: I32, p: I32, o: I32 });
  code.get(dst).set(o);
  code.forStep(b, count, 1, () => {
    code.get(b).get(stride).op('i32.mul').get(src).op('i32.add').set(p);
    code.forStep(c, channels, 1, () => {
      code.get(o).get(p).get(c).get(c).op('i32.add', 'i32.add').load16(0).store32(0);
      code.get(o).i32(4).op('i32.add').set(o);
    });
  });
};

/**
 * A row of n cells of a base level (4 floats a cell): f32((frame's sum − background's) · scale)
 * per channel, and f32(owned weight · scale / 255); the last cell's scale is `lastScale`. The
 * frame's and the owned weight's cell sums are 16-bit run sums (runSums) of `factor` pixels.
 */
const baseCells: Step<'colours' | 'owned' | 'factor' | 'sums' | 'n' | 'scale' | 'lastScale' | 'dst'> = (code, { colours, owned, factor, sums, n, scale, lastScale, dst }) => {
  const { i, p, o } = code.declare({ i: I32, p: I32, o: I32 });
  const s = code.local(F64);
  code.get(colours).set(p).get(owned).set(o);
  code.forStep(i, n, 1, () => {
    code.get(lastScale).get(scale).get(i).i32(1).op('i32.add').get(n);
    code.op('i32.eq').op('select').set(s);
    for (let c = 0; c < 3; c++) {
      // (frame's sum − background's) · scale, as the JavaScript took it
      code.get(dst).get(i).i32(16).op('i32.mul', 'i32.add');
      code.get(p).load16(2 * c).op('f64.convert_i32_u');
      code.get(sums).get(i).i32(12).op('i32.mul', 'i32.add').loadF32(4 * c).op('f64.promote_f32');
      code.op('f64.sub').get(s).op('f64.mul');
      code.op('f32.demote_f64').storeF32(4 * c);
    }
    code.get(dst).get(i).i32(16).op('i32.mul', 'i32.add');
    code.get(o).load16(0).op('f64.convert_i32_u').get(s).op('f64.mul').f64(255).op('f64.div');
    code.op('f32.demote_f64').storeF32(12);
    // the next run: factor pixels of 3 and of 1 16-bit sums on
    code.get(p).get(factor).i32(6).op('i32.mul', 'i32.add').set(p);
    code.get(o).get(factor).get(factor).op('i32.add', 'i32.add').set(o);
  });
};

function cellTotals(): Code {
  return kernel({ rows: I32, src: I32, width: I32, channels: I32, count: I32, factor: I32, cells: I32, columns: I32, dst: I32 }, (code, { rows, src, width, channels, count, factor, cells, columns, dst }) => {
    const { r, length, rowBytes, cellBytes, runBytes, pixels, out } = code.declare({ r: I32, length: I32, rowBytes: I32, cellBytes: I32, runBytes: I32, pixels: I32, out: I32 });
    code.get(width).get(channels).op('i32.mul').set(length);
    code.get(length).get(factor).op('i32.mul').set(rowBytes);
    code.get(cells).get(channels).op('i32.mul').i32(4).op('i32.mul').set(cellBytes);
    code.get(factor).get(channels).op('i32.mul').i32(1).op('i32.shl').set(runBytes);
    code.forStep(r, rows, 1, () => {
      code.get(r).get(rowBytes).op('i32.mul').get(src).op('i32.add').set(pixels);
      code.get(r).get(cellBytes).op('i32.mul').get(dst).op('i32.add').set(out);
      columnSums(code, { base: pixels, length, rows: count, stride: length, dst: columns });
      runSums(code, { columns, pixels: width, channels, factor, cells });
      pickSums(code, { src: columns, count: cells, channels, stride: runBytes, dst: out });
    });
  });
}

function baseCellRows(): Code {
  const params = { rows: I32, frame: I32, mine: I32, width: I32, count: I32, factor: I32, cells: I32, colours: I32, owned: I32, sums: I32, scale: F64, lastScale: F64, dst: I32 };
  return kernel(params, (code, { rows, frame, mine, width, count, factor, cells, colours, owned, sums, scale, lastScale, dst }) => {
    const { r, length, firstRow, frameRows, mineRows, cellSums, out, three, one } = code.declare({ r: I32, length: I32, firstRow: I32, frameRows: I32, mineRows: I32, cellSums: I32, out: I32, three: I32, one: I32 });
    code.get(width).i32(3).op('i32.mul').set(length);
    code.i32(3).set(three).i32(1).set(one);
    code.forStep(r, rows, 1, () => {
      code.get(r).get(factor).op('i32.mul').set(firstRow);
      code.get(firstRow).get(length).op('i32.mul').get(frame).op('i32.add').set(frameRows);
      code.get(firstRow).get(width).op('i32.mul').get(mine).op('i32.add').set(mineRows);
      code.get(r).get(cells).op('i32.mul').i32(12).op('i32.mul').get(sums).op('i32.add').set(cellSums);
      code.get(r).get(cells).op('i32.mul').i32(16).op('i32.mul').get(dst).op('i32.add').set(out);
      columnSums(code, { base: frameRows, length, rows: count, stride: length, dst: colours });
      runSums(code, { columns: colours, pixels: width, channels: three, factor, cells });
      columnSums(code, { base: mineRows, length: width, rows: count, stride: width, dst: owned });
      runSums(code, { columns: owned, pixels: width, channels: one, factor, cells });
      baseCells(code, { colours, owned, factor, sums: cellSums, n: cells, scale, lastScale, dst: out });
    });
  });
}

const ownedBytes = () =>
  kernel({ winner: I32, weight: I32, index: I32, dst: I32, n: I32 }, (code, { winner, weight, index, dst, n }) => {
    const i = code.local(I32);
    const key = code.local(V128);
    code.get(index).op('i8x16.splat').set(key);
    code.forStep(i, n, 16, () => {
      code.address(dst, i);
      code.address(winner, i).load(0).get(key).op('i8x16.eq');
      code.address(weight, i).load(0).op('v128.and').store(0);
    });
  });

/** The sum kernels' code, for composite/simd.ts to assemble. */
export function sumKernels(): Record<keyof SumKernels, Code> {
  return { cellTotals: cellTotals(), baseCellRows: baseCellRows(), ownedBytes: ownedBytes() };
}
