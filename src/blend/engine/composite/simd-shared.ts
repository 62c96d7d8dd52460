import { type Code, fn, type ValueType } from '../wasm/assembler.js';

/**
 * What the composite's WebAssembly kernels (composite/simd-*.ts) share: how a step is written so a
 * kernel can run it once or once per row of a band, and the layout of the tables JavaScript hands
 * them. Looping over rows inside a kernel matters for narrow images, whose rows are a few pixels:
 * there one call per row, and the JavaScript around it, would cost more than the row's work.
 */

/**
 * A kernel's step, written into `code` with its arguments, by name, in the locals `args`. A step
 * sets every local it declares before reading it, as a loop runs it again with the locals it left;
 * it may change its arguments, so a loop hands it locals it sets afresh on each turn.
 */
export type Step<N extends string> = (code: Code, args: Record<N, number>) => void;

/** A kernel of its own: `step` with the function's parameters, of these types and in this order, as its arguments. */
export function kernel<N extends string>(params: Record<N, ValueType>, step: Step<N>): Code {
  return fn({ params }, step);
}

/** `winner` value of a pixel that no frame claims. */
export const NOBODY = 255;

/** Per pixel, the two columns of a grid it interpolates between and the weight of the right one. */
export interface Taps {
  left: Int32Array;
  right: Int32Array;
  fx: Float32Array;
}

/** Bytes a pixel's column taps take in kernel memory: left, right (i32), fx (f32). */
export const TAP_BYTES = 12;

/** Bytes a pixel row's taps take in kernel memory: its top and bottom grid rows (i32, from a table's first row), fy (f64). */
export const ROW_TAP_BYTES = 16;
