import { fullOutside } from '../image/image.js';

/**
 * A full-size mask (width wide) from its small copy (`small`, smallWidth × smallHeight, `factor`
 * pixels a small pixel): bilinear between the small pixels' centres, edges replicated. A mask is
 * below 255 only where something moved, so each output row is interpolated only across the
 * columns its two small rows are below 255 at (and their neighbours), and is 255 elsewhere.
 * `maskRows` makes it a row at a time, for a blend that reads each row once (point/stack-weighted.ts:
 * no full-size mask is written, so none is allocated); `upsampleMaskRows` writes rows of it.
 */

/** A mask's rows made on demand: `span(y)` the columns [x0, x1) outside of which row y is 255 (x0 = x1: all of it), `row(y, out, at)` its values in that span into out[at + x]. */
export interface MaskRows {
  span(y: number): [number, number];
  row(y: number, out: Uint8Array, at: number): void;
}

/**
 * Rows [y0, y1) of the full-size mask into `out` (row y at y · width); `spans` gets, per row y, at
 * 2y and 2y + 1 the row's `span`, for the blends to skip the rest.
 */
export function upsampleMaskRows(small: Uint8Array, smallWidth: number, smallHeight: number, factor: number, out: Uint8Array, width: number, y0: number, y1: number, spans?: Int32Array): void {
  const rows = maskRows(small, smallWidth, smallHeight, factor, width);
  for (let y = y0; y < y1; y++) {
    const o = y * width;
    const [x0, x1] = rows.span(y);
    out.fill(255, o, o + x0);
    rows.row(y, out, o);
    out.fill(255, o + Math.max(x0, x1), o + width);
    if (spans) (spans[2 * y] = x0), (spans[2 * y + 1] = x1);
  }
}

export function maskRows(small: Uint8Array, smallWidth: number, smallHeight: number, factor: number, width: number): MaskRows {
  const xs = new Int32Array(width), fx = new Float32Array(width);
  const narrow = smallWidth === 1, short = smallHeight === 1;
  for (let x = 0; x < width; x++) {
    const sx = Math.max(0, Math.min(smallWidth - 1, (x + 0.5) / factor - 0.5));
    xs[x] = narrow ? 0 : Math.min(smallWidth - 2, Math.floor(sx));
    fx[x] = narrow ? 0 : sx - xs[x]!;
  }
  // the first and last column at which each small row is below 255 (first > last: none)
  const extent = new Map<number, [number, number]>();
  const extentOf = (r: number): [number, number] => {
    let e = extent.get(r);
    if (e) return e;
    const [first, end] = fullOutside(small, r * smallWidth, smallWidth);
    e = first < end ? [first, end - 1] : [smallWidth, -1];
    extent.set(r, e);
    return e;
  };
  const upper = new Float64Array(width), lower = new Float64Array(width);
  const next = narrow ? 0 : 1;
  // The output columns come in runs that read the same two small columns. Where the four small
  // pixels a run reads are equal (inside a mover, between movers) the run is that value, as the
  // interpolation would give it exactly: `flat` holds it per run, −1 where the run is interpolated.
  const runStart: number[] = [];
  const runOf = new Int32Array(width);
  for (let x = 0; x < width; x++) {
    if (x === 0 || xs[x] !== xs[x - 1]) runStart.push(x);
    runOf[x] = runStart.length - 1;
  }
  runStart.push(width);
  // the first output column that reads small column s or one after it (xs is non-decreasing), width for none
  const firstReading = new Int32Array(smallWidth + 1);
  for (let c = 0, x = 0; c <= smallWidth; c++) {
    while (x < width && xs[x]! < c) x++;
    firstReading[c] = x;
  }
  const flat = new Int16Array(runStart.length);
  const across = (r0: number, r1: number, x0: number, x1: number) => {
    for (let j = runOf[x0]!, end = x1 > x0 ? runOf[x1 - 1]! + 1 : j; j < end; j++) {
      const s0 = runStart[j]!, s1 = runStart[j + 1]!;
      const a = r0 * smallWidth + xs[s0]!, b = r1 * smallWidth + xs[s0]!;
      const c = small[a]!;
      if (small[a + next] === c && small[b] === c && small[b + next] === c) {
        flat[j] = c;
        continue;
      }
      flat[j] = -1;
      for (let x = s0; x < s1; x++) {
        upper[x] = small[a]! + fx[x]! * (small[a + next]! - small[a]!);
        lower[x] = small[b]! + fx[x]! * (small[b + next]! - small[b]!);
      }
    }
  };
  // the small rows output row y reads, its fraction between them, and its span
  let y = -1, r0 = 0, r1 = 0, fy = 0, x0 = 0, x1 = 0;
  const locate = (row: number) => {
    if (row === y) return;
    y = row;
    const sy = Math.max(0, Math.min(smallHeight - 1, (y + 0.5) / factor - 0.5));
    r0 = short ? 0 : Math.min(smallHeight - 2, Math.floor(sy));
    r1 = short ? 0 : r0 + 1;
    fy = short ? 0 : sy - r0;
    const [a0, b0] = extentOf(r0), [a1, b1] = extentOf(r1);
    const first = Math.min(a0, a1), last = Math.max(b0, b1);
    if (first > last) {
      x0 = x1 = 0;
      return;
    }
    // output column x reads small columns xs[x] and xs[x] + 1: it is 255 unless one of them lies in [first, last]
    x0 = firstReading[Math.max(0, first - 1)]!;
    x1 = Math.max(x0, firstReading[Math.min(smallWidth, last + 1)]!);
  };
  let pair = [-1, -1, 0, 0];
  return {
    span(row) {
      locate(row);
      return [x0, x1];
    },
    row(row, out, o) {
      locate(row);
      if (x1 <= x0) return;
      // the two small rows interpolated across [x0, x1), kept for the output rows that lie between them too
      if (r0 !== pair[0] || r1 !== pair[1] || x0 !== pair[2] || x1 !== pair[3]) {
        across(r0, r1, x0, x1);
        pair = [r0, r1, x0, x1];
      }
      // x0 and x1 are bounds of runs: which columns a run reads decides both
      for (let j = runOf[x0]!, end = runOf[x1 - 1]! + 1; j < end; ) {
        const s0 = runStart[j]!, c = flat[j]!;
        if (c < 0) {
          for (let x = s0, s1 = runStart[++j]!; x < s1; x++) out[o + x] = Math.round(upper[x]! + fy * (lower[x]! - upper[x]!));
          continue;
        }
        // a stretch of runs of one value at once (a call of fill costs more than a short loop)
        while (j < end && flat[j] === c) j++;
        const s1 = runStart[j]!;
        if (s1 - s0 >= 64) out.fill(c, o + s0, o + s1);
        else for (let x = s0; x < s1; x++) out[o + x] = c;
      }
    },
  };
}

/** Whether any of the masks' rows (null: 255 everywhere) is below 255 in row y; if so, `span` gets the columns [x0, x1) outside of which every mask is 255 (the union of the masks' spans). */
export function maskedSpan(rows: Array<MaskRows | null>, width: number, y: number, span: Int32Array): boolean {
  let x0 = width, x1 = 0;
  for (const r of rows) {
    if (!r) continue;
    const [first, last] = r.span(y);
    if (first < last) (x0 = Math.min(x0, first)), (x1 = Math.max(x1, last));
  }
  span[0] = x0;
  span[1] = x1;
  return x0 < x1;
}
