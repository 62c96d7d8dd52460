import { Code } from '../wasm/assembler.js';

/**
 * What the composite's WebAssembly kernels (composite/simd-*.ts) share: how a step is written so a
 * kernel can run it once or once per row of a band, and the layout of the tables JavaScript hands
 * them. Looping over rows inside a kernel matters for narrow images, whose rows are a few pixels:
 * there one call per row, and the JavaScript around it, would cost more than the row's work.
 */

/** Argument locals, destructured without checks up to 24. */
export type Args = number[] & Record<0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | 16 | 17 | 18 | 19 | 20 | 21 | 22 | 23, number>;

/**
 * A kernel's step, written into `code` with its arguments in the locals `args`. A step sets every
 * local it declares before reading it, as a loop runs it again with the locals it left; it may
 * change its arguments, so a loop hands it locals it sets afresh on each turn.
 */
export type Step = (code: Code, args: Args) => void;

/** A kernel of its own: `step` with the function's parameters, of these types, as its arguments. */
export function kernel(params: Code['params'], step: Step): Code {
  const code = new Code(params);
  step(code, params.map((_, i) => i) as Args);
  return code;
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
