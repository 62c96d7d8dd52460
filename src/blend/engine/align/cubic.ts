/** Weights of the cubic convolution kernel (a = −1/2: Catmull–Rom) are in 1/2^WEIGHT_BITS. */
export const WEIGHT_BITS = 10;

/**
 * The four taps' weights, in 1/1024, of a sample at fraction `f` / 256 past a pixel: Keys' cubic
 * convolution kernel with a = −1/2 (Catmull–Rom), taps at −1, 0, 1, 2. Exact in integers first
 * (the kernel's values times 2·256³ = 2^25: −F³ + 512F² − 65536F, 3F³ − 1280F² + 2^25, −3F³ +
 * 1024F² + 65536F, F³ − 256F²), then each outer one rounded to 1/1024 (+2^14, arithmetic >> 15)
 * and the second the rest of 1024, so that the four always sum to 1024 and a flat image stays
 * flat. f = 0 gives (0, 1024, 0, 0): the pixel itself.
 */
export function cubicWeights(f: number): [number, number, number, number] {
  const f2 = f * f;
  const f3 = f2 * f;
  const w0 = (-f3 + 512 * f2 - 65536 * f + 16384) >> 15;
  const w2 = (-3 * f3 + 1024 * f2 + 65536 * f + 16384) >> 15;
  const w3 = (f3 - 256 * f2 + 16384) >> 15;
  return [w0, 1024 - w0 - w2 - w3, w2, w3];
}
