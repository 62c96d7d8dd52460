import { kernel, NOBODY, ROW_TAP_BYTES, type Step, TAP_BYTES } from './simd-shared.js';
import { type Code, F64, I32, V128 } from '../wasm/assembler.js';

/**
 * Which frame owns each pixel, in WebAssembly (composite/kernels.ts ownerRows): the strongest mask,
 * else the strongest halo, over a band of rows copied into the kernels' memory. The halos are
 * interpolated in scalar f64 with the JavaScript's operations in its order, rounded where it
 * stored f32, so the owners and weights are the ones it chose.
 */

/** The kernels' signatures: addresses are byte offsets into the memory. */
export interface OwnerKernels {
  /** The strongest of `count` mask rows (at masks + k·stride) → `weight`, the first frame holding it → `winner` (NOBODY where all are 0), n bytes. */
  strongest(masks: number, count: number, stride: number, winner: number, weight: number, n: number): void;
  /**
   * For `rows` rows of `width` pixels (their strongest masks at winner and weight, rewritten):
   * each frame's halo row interpolated between the grid rows of the row's taps (`rowTaps`,
   * ROW_TAP_BYTES a row; frame k's grid rows of `cells` f32 at planes + k·planeStride), the cell
   * owners (the strongest halo per cell), then claim. `halos` and `cellOwner`: scratch.
   */
  claimRows(rows: number, rowTaps: number, planes: number, planeStride: number, count: number, cells: number, halos: number, haloStride: number, cellOwner: number, factor: number, taps: number, width: number, owned: number, winner: number, weight: number): void;
}

/** The strongest mask per pixel (OwnerKernels.strongest). */
const strongest: Step<'masks' | 'count' | 'stride' | 'winner' | 'weight' | 'n'> = (code, { masks, count, stride, winner, weight, n }) => {
  const { i, k, p } = code.declare({ i: I32, k: I32, p: I32 });
  const { w, who, m, gt } = code.declare({ w: V128, who: V128, m: V128, gt: V128 });
  code.forStep(i, n, 16, () => {
    code.i32(0).op('i32x4.splat').set(w);
    code.i32(NOBODY).op('i8x16.splat').set(who);
    code.address(masks, i).set(p);
    code.forStep(k, count, 1, () => {
      // a later frame takes the pixel only with a strictly stronger mask
      code.get(p).load(0).set(m);
      code.get(m).get(w);
      code.op('i8x16.gt_u').set(gt);
      code.get(m).get(w).op('i8x16.max_u').set(w);
      code.get(k).op('i8x16.splat').get(who).get(gt).op('v128.bitselect').set(who);
      code.get(p).get(stride).op('i32.add').set(p);
    });
    code.address(winner, i).get(who).store(0);
    code.address(weight, i).get(w).store(0);
  });
};

/**
 * Each frame's halo row, 255 × (top + (bottom − top) · fy) as f32 (frame k's grid rows at
 * top/bottom + k·planeStride) → dst + k·dstStride; then the first frame of the highest per cell → `cellOwner`.
 */
const haloRows: Step<'top' | 'bottom' | 'planeStride' | 'count' | 'cells' | 'fy' | 'dst' | 'dstStride' | 'cellOwner'> = (code, { top, bottom, planeStride, count, cells, fy, dst, dstStride, cellOwner }) => {
  const { k, u, t, b, o, best } = code.declare({ k: I32, u: I32, t: I32, b: I32, o: I32, best: I32 });
  const a = code.local(F64);
  code.forStep(k, count, 1, () => {
    code.get(k).get(planeStride).op('i32.mul').set(o);
    code.get(top).get(o).op('i32.add').set(t);
    code.get(bottom).get(o).op('i32.add').set(b);
    code.get(k).get(dstStride).op('i32.mul').get(dst).op('i32.add').set(o);
    code.forStep(u, cells, 1, () => {
      code.get(t).loadF32().op('f64.promote_f32').set(a);
      code.get(o).f64(255).get(a);
      code.get(b).loadF32().op('f64.promote_f32').get(a);
      code.op('f64.sub').get(fy).op('f64.mul', 'f64.add', 'f64.mul');
      code.op('f32.demote_f64').storeF32();
      code.get(t).i32(4).op('i32.add').set(t);
      code.get(b).i32(4).op('i32.add').set(b);
      code.get(o).i32(4).op('i32.add').set(o);
    });
  });
  // the halo of frame f at cell u
  const haloAt = (f: number) => code.get(f).get(dstStride).op('i32.mul').get(dst).op('i32.add').get(u).i32(2).op('i32.shl').op('i32.add');
  code.forStep(u, cells, 1, () => {
    code.i32(0).set(best);
    code.i32(1).set(k);
    code.whileBelow(k, count, () => {
      haloAt(k).loadF32();
      haloAt(best).loadF32();
      code.op('f32.gt').when(() => code.get(k).set(best));
      code.get(k).i32(1).op('i32.add').set(k);
    });
    code.address(cellOwner, u).get(best).store8(0);
  });
};

/**
 * Where the owner's halo (the person's, or the cell's strongest), interpolated at the pixel and
 * rounded, beats the weight: that owner and weight. Marks `owned[k]` for every frame k owning a
 * pixel with a weight above zero.
 */
