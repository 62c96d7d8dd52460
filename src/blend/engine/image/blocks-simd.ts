import { Code, fn, F64, growTo, I32, instantiate, type ModuleSource, V128, type WasmMemory } from '../wasm/assembler.js';

/**
 * Sums of factor × factor blocks of RGB rows in WebAssembly: the heavy half of a thumbnail
 * (image/analysis.ts). The rows are summed column by column in SIMD (16 columns an instruction), then
 * each block's columns, then rounded into means. JavaScript only copies rows in and means out.
 * One kernel per thread; its memory grows to the widest rows asked for.
 */

/** Rows summed per call: 16-bit column sums of bytes stay exact up to 257 rows. */
const MAX_ROWS = 257;
// Bytes of rows copied in per call, at most (a 12 MP frame's block of 4 rows takes 48 KB).
const ROW_BYTES_BUDGET = 1 << 22;

/** `columns(length, rows, base)`: 16-bit column sums of the rows at base + r·length, r < rows, into [0, 2·length). */
function columns(): Code {
  return fn({ params: { length: I32, rows: I32, base: I32 }, locals: { i: I32, r: I32, p: I32, lo: V128, hi: V128, x: V128 } }, (code, { length, rows, base, i, r, p, lo, hi, x }) => {
    code.forStep(i, length, 16, () => {
      code.i32(0).op('i32x4.splat').set(lo);
      code.i32(0).op('i32x4.splat').set(hi);
      code.get(base).get(i).op('i32.add').set(p);
      code.forStep(r, rows, 1, () => {
        code.get(p).load(0).set(x);
        code.get(lo).get(x).op('i16x8.extend_low_i8x16_u', 'i16x8.add').set(lo);
        code.get(hi).get(x).op('i16x8.extend_high_i8x16_u', 'i16x8.add').set(hi);
        code.get(p).get(length).op('i32.add').set(p);
      });
      code.get(i).get(i).op('i32.add').get(lo).store(0);
      code.get(i).get(i).op('i32.add').get(hi).store(16);
    });
  });
}

/** `blocks(pixels, factor, sums)`: adds to the 32-bit R, G, B sums at `sums` those of each run of `factor` pixels of the column sums, the last one cut short. */
function blocks(): Code {
  return fn({ params: { pixels: I32, factor: I32, sums: I32 }, locals: { x: I32, end: I32, p: I32, o: I32, r: I32, g: I32, b: I32 } }, (code, { pixels, factor, sums, x, end, p, o, r, g, b }) => {
    code.get(sums).set(o);
    code.whileBelow(x, pixels, () => {
      code.i32(0).set(r).i32(0).set(g).i32(0).set(b);
      code.get(x).get(factor).op('i32.add').set(end);
      code.get(end).get(pixels).get(end).get(pixels).op('i32.lt_u', 'select').set(end);
      code.whileBelow(x, end, () => {
        code.get(r).get(p).load16(0).op('i32.add').set(r);
        code.get(g).get(p).load16(2).op('i32.add').set(g);
        code.get(b).get(p).load16(4).op('i32.add').set(b);
        code.get(p).i32(6).op('i32.add').set(p);
        code.get(x).i32(1).op('i32.add').set(x);
      });
      code.get(o).get(o).load32(0).get(r).op('i32.add').store32(0);
      code.get(o).get(o).load32(4).get(g).op('i32.add').store32(4);
      code.get(o).get(o).load32(8).get(b).op('i32.add').store32(8);
      code.get(o).i32(12).op('i32.add').set(o);
    });
  });
}

/**
 * `means(count, pixels, factor, rows, sums, out, greyCount, grey)`: from the block sums of `rows`
 * rows, each block's R, G, B means rounded (3 bytes a block at `out`) and, for the first
 * `greyCount` (whole) blocks, the rounded BT.601 luma of the mean, 77·R + 150·G + 29·B over 256
 * (1 byte a block at `grey`). round(s / n) is taken as ⌊(2s + n) / 2n⌋ in f64: the operands are
 * exact integers, and a correctly rounded quotient that is not a whole number stays at least
 * 1 / 2n away from one, so truncating it gives Math.round's answer.
 */
