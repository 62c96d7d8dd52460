import type { FixedPlane, Plane } from './planes.js';
import type { Row, RowMemory } from './simd.js';

/**
 * How the pyramid's kernels (pyramid/pyramid.ts) read a plane: rows copied into the kernels' memory as
 * floats, a ring of them kept while the rows asked for move down the plane, and the rows of an
 * expand made from that ring.
 */

/** `i` held to [0, last]: the plane's edges replicated. */
export const clamp = (i: number, last: number): number => (i < 0 ? 0 : i > last ? last : i);

/** Copies rows of a plane into float rows of the kernels' memory, scaling fixed-point ones by their unit. */
export class Loader {
  private readonly staging: Row;

  constructor(
    private readonly mem: RowMemory,
    width: number,
  ) {
    this.staging = mem.row(width, 2);
  }

  load(plane: Plane | FixedPlane, unit: number, y: number, into: Row): void {
    const w = plane.width;
    if (plane.data instanceof Float32Array) {
      this.mem.put(into, plane.data, y * w, w);
    } else {
      this.mem.put(this.staging, plane.data, y * w, w);
      this.mem.run.shortsToFloats(this.staging.at, into.at, w, unit);
    }
  }
}

/**
 * A ring of `count` float rows of a plane, edges replicated one element either side, each row
 * loaded (and converted) once while the rows asked for move down the plane, not once per use.
 */
export class RowRing {
  private readonly rows: Row[];
  private readonly held: number[];
  private plane: Plane | FixedPlane | null = null;
  private unit = 1;

  constructor(
    private readonly mem: RowMemory,
    private readonly loader: Loader,
    width: number,
    count: number,
  ) {
    this.rows = Array.from({ length: count }, () => mem.row(width, 4));
    this.held = new Array<number>(count).fill(-1);
  }

  /** Serves rows of `plane` (values times `unit`) from now on. */
  over(plane: Plane | FixedPlane, unit: number): this {
    this.plane = plane;
    this.unit = unit;
    this.held.fill(-1);
    return this;
  }

  row(y: number): Row {
    const slot = y % this.rows.length, row = this.rows[slot]!;
    if (this.held[slot] !== y) {
      const plane = this.plane!;
      this.loader.load(plane, this.unit, y, row);
      this.mem.replicateFloats(row.at, plane.width, 1, 1);
      this.held[slot] = y;
    }
    return row;
  }
}

/**
 * Rows of expand(c) for one plane c (c upsampled ×2 with zeros and blurred by 2 · 1-4-6-4-1 each
 * way): even rows take (1, 6, 1) / 8 of their neighbourhood, odd ones (1, 1) / 2, then the same
 * across. Fine rows asked for in order read each coarse row once.
 */
export class Expander {
  private readonly ring: RowRing;

  constructor(
    private readonly mem: RowMemory,
    loader: Loader,
    private readonly plane: Plane | FixedPlane,
    unit: number,
  ) {
    this.ring = new RowRing(mem, loader, plane.width, 3).over(plane, unit);
  }

  /** Fine row y: 2 · c.width elements into `into`. */
  expand(y: number, into: Row): void {
    this.mem.run.expandRow(...this.around(y), into.at);
  }

  /** acc += w · (g − expand(c)) on fine row y, g floats. */
  accumulate(y: number, acc: Row, w: Row, g: Row): void {
    this.mem.run.expandAccumulate(...this.around(y), acc.at, w.at, g.at);
  }

  /** The same with g bytes. */
  accumulateBytes(y: number, acc: Row, w: Row, g: Row): void {
    this.mem.run.expandAccumulateBytes(...this.around(y), acc.at, w.at, g.at);
  }

  // The coarse rows a, b, c and factors p, q of fine row y's down pass, (a + c)·p + b·q.
  private around(y: number): [number, number, number, number, number, number] {
    const { ring, plane } = this;
    const last = plane.height - 1, j = y >> 1;
    if (y & 1) {
      const a = ring.row(clamp(j, last)).at;
      return [a, a, ring.row(clamp(j + 1, last)).at, plane.width, 0.5, 0];
    }
    const a = ring.row(clamp(j - 1, last)).at, b = ring.row(clamp(j, last)).at;
    return [a, b, ring.row(clamp(j + 1, last)).at, plane.width, 0.125, 0.75];
  }
}
