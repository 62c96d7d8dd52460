import { type FinishKernels, finishKernels } from './simd-finish.js';
import { type OwnerKernels, ownerKernels } from './simd-owner.js';
import { type PyramidKernels, pyramidKernels } from './simd-pyramid.js';
import { ROW_TAP_BYTES, type Taps } from './simd-shared.js';
import { type SumKernels, sumKernels } from './simd-sums.js';
import { instantiate, KernelArena, type ModuleSource, type WasmMemory } from '../wasm/assembler.js';

/**
 * The composite's pixel loops (composite/kernels.ts, composite/pyramid.ts) in WebAssembly,
 * assembled into one module once per thread: the cell sums (composite/simd-sums.ts), the owners
 * (composite/simd-owner.ts), the result (composite/simd-finish.ts) and the pyramid
 * (composite/simd-pyramid.ts). Sums of bytes are SIMD integer arithmetic, exact. The
 * floating-point steps are scalar f64 and take the same operations in the same order as the
 * JavaScript they replace (which computes in doubles and rounds to f32 where it stores into a
 * Float32Array), so the results are the same bits: f32 SIMD would round every intermediate and
 * move some pixels by one level. A kernel works on rows copied into its memory (`KernelMemory`);
 * JavaScript picks the rows.
 */

/** The kernels' signatures: addresses are byte offsets into the memory. */
export interface CompositeKernels extends SumKernels, OwnerKernels, FinishKernels, PyramidKernels {}

/**
 * Pixels of a band copied into kernel memory at a time, however many rows that is: a narrow
 * image's rows are a few pixels, and one kernel call per row would cost more than its work.
 */
const CHUNK_PIXELS = 1 << 14;

/** Rows of `pixels` pixels in a chunk, at least one. */
export function chunkRows(pixels: number): number {
  return Math.max(1, Math.floor(CHUNK_PIXELS / pixels));
}

let kernels: { run: CompositeKernels; memory: WasmMemory } | null = null;

/** The module of every composite kernel. */
export function compositeModule(): ModuleSource {
  return { functions: { ...sumKernels(), ...ownerKernels(), ...finishKernels(), ...pyramidKernels() }, pages: 1 };
}

function compiled(): { run: CompositeKernels; memory: WasmMemory } {
  if (!kernels) {
    const { exports, memory } = instantiate(compositeModule());
    kernels = { run: exports as unknown as CompositeKernels, memory };
  }
  return kernels;
}

/** The kernels of this thread and buffers laid out in their memory for one task (KernelArena). */
export class KernelMemory extends KernelArena {
  readonly run: CompositeKernels;

  constructor() {
    const { run, memory } = compiled();
    super(memory);
    this.run = run;
  }

  /** Writes a grid's column taps for `width` pixels at `at` (TAP_BYTES a pixel). */
  putTaps(at: number, taps: Taps, width: number): void {
    const { i32, f32 } = this;
    for (let x = 0, e = at >> 2; x < width; x++, e += 3) {
      i32[e] = taps.left[x]!;
      i32[e + 1] = taps.right[x]!;
      f32[e + 2] = taps.fx[x]!;
    }
  }

  /**
   * Writes the row taps of pixel rows [y0, y1) at `at` (ROW_TAP_BYTES a row): the two rows of a
   * grid `gridHeight` rows high, one per `factor` pixels, counted from grid row `first`, and fy.
   */
  putRowTaps(at: number, y0: number, y1: number, gridHeight: number, factor: number, first: number): void {
    const { i32, f64 } = this;
    for (let y = y0, e = at >> 2; y < y1; y++, e += ROW_TAP_BYTES >> 2) {
      const v = gridPosition(y, gridHeight, factor);
      const top = Math.floor(v);
      i32[e] = top - first;
      i32[e + 1] = Math.min(gridHeight - 1, top + 1) - first;
      f64[(e >> 1) + 1] = v - top;
    }
  }
}

/** Where pixel row (or column) `i` lies on a grid of `cells`, one per `factor` pixels: between floor(v) and the next. */
export function gridPosition(i: number, cells: number, factor: number): number {
  return Math.min(cells - 1, Math.max(0, (i + 0.5) / factor - 0.5));
}

let shared: KernelMemory | null = null;

/** The one KernelMemory of this thread, its buffers laid out afresh by each task. */
export function kernelMemory(): KernelMemory {
  shared ??= new KernelMemory();
  return shared.reset();
}