const claim: Step<'winner' | 'weight' | 'halos' | 'haloStride' | 'cellOwner' | 'factor' | 'taps' | 'width' | 'owned' | 'cells'> = (code, { winner, weight, halos, haloStride, cellOwner, factor, taps, width, owned, cells }) => {
  const { x, end, u, cell, person, owner, row, tap, h, w, quiet } = code.declare({ x: I32, end: I32, u: I32, cell: I32, person: I32, owner: I32, row: I32, tap: I32, h: I32, w: I32, quiet: I32 });
  const a = code.local(F64);
  const halo = (offset: number) => code.get(row).get(tap).load32(offset).i32(4).op('i32.mul', 'i32.add').loadF32().op('f64.promote_f32');
  // the cell owner's halo at cell `index()` is 0
  const still = (index: () => void) => {
    code.get(cell).get(haloStride).op('i32.mul').get(halos).op('i32.add');
    index();
    code.i32(4).op('i32.mul', 'i32.add').loadF32().f32(0).op('f32.eq');
  };
  code.i32(0).set(x).i32(0).set(u);
  code.whileBelow(x, width, () => {
    code.get(x).get(factor).op('i32.add').set(end);
    code.get(end).get(width).get(end).get(width).op('i32.lt_u', 'select').set(end);
    code.address(cellOwner, u).load8().set(cell);
    // the taps of this cell's pixels are cells u − 1 .. u + 1: all 0, and a pixel without a person keeps weight 0
    still(() => code.get(u).i32(1).op('i32.sub').i32(0).get(u).op('select'));
    still(() => code.get(u));
    still(() => code.get(u).i32(1).op('i32.add').get(u).get(u).i32(1).op('i32.add').get(cells).op('i32.lt_u', 'select'));
    code.op('i32.and', 'i32.and').set(quiet);
    code.whileBelow(x, end, () => {
      code.address(winner, x).load8().set(person);
      code.get(quiet).get(person).i32(NOBODY).op('i32.eq', 'i32.and', 'i32.eqz');
      code.when(() => {
        code.get(cell).get(person).get(person).i32(NOBODY).op('i32.eq').op('select').set(owner);
        code.get(owner).get(haloStride).op('i32.mul').get(halos).op('i32.add').set(row);
        code.get(x).i32(TAP_BYTES).op('i32.mul').get(taps).op('i32.add').set(tap);
        halo(0).set(a);
        // a + (b − a) · fx + 0.5, truncated: the halo as a weight, ≥ weight + 1 exactly when above it
        code.get(a);
        halo(4).get(a);
        code.op('f64.sub');
        code.get(tap).loadF32(8).op('f64.promote_f32').op('f64.mul', 'f64.add').f64(0.5).op('f64.add', 'i32.trunc_f64_u').set(h);
        code.address(weight, x).load8().set(w);
        code.get(h).get(w).op('i32.gt_u').when(() => {
          code.address(weight, x).get(h).store8(0);
          code.address(winner, x).get(owner).store8(0);
          code.get(h).set(w);
        });
        code.get(w).when(() => code.address(winner, x).load8().get(owned).op('i32.add').i32(1).store8(0));
      });
      code.get(x).i32(1).op('i32.add').set(x);
    });
    code.get(u).i32(1).op('i32.add').set(u);
  });
};

function claimRows(): Code {
  const params = { rows: I32, rowTaps: I32, planes: I32, planeStride: I32, count: I32, cells: I32, halos: I32, haloStride: I32, cellOwner: I32, factor: I32, taps: I32, width: I32, owned: I32, winner: I32, weight: I32 };
  return kernel(params, (code, { rows, rowTaps, planes, planeStride, count, cells, halos, haloStride, cellOwner, factor, taps, width, owned, winner, weight }) => {
    const { r, tap, top, bottom, rowBytes, first, winnerRow, weightRow } = code.declare({ r: I32, tap: I32, top: I32, bottom: I32, rowBytes: I32, first: I32, winnerRow: I32, weightRow: I32 });
    const fy = code.local(F64);
    code.get(cells).i32(4).op('i32.mul').set(rowBytes);
    code.forStep(r, rows, 1, () => {
      code.get(r).i32(ROW_TAP_BYTES).op('i32.mul').get(rowTaps).op('i32.add').set(tap);
      code.get(tap).load32(0).get(rowBytes).op('i32.mul').get(planes).op('i32.add').set(top);
      code.get(tap).load32(4).get(rowBytes).op('i32.mul').get(planes).op('i32.add').set(bottom);
      code.get(tap).loadF64(8).set(fy);
      code.get(r).get(width).op('i32.mul').set(first);
      code.address(winner, first).set(winnerRow);
      code.address(weight, first).set(weightRow);
      haloRows(code, { top, bottom, planeStride, count, cells, fy, dst: halos, dstStride: haloStride, cellOwner });
      claim(code, { winner: winnerRow, weight: weightRow, halos, haloStride, cellOwner, factor, taps, width, owned, cells });
    });
  });
}

/** The owner kernels' code, for composite/simd.ts to assemble. */
export function ownerKernels(): Record<keyof OwnerKernels, Code> {
  return { strongest: kernel({ masks: I32, count: I32, stride: I32, winner: I32, weight: I32, n: I32 }, strongest), claimRows: claimRows() };
}
