/**
 * What deghosting (deghost/deghost.ts) hands the blends, as types: the pyramid's level-0 weights
 * (pyramid/level-zero.ts) read the masks at full size, the weighted mean (point/stack-weighted.ts)
 * on the test's grid, and the registry names the reference; none of them reaches the code that
 * makes the masks. A mask row's extent is image/image.ts fullOutside.
 */

export interface DeghostMasks {
  /** The frame that always counts. */
  reference: number;
  /** Per frame, 255 where it counts, 0 where it shows something the reference does not; null where it counts everywhere (always the reference's). */
  masks: Array<Uint8Array | null>;
  /** Per frame with a mask, per row y the columns [x0, x1) at 2y, 2y + 1 outside of which its mask is 255 (x0 = x1: all of the row). */
  spans: Array<Int32Array | null>;
  /** Per frame with a mask, the reference's R, G, B values (256 each) brought to the frame's exposure. */
  toFrame: Array<Uint8Array | null>;
}

/** A frame's agreement mask as the test made it: a byte a pixel of its grid (width × height, shared between threads), each grid pixel standing for `factor` frame pixels a side; deghost/upsample.ts brings it to full size. */
export interface GridMask {
  data: Uint8Array;
  width: number;
  height: number;
  factor: number;
}

/** The masks of DeghostMasks on the test's grid, for a blend that brings them to full size as it goes (point/stack-weighted.ts). */
export interface GridMasks {
  reference: number;
  masks: Array<GridMask | null>;
  toFrame: Array<Uint8Array | null>;
}

export type DeghostReference = 'first' | 'middle-exposure';
