import type { DeghostMasks } from '../deghost/masks.js';
import { EPSILON } from './exposure.js';
import type { Row, RowMemory } from './simd.js';

/**
 * Every frame's level-0 weights, never stored: Mertens' exposure weights (pyramid/exposure.ts), computed
 * from the frames row by row where they are needed, deghosted (`{ exposure: masks }`: where a frame's
 * mask is below 255 the reference's pixels, brought to its exposure, stand in for its own,
 * deghost/deghost.ts), or
 * one-hot weights from the index of the frame chosen per pixel.
 */
export type LevelZeroWeights = 'exposure' | { exposure: DeghostMasks } | { choice: Uint8Array };

/**
 * Frames of a stack taken a few at a time (engine/pyramid-stream.ts): `frames[0]` is frame `first`
 * of `count`. Exposure weights are normalised by `sum`, every frame's raw weights per pixel added
 * in frame order by a pass before (with EPSILON · count first, as when every frame is at hand), so
 * a frame's weights are the same floats; `reference` is the deghosting reference frame's pixels
 * (masks and tables are indexed by the stack's frame index). Null: `frames` are the whole stack.
 */
export interface StackPart {
  first: number;
  count: number;
  sum: Float32Array | null;
  reference: Uint8Array | null;
}

/**
 * Level 0 of every frame, a row at a time in the kernels' memory: the frames' normalised level-0
 * weights (a ring of the last `kept` rows per frame) and planar R, G, B bytes (one row more: the
 * exposure weights of a row need the grey of the next), computed in row order. Exposure weights
 * also keep three grey rows per frame for the Laplacian, and the saturation and well-exposedness
 * of two rows. Rings no longer than needed keep a thread's rows in cache.
 */
export class LevelZeroRows {
  private readonly planes: Row[][][];
  private readonly weights: Row[][];
  private readonly greys: Row[][];
  private readonly terms: Array<Array<[saturation: Row, exposedness: Row]>>;
  private readonly source: Row;
  private readonly sum: Row;
  /** A streamed exposure's row of `part.sum`, which the weights are normalised by. */
  private readonly total: Row | null;
  private readonly present: boolean[];
  private readonly exposure: boolean;
  private planarDone = -1;
  private weightsDone = -1;

  constructor(
    private readonly mem: RowMemory,
    private readonly frames: Uint8Array[],
    private readonly width: number,
    private readonly height: number,
    private readonly levelZero: LevelZeroWeights,
    private readonly kept: number,
    private readonly part: StackPart | null = null,
  ) {
    const n = frames.length;
    this.planes = frames.map(() => Array.from({ length: kept + 1 }, () => [0, 1, 2].map(() => mem.row(width, 1))));
    this.weights = frames.map(() => Array.from({ length: kept }, () => mem.row(width, 4)));
    const exposure = (this.exposure = levelZero === 'exposure' || 'exposure' in levelZero);
    this.greys = exposure ? frames.map(() => [0, 1, 2].map(() => mem.row(width, 4))) : [];
    this.terms = exposure ? frames.map(() => [0, 1].map(() => [mem.row(width, 4), mem.row(width, 4)] as [Row, Row])) : [];
    this.source = mem.row(3 * width, 1);
    this.sum = mem.row(width, 4);
    this.total = part?.sum ? mem.row(width, 4) : null;
    this.present = new Array<boolean>(n).fill(true);
  }

  /** The first row whose weights will be asked for. */
  start(row: number): void {
    this.weightsDone = row - 1;
    this.planarDone = Math.max(0, row - 1) - 1;
  }

  planar(k: number, row: number): Row[] {
    return this.planes[k]![row % (this.kept + 1)]!;
  }

  weight(k: number, row: number): Row {
    return this.weights[k]![row % this.kept]!;
  }

  /** Computes the weights of the rows up to `row`; returns which frames have any weight in that row. */
  weightsUpTo(row: number): boolean[] {
    while (this.weightsDone < row) this.computeWeights(++this.weightsDone);
    return this.present;
  }