function means(): Code {
  return fn({ params: { count: I32, pixels: I32, factor: I32, rows: I32, sums: I32, out: I32, greyCount: I32, grey: I32 }, locals: { k: I32, n: I32, p: I32, twice: F64, whole: F64 } }, (code, { count, pixels, factor, rows, sums, out, greyCount, grey, k, n, p, twice, whole }) => {
    // luma: ⌊(2·(77R + 150G + 29B) + 256n) / 512n⌋, n = factor × rows for a whole block
    code.get(factor).get(rows).op('i32.mul', 'f64.convert_i32_u').f64(256).op('f64.mul').set(whole);
    code.get(sums).set(p);
    code.forStep(k, greyCount, 1, () => {
      code.get(grey).get(k).op('i32.add');
      code.get(p).load32(0).op('f64.convert_i32_u').f64(154).op('f64.mul');
      code.get(p).load32(4).op('f64.convert_i32_u').f64(300).op('f64.mul').op('f64.add');
      code.get(p).load32(8).op('f64.convert_i32_u').f64(58).op('f64.mul').op('f64.add');
      code.get(whole).op('f64.add').get(whole).get(whole).op('f64.add', 'f64.div', 'i32.trunc_f64_u').store8(0);
      code.get(p).i32(12).op('i32.add').set(p);
    });
    code.get(sums).set(p);
    code.forStep(k, count, 1, () => {
      // n = rows × the block's width: factor, or what is left of the row
      code.get(pixels).get(k).get(factor).op('i32.mul', 'i32.sub').set(n);
      code.get(factor).get(n).get(factor).get(n).op('i32.lt_u', 'select').get(rows).op('i32.mul').set(n);
      code.get(n).get(n).op('i32.add', 'f64.convert_i32_u').set(twice);
      for (const c of [0, 1, 2]) {
        code.get(out).i32(c).op('i32.add');
        code.get(p).load32(4 * c).get(p).load32(4 * c).op('i32.add').get(n).op('i32.add', 'f64.convert_i32_u');
        code.get(twice).op('f64.div', 'i32.trunc_f64_u').store8(0);
      }
      code.get(out).i32(3).op('i32.add').set(out);
      code.get(p).i32(12).op('i32.add').set(p);
    });
  });
}

interface Kernel {
  columns(length: number, rows: number, base: number): void;
  blocks(pixels: number, factor: number, sums: number): void;
  means(count: number, pixels: number, factor: number, rows: number, sums: number, out: number, greyCount: number, grey: number): void;
  memory: WasmMemory;
}

/** The module of the three kernels. */
export function blocksModule(): ModuleSource {
  return { functions: { columns: columns(), blocks: blocks(), means: means() }, pages: 1 };
}

let kernel: Kernel | null = null;

/** How many rows of a `width`-pixel image one call of `columns` may take. */
function rowsPerCall(width: number): number {
  return Math.max(1, Math.min(MAX_ROWS, Math.floor(ROW_BYTES_BUDGET / (3 * width))));
}

const padded = (bytes: number) => Math.ceil(bytes / 16) * 16;

/**
 * One row of a thumbnail: the rounded R, G, B means of each block of `factor` pixels of the
 * `rows` RGB rows of `source` from row `y` (the last block cut short), written to `out` from
 * byte `outAt`; with `grey`, the rounded luma of the first `greyWidth` (whole) blocks, written
 * from byte `greyAt`.
 */
export function blockMeans(
  source: Uint8Array,
  width: number,
  y: number,
  rows: number,
  factor: number,
  out: Uint8Array,
  outAt: number,
  grey: Uint8Array | null,
  greyAt: number,
  greyWidth: number,
): void {
  kernel ??= instantiate(blocksModule()).exports as unknown as Kernel;
  const count = Math.ceil(width / factor);
  const rowBytes = width * 3;
  // memory: column sums (2 bytes a column), block sums (12 bytes a block), means (3 bytes a
  // block), luma (1 byte a block), then the rows, each padded to whole 16-byte vectors
  const length = padded(rowBytes);
  const sumsAt = 2 * length;
  const meansAt = sumsAt + padded(12 * count);
  const greyOut = meansAt + padded(3 * count);
  const base = greyOut + padded(count);
  const group = rowsPerCall(width);
  const needed = base + Math.min(group, rows) * length;
  const { memory } = kernel;
  growTo(memory, needed);
  const bytes = new Uint8Array(memory.buffer);
  bytes.fill(0, sumsAt, sumsAt + 12 * count);
  for (let r = 0; r < rows; r += group) {
    const take = Math.min(group, rows - r);
    const start = (y + r) * rowBytes;
    if (length === rowBytes) bytes.set(source.subarray(start, start + take * rowBytes), base);
    else for (let i = 0; i < take; i++) bytes.set(source.subarray(start + i * rowBytes, start + (i + 1) * rowBytes), base + i * length);
    kernel.columns(length, take, base);
    kernel.blocks(width, factor, sumsAt);
  }
  kernel.means(count, width, factor, rows, sumsAt, meansAt, grey ? greyWidth : 0, greyOut);
  out.set(bytes.subarray(meansAt, meansAt + 3 * count), outAt);
  grey?.set(bytes.subarray(greyOut, greyOut + greyWidth), greyAt);
}
