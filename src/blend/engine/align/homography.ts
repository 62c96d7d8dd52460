/**
 * 3×3 homographies as 9 numbers, row-major, acting on pixel centres at integer coordinates
 * (origin = centre of the top-left pixel): [x', y', w']ᵀ = H [x, y, 1]ᵀ, then x'/w', y'/w'.
 */
export type Homography = number[];

export const IDENTITY: Homography = [1, 0, 0, 0, 1, 0, 0, 0, 1];

function at(h: Homography, i: number): number {
  const v = h[i];
  if (v === undefined) throw new Error(`homography has ${h.length} numbers, not 9`);
  return v;
}

export function multiply(a: Homography, b: Homography): Homography {
  const out: number[] = [];
  for (let r = 0; r < 3; r++) {
    for (let c = 0; c < 3; c++) out.push(at(a, r * 3) * at(b, c) + at(a, r * 3 + 1) * at(b, 3 + c) + at(a, r * 3 + 2) * at(b, 6 + c));
  }
  return out;
}

/** Scaled so that the bottom-right entry is 1 (the form the manifests and reports use). */
export function normalise(h: Homography): Homography {
  const s = at(h, 8);
  return h.map((v) => v / s);
}

export function invert(h: Homography): Homography {
  const [a, b, c, d, e, f, g, i, j] = h.map((_, k) => at(h, k)) as [number, number, number, number, number, number, number, number, number];
  return normalise([e * j - f * i, c * i - b * j, b * f - c * e, f * g - d * j, a * j - c * g, c * d - a * f, d * i - e * g, b * g - a * i, a * e - b * d]);
}

export function apply(h: Homography, x: number, y: number): [number, number] {
  const w = at(h, 6) * x + at(h, 7) * y + at(h, 8);
  return [(at(h, 0) * x + at(h, 1) * y + at(h, 2)) / w, (at(h, 3) * x + at(h, 4) * y + at(h, 5)) / w];
}

/**
 * The full-size homography of one estimated on a thumbnail whose pixel (u, v) averages the
 * factor × factor block of full-size pixels starting at (factor·u, factor·v): its centre is
 * x = factor·u + (factor − 1)/2, so H_full = A · H_thumb · A⁻¹ with A that map.
 */
export function fromThumbnail(h: Homography, factor: number): Homography {
  const c = (factor - 1) / 2;
  const toFull = [factor, 0, c, 0, factor, c, 0, 0, 1];
  const toThumb = [1 / factor, 0, -c / factor, 0, 1 / factor, -c / factor, 0, 0, 1];
  return normalise(multiply(multiply(toFull, h), toThumb));
}

/**
 * The translation that moves the centre of a `width` × `height` image where `h` moves it: a motion
 * that is nearly a shift (a tripod's drift, a turn of a few hundredths of a degree) as the shift
 * alone, which the full-size warp makes with fixed weights (align/warp.ts) instead of a position
 * per pixel.
 */
export function centreTranslation(h: Homography, width: number, height: number): Homography {
  const [cx, cy] = [(width - 1) / 2, (height - 1) / 2];
  const [u, v] = apply(h, cx, cy);
  return [1, 0, u - cx, 0, 1, v - cy, 0, 0, 1];
}

const corners = (width: number, height: number): Array<[number, number]> => [
  [0, 0],
  [width - 1, 0],
  [0, height - 1],
  [width - 1, height - 1],
];

/** How far (pixels) `h` moves the image's corners; ≤ 0.5 means the frame already lines up. */
export function cornerDisplacement(h: Homography, width: number, height: number): number {
  let most = 0;
  for (const [x, y] of corners(width, height)) {
    const [u, v] = apply(h, x, y);
    most = Math.max(most, Math.hypot(u - x, v - y));
  }
  return most;
}

/**
 * Whether `h` could come from a hand-held camera: it keeps orientation and roughly the scale
 * (determinant of the linear part in [0.5, 2], singular values within a factor 2 of each other)
 * and bends the image only mildly (perspective divisor within [0.5, 2] at every corner).
 */
export function isPlausible(h: Homography, width: number, height: number): boolean {
  const n = normalise(h);
  const [a, b, , c, d] = n as [number, number, number, number, number];
  const det = a * d - b * c;
  if (!(det >= 0.5 && det <= 2)) return false;
  const frob = a * a + b * b + c * c + d * d;
  const root = Math.sqrt(Math.max(0, frob * frob - 4 * det * det));
  const condition = Math.sqrt((frob + root) / (frob - root));
  if (!(condition <= 2)) return false;
  return corners(width, height).every(([x, y]) => {
    const w = at(n, 6) * x + at(n, 7) * y + 1;
    return w >= 0.5 && w <= 2;
  });
}
