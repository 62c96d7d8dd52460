import { sharedFloats } from '../image/image.js';

/**
 * The planes a pyramid's levels are kept in (pyramid/pyramid.ts): 32-bit floats, or, for level 1, 16-bit
 * fixed point; and the levels' sizes.
 */

/** A level of one channel in 32-bit floats, row after row. */
export interface Plane {
  data: Float32Array;
  width: number;
  height: number;
}

/** A plane in shared memory. */
export function sharedPlane(width: number, height: number): Plane {
  return { data: sharedFloats(width * height), width, height };
}

/**
 * Level 1, the largest level a blend keeps, is stored in 16-bit fixed point, at half the memory of
 * Float32: every frame's R, G, B (LEVEL_ONE_STEPS per unit, exact) and weight (WEIGHT_ONE for 1).
 */
export interface FixedPlane {
  data: Uint16Array;
  width: number;
  height: number;
}

export function sharedFixedPlane(width: number, height: number): FixedPlane {
  return { data: new Uint16Array(new SharedArrayBuffer(width * height * 2)), width, height };
}

/**
 * Weights ~3·10⁻⁵ apart, far below an 8-bit step once multiplied by pixel values. A power of two,
 * so 1 is exact and scaling back is exact.
 */
export const WEIGHT_ONE = 1 << 15;

/**
 * Level 1 of an 8-bit frame under the 1-4-6-4-1 kernel is a whole number of 256ths (the kernel
 * sums to 256 each way), so keeping it in 256ths is exact.
 */
export const LEVEL_ONE_STEPS = 256;

/** The sizes of a pyramid's levels, finest first; the coarsest is 8..16 px on its short side. */
export function levelSizes(width: number, height: number): Array<[number, number]> {
  const sizes: Array<[number, number]> = [[width, height]];
  while (Math.min(width, height) > 16) {
    width = Math.ceil(width / 2);
    height = Math.ceil(height / 2);
    sizes.push([width, height]);
  }
  return sizes;
}
