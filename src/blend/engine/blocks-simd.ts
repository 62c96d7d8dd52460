import { Code, I32, instantiate, V128, type WasmMemory } from './wasm.js';

/**
 * Sums of factor × factor blocks of RGB rows in WebAssembly: the heavy half of a thumbnail
 * (analysis.ts). The rows are summed column by column in SIMD (16 columns an instruction), then
 * each block's columns; JavaScript only turns the sums into means. One kernel per thread; its
 * memory grows to the widest rows asked for.
 */

/** Rows summed per call: 16-bit column sums of bytes stay exact up to 257 rows. */
const MAX_ROWS = 257;
// Bytes of rows copied in per call, at most (a 12 MP frame's block of 4 rows takes 48 KB).
const ROW_BYTES_BUDGET = 1 << 22;
const PAGE = 65536;

/** `columns(length, rows, base)`: 16-bit column sums of the rows at base + r·length, r < rows, into [0, 2·length). */
function columns(): Code {
  const code = new Code([I32, I32, I32]);
  const [length, rows, base] = [0, 1, 2];
  const [i, r, p] = [code.local(I32), code.local(I32), code.local(I32)];
  const [lo, hi, x] = [code.local(V128), code.local(V128), code.local(V128)];
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
  return code;
}

/** `blocks(pixels, factor, out)`: R, G, B sums (32-bit) of each run of `factor` pixels of the column sums, the last one cut short, at `out`. */
function blocks(): Code {
  const code = new Code([I32, I32, I32]);
  const [pixels, factor, out] = [0, 1, 2];
  const [x, end, p, o, r, g, b] = Array.from({ length: 7 }, () => code.local(I32)) as [number, number, number, number, number, number, number];
  code.get(out).set(o);
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
    code.get(o).get(r).store32(0);
    code.get(o).get(g).store32(4);
    code.get(o).get(b).store32(8);
    code.get(o).i32(12).op('i32.add').set(o);
  });
  return code;
}

interface Kernel {
  columns(length: number, rows: number, base: number): void;
  blocks(pixels: number, factor: number, out: number): void;
  memory: WasmMemory;
}

let kernel: Kernel | null = null;

/** How many rows of a `width`-pixel image one call of `addBlockSums` may take. */
export function rowsPerCall(width: number): number {
  return Math.max(1, Math.min(MAX_ROWS, Math.floor(ROW_BYTES_BUDGET / (3 * width))));
}

/**
 * Adds to `sums` (R, G, B per block, ceil(width / factor) blocks) the sums over `rows`
 * (≤ rowsPerCall(width)) consecutive RGB rows of `source`, from byte `start`, of each block of
 * `factor` pixels, the last one cut short.
 */
export function addBlockSums(source: Uint8Array, start: number, width: number, rows: number, factor: number, sums: Uint32Array): void {
  if (rows > rowsPerCall(width)) throw new RangeError(`${rows} rows of ${width} pixels in one call`);
  kernel ??= instantiate({ columns: columns(), blocks: blocks() }, 1).exports as unknown as Kernel;
  const rowBytes = width * 3;
  // memory: column sums (2 bytes a column), block sums (12 bytes a block), then the rows, each
  // padded to whole 16-byte vectors
  const length = Math.ceil(rowBytes / 16) * 16;
  const blocksAt = 2 * length;
  const base = blocksAt + Math.ceil((sums.length * 4) / 16) * 16;
  const needed = base + rows * length;
  const { memory } = kernel;
  if (memory.buffer.byteLength < needed) memory.grow(Math.ceil((needed - memory.buffer.byteLength) / PAGE));
  const bytes = new Uint8Array(memory.buffer);
  for (let r = 0; r < rows; r++) bytes.set(source.subarray(start + r * rowBytes, start + (r + 1) * rowBytes), base + r * length);
  kernel.columns(length, rows, base);
  kernel.blocks(width, factor, blocksAt);
  const blockSums = new Uint32Array(memory.buffer, blocksAt, sums.length);
  for (let i = 0; i < sums.length; i++) sums[i]! += blockSums[i]!;
}