  /**
   * A streamed exposure's first pass: adds row `row` of these frames' raw weights to `part.sum`
   * (which frame 0 starts at EPSILON · count), in frame order as computeWeights adds them.
   */
  addRawWeights(row: number): void {
    const { mem, width } = this;
    const part = this.part!, sum = part.sum!;
    if (part.first === 0) mem.run.fill(this.sum.at, width, EPSILON * part.count);
    else mem.put(this.sum, sum, row * width, width);
    this.rawWeights(row);
    mem.take(this.sum, sum, row * width, width);
  }

  private computeWeights(row: number): void {
    const { mem, frames, width } = this;
    const { run } = mem;
    const first = this.part?.first ?? 0;
    if (this.exposure) {
      if (this.total) mem.put(this.total, this.part!.sum!, row * width, width);
      // streamed, the row's sum is scratch: the pass before added every frame's weights into `total`
      run.fill(this.sum.at, width, EPSILON * frames.length);
      this.rawWeights(row);
      const sum = this.total ?? this.sum;
      for (let k = 0; k < frames.length; k++) run.normalise(this.weight(k, row).at, sum.at, width, EPSILON);
    } else if (typeof this.levelZero === 'object' && 'choice' in this.levelZero) {
      this.planarUpTo(row);
      const choice = this.levelZero.choice;
      mem.put(this.source, choice, row * width, width);
      this.present.fill(false);
      for (let x = row * width, end = x + width; x < end; x++) {
        const k = choice[x]! - first;
        if (k >= 0 && k < frames.length) this.present[k] = true;
      }
      for (let k = 0; k < frames.length; k++) run.oneHot(this.source.at, first + k, this.weight(k, row).at, width);
    }
  }

  /** Mertens' weights of row `row` before normalisation, into each frame's weight row and added to the row's sum. */
  private rawWeights(row: number): void {
    const { mem, frames, width, height } = this;
    const last = height - 1;
    this.planarUpTo(Math.min(row + 1, last));
    for (let k = 0; k < frames.length; k++) {
      const greys = this.greys[k]!, [saturation, exposedness] = this.terms[k]![row % 2]!;
      const up = greys[Math.max(row - 1, 0) % 3]!, mid = greys[row % 3]!, down = greys[Math.min(row + 1, last) % 3]!;
      mem.run.exposureWeight(up.at, mid.at, down.at, saturation.at, exposedness.at, this.weight(k, row).at, this.sum.at, width);
    }
  }

  /**
   * Where frame k does not count (its mask below 255), the reference's pixels brought to its
   * exposure stand in for its own, mixed by the mask: row r of the frame's bytes in `source`.
   */
  private standIn({ reference, masks, spans, toFrame }: DeghostMasks, k: number, r: number): void {
    const frame = (this.part?.first ?? 0) + k;
    const mask = masks[frame], lut = toFrame[frame], span = spans[frame];
    if (!mask || !lut) return;
    const u8 = this.mem.u8, at = this.source.at, ref = this.part?.reference ?? this.frames[reference]!, o = r * this.width;
    // outside its span the row's mask is 255: the frame's own pixels
    const [x0, x1] = span ? [span[2 * r]!, span[2 * r + 1]!] : [0, this.width];
    for (let x = x0; x < x1; x++) {
      const m = mask[o + x]!;
      if (m === 255) continue;
      for (let c = 0; c < 3; c++) {
        const own = u8[at + 3 * x + c]!, stand = lut[c * 256 + ref[3 * (o + x) + c]!]!;
        u8[at + 3 * x + c] = Math.round((m * own + (255 - m) * stand) / 255);
      }
    }
  }

  private planarUpTo(row: number): void {
    const { mem, frames, width } = this;
    while (this.planarDone < row) {
      const r = ++this.planarDone;
      for (let k = 0; k < frames.length; k++) {
        mem.put(this.source, frames[k]!, r * width * 3, width * 3);
        if (typeof this.levelZero === 'object' && 'exposure' in this.levelZero) this.standIn(this.levelZero.exposure, k, r);
        const [red, green, blue] = this.planar(k, r) as [Row, Row, Row];
        mem.run.split(this.source.at, red.at, green.at, blue.at, width);
        if (this.exposure) {
          const grey = this.greys[k]![r % 3]!, [saturation, exposedness] = this.terms[k]![r % 2]!;
          mem.run.exposurePixels(red.at, green.at, blue.at, grey.at, saturation.at, exposedness.at, width);
          mem.replicateFloats(grey.at, width, 1, 1);
        }
      }
    }
  }
}
