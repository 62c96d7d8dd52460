/**
 * Layer blend modes (W3C Compositing and Blending Level 1, section 10), folded left to right:
 * result = B(…B(B(frame0, frame1), frame2)…, frameN), the running result being the backdrop Cb and
 * each next frame the source Cs. Values are 0..1 between folds and rounded to 8 bits once at the end.
 */

/** One fold step over a run of bytes: acc[at + i] = B(acc[at + i], src[from + i] / 255), i < len. */
export type FoldStep = (acc: Float64Array, src: Uint8Array, from: number, len: number, at: number) => void;

const CHUNK = 8192;
const UNIT = 1 / 255;

function foldRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number, step: FoldStep): void {
  const end = y1 * width * 3;
  const acc = new Float64Array(CHUNK);
  for (let c0 = y0 * width * 3; c0 < end; c0 += CHUNK) {
    const len = Math.min(CHUNK, end - c0);
    const first = frames[0]!;
    for (let i = 0; i < len; i++) acc[i] = first[c0 + i]! * UNIT;
    for (let k = 1; k < frames.length; k++) step(acc, frames[k]!, c0, len, 0);
    // every mode keeps 0..1, so rounding needs no clamp
    for (let i = 0; i < len; i++) out[c0 + i] = (acc[i]! * 255 + 0.5) | 0;
  }
}

/** The modes' fold steps, by name: the row kernels below and the streaming fold (point/fold.ts) share them. */
export const FOLD_STEPS = {
  /** B(cb, cs) = cb · cs */
  multiply: (acc, src, from, len, at) => {
    for (let i = 0; i < len; i++) acc[at + i] = acc[at + i]! * src[from + i]! * UNIT;
  },
  /** B(cb, cs) = cb + cs − cb · cs */
  screen: (acc, src, from, len, at) => {
    for (let i = 0; i < len; i++) {
      const cb = acc[at + i]!, cs = src[from + i]! * UNIT;
      acc[at + i] = cb + cs - cb * cs;
    }
  },
  /** B(cb, cs) = HardLight(cs, cb): multiply(cs, 2cb) if cb ≤ ½, else screen(cs, 2cb − 1). */
  overlay: (acc, src, from, len, at) => {
    for (let i = 0; i < len; i++) {
      const cb = acc[at + i]!, cs = src[from + i]! * UNIT;
      if (cb <= 0.5) acc[at + i] = 2 * cb * cs;
      else {
        const b = 2 * cb - 1;
        acc[at + i] = cs + b - cs * b;
      }
    }
  },
  /**
   * B(cb, cs) = cb − (1 − 2cs) · cb · (1 − cb) if cs ≤ ½, else cb + (2cs − 1) · (D(cb) − cb),
   * D(cb) = ((16cb − 12) · cb + 4) · cb if cb ≤ ¼, else √cb.
   */
  'soft-light': (acc, src, from, len, at) => {
    for (let i = 0; i < len; i++) {
      const cb = acc[at + i]!, cs = src[from + i]! * UNIT;
      if (cs <= 0.5) acc[at + i] = cb - (1 - 2 * cs) * cb * (1 - cb);
      else {
        const d = cb <= 0.25 ? ((16 * cb - 12) * cb + 4) * cb : Math.sqrt(cb);
        acc[at + i] = cb + (2 * cs - 1) * (d - cb);
      }
    }
  },
} as const satisfies Record<string, FoldStep>;

export type LayerMode = keyof typeof FOLD_STEPS;

export function multiplyRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  foldRows(frames, width, out, y0, y1, FOLD_STEPS.multiply);
}

export function screenRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  foldRows(frames, width, out, y0, y1, FOLD_STEPS.screen);
}

export function overlayRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  foldRows(frames, width, out, y0, y1, FOLD_STEPS.overlay);
}

export function softLightRows(frames: Uint8Array[], width: number, out: Uint8Array, y0: number, y1: number): void {
  foldRows(frames, width, out, y0, y1, FOLD_STEPS['soft-light']);
}
