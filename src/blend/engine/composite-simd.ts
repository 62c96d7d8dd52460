import { type PyramidKernels, pyramidKernels } from './composite-simd-pyramid.js';
import { Code, F64, floatLanes, I32, instantiate, KernelArena, V128, type WasmMemory } from './wasm.js';

/**
 * The composite's pixel loops (composite-kernels.ts) in WebAssembly, assembled once per thread.
 * Sums of bytes are SIMD integer arithmetic, exact. The floating-point steps are scalar f64 and
 * take the same operations in the same order as the JavaScript they replace (which computes in
 * doubles and rounds to f32 where it stores into a Float32Array), so the results are the same
 * bits: f32 SIMD would round every intermediate and move some pixels by one level.
 * A kernel works on rows copied into its memory (`KernelMemory`); JavaScript picks the rows.
 */

/** The kernels' signatures: addresses are byte offsets into the memory. */
export interface CompositeKernels extends PyramidKernels {
  /** 16-bit column sums of `rows` rows of `length` bytes at base + r·stride (rows ≤ 257) → `dst`. */
  columnSums(base: number, length: number, rows: number, stride: number, dst: number): void;
  /** In place, the 16-bit sums per channel of each run of `factor` pixels (the last cut short) of `channels`-interleaved sums, over the run's first pixel. */
  blockSums(src: number, pixels: number, channels: number, factor: number): void;
  /** 16-bit src[i] += src[i + shift / 2] for i < lanes (shift in bytes). */
  doubleSums(src: number, lanes: number, shift: number): void;
  /** dst[channels · b + c] = 16-bit src at b · stride + 2c (bytes), as i32, for b < count, c < channels. */
  pickSums(src: number, count: number, channels: number, stride: number, dst: number): void;
  /**
   * A row of n cells of a base level (4 floats a cell): f32((frame's sum − background's) · scale)
   * per channel, and f32(owned weight · scale / 255); the last cell's scale is `lastScale`. The
   * frame's and the owned weight's cell sums are 16-bit run sums (runSums) of `factor` pixels.
   */
  baseCells(colours: number, owned: number, factor: number, sums: number, n: number, scale: number, lastScale: number, dst: number): void;
  /** dst = weight where winner = index, else 0 (bytes). */
  ownedBytes(winner: number, weight: number, index: number, dst: number, n: number): void;
  /** The strongest of `count` mask rows (at masks + k·stride) → `weight`, the first frame holding it → `winner` (NOBODY where all are 0). */
  strongest(masks: number, count: number, stride: number, winner: number, weight: number, n: number): void;
  /**
   * Each frame's halo row, 255 × (top + (bottom − top) · fy) as f32 (frame k's grid rows at
   * top/bottom + k·planeStride) → dst + k·dstStride; then the first frame of the highest per cell → `cellOwner`.
   */
  haloRows(top: number, bottom: number, planeStride: number, count: number, cells: number, fy: number, dst: number, dstStride: number, cellOwner: number): void;
  /**
   * Where the owner's halo (the person's, or the cell's strongest), interpolated at the pixel and
   * rounded, beats the weight: that owner and weight. Marks `owned[k]` for every frame k owning a
   * pixel with a weight above zero.
   */
  claim(winner: number, weight: number, halos: number, haloStride: number, cellOwner: number, factor: number, taps: number, width: number, owned: number, cells: number): void;
  /** Per frame, the first and last pixel with a weight above zero (i32; left as they are where none). */
  spans(winner: number, weight: number, width: number, first: number, last: number): void;
  /** dst[3i + k] = f32(top[c·i + k] + (bottom[c·i + k] − top[c·i + k]) · fy) for k < 3, i < n (c = channels). */
  lerpRows(top: number, bottom: number, n: number, channels: number, fy: number, dst: number): void;
  /** a += b over n floats (f32, as a Float32Array's +=). */
  addFloats(a: number, b: number, n: number): void;
  /** dst[i] = 1 where the 3 floats of column i are all 0, else 0 (bytes). */
  stillColumns(bands: number, n: number, dst: number): void;
  /**
   * A row of the result: background + bands, plus the owner's weight × (frame − background −
   * owner's base level) where the owner has a layer; `owners` holds per frame (frame row, base
   * row) addresses, base 0 for none. A pixel no frame owns where `still` marks both its bands' taps is the background's.
   * Pixels [2, quadEnd) have the taps of factor 4 (quadEnd 0: none do); `fractions` holds w / 255 (f64) for w < 256.
   */
  finishRow(background: number, bands: number, still: number, winner: number, weight: number, owners: number, taps: number, width: number, out: number, quadEnd: number, fractions: number): void;
}

/** `winner` value of a pixel that no frame claims. */
const NOBODY = 255;

/** Per pixel, the two columns of a grid it interpolates between and the weight of the right one. */
export interface Taps {
  left: Int32Array;
  right: Int32Array;
  fx: Float32Array;
}

/** Bytes a pixel's taps take in kernel memory (`putTaps`): left, right (i32), fx (f32). */
export const TAP_BYTES = 12;

function columnSums(): Code {
  const code = new Code([I32, I32, I32, I32, I32]);
  const [base, length, rows, stride, dst] = [0, 1, 2, 3, 4];
  const [i, r, p] = [code.local(I32), code.local(I32), code.local(I32)];
  const [lo, hi, x] = [code.local(V128), code.local(V128), code.local(V128)];
  code.forStep(i, length, 16, () => {
    code.i32(0).op('i32x4.splat').set(lo);
    code.i32(0).op('i32x4.splat').set(hi);
    code.address(base, i).set(p);
    code.forStep(r, rows, 1, () => {
      code.get(p).load(0).set(x);
      code.get(lo).get(x).op('i16x8.extend_low_i8x16_u', 'i16x8.add').set(lo);
      code.get(hi).get(x).op('i16x8.extend_high_i8x16_u', 'i16x8.add').set(hi);
      code.get(p).get(stride).op('i32.add').set(p);
    });
    code.get(dst).get(i).get(i).op('i32.add', 'i32.add').set(p);
    code.get(p).get(lo).store(0);
    code.get(p).get(hi).store(16);
  });
  return code;
}

function blockSums(): Code {
  const code = new Code([I32, I32, I32, I32]);
  const [src, pixels, channels, factor] = [0, 1, 2, 3];
  const [x, end, c, s, j, o, step] = code.locals(I32, 7);
  // a pixel's 16-bit sums are 2 · channels bytes apart
  code.get(channels).get(channels).op('i32.add').set(step);
  code.whileBelow(x, pixels, () => {
    code.get(x).get(factor).op('i32.add').set(end);
    code.get(end).get(pixels).get(end).get(pixels).op('i32.lt_u', 'select').set(end);
    code.forStep(c, channels, 1, () => {
      code.i32(0).set(s);
      // j: the address of channel c of pixel x
      code.get(x).get(step).op('i32.mul').get(src).op('i32.add').get(c).get(c).op('i32.add', 'i32.add').set(j);
      code.get(end).get(step).op('i32.mul').get(src).op('i32.add').get(c).get(c).op('i32.add', 'i32.add').set(end);
      code.whileBelow(j, end, () => {
        code.get(s).get(j).load16(0).op('i32.add').set(s);
        code.get(j).get(step).op('i32.add').set(j);
      });
      // back to a pixel count for the next channel
      code.get(x).get(factor).op('i32.add').set(end);
      code.get(end).get(pixels).get(end).get(pixels).op('i32.lt_u', 'select').set(end);
      // over the run's first pixel, read already
      code.get(x).get(step).op('i32.mul').get(src).op('i32.add').get(c).get(c).op('i32.add', 'i32.add').set(o);
      code.get(o).get(s).store16(0);
    });
    code.get(end).set(x);
  });
  return code;
}

function doubleSums(): Code {
  const code = new Code([I32, I32, I32]);
  const [src, lanes, shift] = [0, 1, 2];
  const [i, end, p] = [code.local(I32), code.local(I32), code.local(I32)];
  code.get(lanes).get(lanes).op('i32.add').set(end);
  // forwards in place: lanes i + shift are read before anything writes them
  code.forStep(i, end, 16, () => {
    code.address(src, i).set(p);
    code.get(p).get(p).load(0).get(p).get(shift).op('i32.add').load(0);
    code.op('i16x8.add').store(0);
  });
  return code;
}

function pickSums(): Code {
  const code = new Code([I32, I32, I32, I32, I32]);
  const [src, count, channels, stride, dst] = [0, 1, 2, 3, 4];
  const [b, c, p, o] = code.locals(I32, 4);
  code.get(dst).set(o);
  code.forStep(b, count, 1, () => {
    code.get(b).get(stride).op('i32.mul').get(src).op('i32.add').set(p);
    code.forStep(c, channels, 1, () => {
      code.get(o).get(p).get(c).get(c).op('i32.add', 'i32.add').load16(0).store32(0);
      code.get(o).i32(4).op('i32.add').set(o);
    });
  });
  return code;
}

function baseCells(): Code {
  const code = new Code([I32, I32, I32, I32, I32, F64, F64, I32]);
  const [colours, owned, factor, sums, n, scale, lastScale, dst] = [0, 1, 2, 3, 4, 5, 6, 7];
  const [i, p, o] = [code.local(I32), code.local(I32), code.local(I32)];
  const s = code.local(F64);
  code.get(colours).set(p).get(owned).set(o);
  code.forStep(i, n, 1, () => {
    code.get(lastScale).get(scale).get(i).i32(1).op('i32.add').get(n);
    code.op('i32.eq').op('select').set(s);
    for (let c = 0; c < 3; c++) {
      // (frame's sum − background's) · scale, as the JavaScript took it
      code.get(dst).get(i).i32(16).op('i32.mul', 'i32.add');
      code.get(p).load16(2 * c).op('f64.convert_i32_u');
      code.get(sums).get(i).i32(12).op('i32.mul', 'i32.add').loadF32(4 * c).op('f64.promote_f32');
      code.op('f64.sub').get(s).op('f64.mul');
      code.op('f32.demote_f64').storeF32(4 * c);
    }
    code.get(dst).get(i).i32(16).op('i32.mul', 'i32.add');
    code.get(o).load16(0).op('f64.convert_i32_u').get(s).op('f64.mul').f64(255).op('f64.div');
    code.op('f32.demote_f64').storeF32(12);
    // the next run: factor pixels of 3 and of 1 16-bit sums on
    code.get(p).get(factor).i32(6).op('i32.mul', 'i32.add').set(p);
    code.get(o).get(factor).get(factor).op('i32.add', 'i32.add').set(o);
  });
  return code;
}

function ownedBytes(): Code {
  const code = new Code([I32, I32, I32, I32, I32]);
  const [winner, weight, index, dst, n] = [0, 1, 2, 3, 4];
  const i = code.local(I32);
  const key = code.local(V128);
  code.get(index).op('i8x16.splat').set(key);
  code.forStep(i, n, 16, () => {
    code.address(dst, i);
    code.address(winner, i).load(0).get(key).op('i8x16.eq');
    code.address(weight, i).load(0).op('v128.and').store(0);
  });
  return code;
}

function strongest(): Code {
  const code = new Code([I32, I32, I32, I32, I32, I32]);
  const [masks, count, stride, winner, weight, n] = [0, 1, 2, 3, 4, 5];
  const [i, k, p] = [code.local(I32), code.local(I32), code.local(I32)];
  const [w, who, m, gt] = [code.local(V128), code.local(V128), code.local(V128), code.local(V128)];
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
  return code;
}

function haloRows(): Code {
  const code = new Code([I32, I32, I32, I32, I32, F64, I32, I32, I32]);
  const [top, bottom, planeStride, count, cells, fy, dst, dstStride, cellOwner] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const [k, u, t, b, o, best] = code.locals(I32, 6);
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
  return code;
}

function claim(): Code {
  const code = new Code([I32, I32, I32, I32, I32, I32, I32, I32, I32, I32]);
  const [winner, weight, halos, haloStride, cellOwner, factor, taps, width, owned, cells] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const [x, end, u, cell, person, owner, row, tap, h, w, quiet] = code.locals(I32, 11);
  const a = code.local(F64);
  const halo = (offset: number) => code.get(row).get(tap).load32(offset).i32(4).op('i32.mul', 'i32.add').loadF32().op('f64.promote_f32');
  // the cell owner's halo at cell `index()` is 0
  const still = (index: () => void) => {
    code.get(cell).get(haloStride).op('i32.mul').get(halos).op('i32.add');
    index();
    code.i32(4).op('i32.mul', 'i32.add').loadF32().f32(0).op('f32.eq');
  };
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
  return code;
}

function spans(): Code {
  const code = new Code([I32, I32, I32, I32, I32]);
  const [winner, weight, width, first, last] = [0, 1, 2, 3, 4];
  const [x, k] = [code.local(I32), code.local(I32)];
  code.forStep(x, width, 1, () => {
    code.address(weight, x).load8().when(() => {
      code.address(winner, x).load8().i32(2).op('i32.shl').set(k);
      code.get(x).get(first).get(k).op('i32.add').load32(0).op('i32.lt_s').when(() => code.address(first, k).get(x).store32(0));
      code.address(last, k).get(x).store32(0);
    });
  });
  return code;
}

function lerpRows(): Code {
  const code = new Code([I32, I32, I32, I32, F64, I32]);
  const [top, bottom, n, channels, fy, dst] = [0, 1, 2, 3, 4, 5];
  const [i, step] = [code.local(I32), code.local(I32)];
  const t = code.local(F64);
  code.get(channels).i32(4).op('i32.mul').set(step);
  code.forStep(i, n, 1, () => {
    for (let k = 0; k < 3; k++) {
      code.get(top).loadF32(4 * k).op('f64.promote_f32').set(t);
      code.get(dst).get(t);
      code.get(bottom).loadF32(4 * k).op('f64.promote_f32').get(t);
      code.op('f64.sub').get(fy).op('f64.mul', 'f64.add');
      code.op('f32.demote_f64').storeF32(4 * k);
    }
    code.get(top).get(step).op('i32.add').set(top);
    code.get(bottom).get(step).op('i32.add').set(bottom);
    code.get(dst).i32(12).op('i32.add').set(dst);
  });
  return code;
}

function addFloats(): Code {
  const code = new Code([I32, I32, I32]);
  const [a, b, n] = [0, 1, 2];
  const [i, end, p] = [code.local(I32), code.local(I32), code.local(I32)];
  code.get(n).i32(4).op('i32.mul').set(end);
  code.forStep(i, end, 16, () => {
    code.address(a, i).set(p);
    code.get(p).get(p).load(0);
    code.address(b, i).load(0).op('f32x4.add').store(0);
  });
  return code;
}

function stillColumns(): Code {
  const code = new Code([I32, I32, I32]);
  const [bands, n, dst] = [0, 1, 2];
  const [i, p] = [code.local(I32), code.local(I32)];
  code.get(bands).set(p);
  code.forStep(i, n, 1, () => {
    code.address(dst, i);
    for (let c = 0; c < 3; c++) code.get(p).loadF32(4 * c).f32(0).op('f32.eq');
    code.op('i32.and', 'i32.and').store8(0);
    code.get(p).i32(12).op('i32.add').set(p);
  });
  return code;
}

// Per f64x2 of a quad's 12 interleaved values (value m: pixel m / 3, channel m % 3; vector j holds
// m = 2j, 2j + 1): the pixels of its two lanes, and which channel pair, (0, 1), (2, 0) or (1, 2).
const QUAD_PIXELS = [0, 1, 2, 3, 4, 5].map((j) => [Math.floor((2 * j) / 3), Math.floor((2 * j + 1) / 3)] as const);
const QUAD_PAIR = [0, 1, 2, 0, 1, 2];
// The right tap's weight of the quad's 4 pixels with factor 4: (j + 0.5) / 4.
const QUAD_FX = [0.125, 0.375, 0.625, 0.875];

/**
 * finishRow: pixel by pixel in f64 scalars, and where the taps allow (factor 4: pixels 4c + 2 ..
 * 4c + 5 share the columns c, c + 1) four pixels at once in f64x2, 12 values in 6 vectors, each
 * lane taking the scalar path's steps. A quad whose owners differ goes pixel by pixel.
 */
function finishRow(): Code {
  const code = new Code([I32, I32, I32, I32, I32, I32, I32, I32, I32, I32, I32]);
  const [background, bands, still, winner, weight, owners, taps, width, out, quadEnd, fractions] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const [x, q, tap, left, right, wgt, frame, base, k, end, owner, mixed] = code.locals(I32, 12);
  const effective = code.locals(I32, 4);
  const [f, w, bl, ol] = [code.local(F64), code.local(F64), code.local(F64), code.local(F64)];
  const v = [0, 1, 2].map(() => code.local(F64)) as [number, number, number];
  const float = (addr: () => void, offset: number) => {
    addr();
    return code.loadF32(offset).op('f64.promote_f32');
  };
  const byte = (row: number, c: number) => code.get(row).get(q).op('i32.add').load8(c).op('f64.convert_i32_u');
  // the weight / 255 the JavaScript divides, from the table at `fractions` (an f64 per weight)
  const fraction = (weightLocal: number) => code.get(weightLocal).i32(8).op('i32.mul').get(fractions).op('i32.add');

  // One pixel, x, in f64 scalars.
  const pixel = () => {
    code.get(x).i32(3).op('i32.mul').set(q);
    code.get(x).i32(TAP_BYTES).op('i32.mul').get(taps).op('i32.add').set(tap);
    code.get(tap).load32(0).set(left);
    code.get(tap).load32(4).set(right);
    code.address(weight, x).load8().set(wgt);
    code.get(wgt).op('i32.eqz');
    code.address(still, left).load8();
    code.address(still, right).load8();
    code.op('i32.and', 'i32.and');
    // no owner and no bands: the background, 4 bytes at once (the 4th is the next pixel's, rewritten next)
    code.when(
      () => code.address(out, q).get(background).get(q).op('i32.add').load32(0).store32(0),
      () => {
        code.get(left).i32(12).op('i32.mul').set(left);
        code.get(right).i32(12).op('i32.mul').set(right);
        code.get(tap).loadF32(8).op('f64.promote_f32').set(f);
        for (let c = 0; c < 3; c++) {
          // (background + left) + (right − left) · fx, in the order the JavaScript took
          float(() => code.address(bands, left), 4 * c).set(bl);
          byte(background, c).get(bl).op('f64.add');
          float(() => code.address(bands, right), 4 * c).get(bl);
          code.op('f64.sub').get(f).op('f64.mul', 'f64.add').set(v[c]!);
        }
        code.i32(0).set(base);
        code.get(wgt).when(() => {
          code.address(winner, x).load8().i32(3).op('i32.shl').get(owners).op('i32.add').set(k);
          code.get(k).load32(0).set(frame);
          code.get(k).load32(4).set(base);
        });
        code.get(base).when(() => {
          fraction(wgt).loadF64(0);
          code.set(w);
          for (let c = 0; c < 3; c++) {
            // + w · ((frame − background) − (left + (right − left) · fx)) of the owner's base level
            float(() => code.address(base, left), 4 * c).set(ol);
            code.get(v[c]!).get(w);
            byte(frame, c);
            byte(background, c);
            code.op('f64.sub').get(ol);
            float(() => code.address(base, right), 4 * c).get(ol);
            code.op('f64.sub').get(f).op('f64.mul', 'f64.add');
            code.op('f64.sub').op('f64.mul', 'f64.add').set(v[c]!);
          }
        });
        for (let c = 0; c < 3; c++) {
          // clipped to 0..255, + 0.5, truncated: what a Uint8Array stores of the JavaScript's value
          code.get(out).get(q).op('i32.add');
          code.get(v[c]!).f64(0).op('f64.max').f64(255);
          code.op('f64.min').f64(0.5).op('f64.add', 'i32.trunc_f64_u').store8(c);
        }
      });
  };

  const vec = () => code.local(V128);
  const fx = [0, 1, 2, 3, 4, 5].map(vec);
  const [half, zero, top255, raw, lo, hi, tmp] = [vec(), vec(), vec(), vec(), vec(), vec(), vec()];
  const [bg, val, fr] = [0, 1, 2].map(() => [0, 1, 2, 3, 4, 5].map(vec)) as [number[], number[], number[]];
  const [left3, right3, diff3] = [0, 1, 2].map(() => [vec(), vec(), vec()]) as [number[], number[], number[]];
  const wv = [0, 1, 2, 3].map(vec);
  const splat = (value: number, local: number) => code.f64(value).op('f64x2.splat').set(local);
  // the low f64 of a and of b in one vector
  const pair = (a: number, b: number) => code.get(a).get(b).shuffle([0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]);
  QUAD_PIXELS.forEach(([p0, p1], j) => {
    splat(QUAD_FX[p0]!, lo);
    splat(QUAD_FX[p1]!, hi);
    pair(lo, hi).set(fx[j]!);
  });
  splat(0.5, half);
  splat(0, zero);
  splat(255, top255);
  // the 12 bytes at `addr` → 6 f64x2
  const widen = (addr: () => void, into: number[]) => {
    addr();
    code.load(0).set(raw);
    code.get(raw).op('i16x8.extend_low_i8x16_u').set(lo);
    code.get(raw).op('i16x8.extend_high_i8x16_u').set(hi);
    const quarters = [
      () => code.get(lo).op('i32x4.extend_low_i16x8_u'),
      () => code.get(lo).op('i32x4.extend_high_i16x8_u'),
      () => code.get(hi).op('i32x4.extend_low_i16x8_u'),
    ];
    quarters.forEach((quarter, n) => {
      quarter().set(tmp);
      code.get(tmp).op('f64x2.convert_low_i32x4_u').set(into[2 * n]!);
      code.get(tmp).get(tmp).shuffle(floatLanes([2, 3, 2, 3])).op('f64x2.convert_low_i32x4_u').set(into[2 * n + 1]!);
    });
  };
  // the 3 floats at `addr` → f64x2 of channels (0, 1), (2, 0), (1, 2)
  const columnPairs = (addr: () => void, into: number[]) => {
    addr();
    code.load(0).set(raw);
    [[0, 1], [2, 0], [1, 2]].forEach(([a, b], n) => {
      code.get(raw);
      if (n > 0) code.get(raw).shuffle(floatLanes([a!, b!, a!, b!]));
      code.op('f64x2.promote_low_f32x4').set(into[n]!);
    });
  };
  const bothColumns = (row: number, into: number[][]) => {
    columnPairs(() => code.address(row, left), into[0]!);
    columnPairs(() => code.address(row, left).i32(12).op('i32.add'), into[1]!);
    for (let n = 0; n < 3; n++) code.get(into[1]![n]!).get(into[0]![n]!).op('f64x2.sub').set(into[2]![n]!);
  };
  const quad = (owned: boolean) => {
    code.get(x).i32(3).op('i32.mul').set(q);
    // columns c and c + 1 are 12·c = 3·(x − 2) bytes into a row of them
    code.get(x).i32(2).op('i32.sub').i32(3).op('i32.mul').set(left);
    widen(() => code.address(background, q), bg);
    bothColumns(bands, [left3, right3, diff3]);
    for (let j = 0; j < 6; j++) {
      const c = QUAD_PAIR[j]!;
      code.get(bg[j]!).get(left3[c]!).op('f64x2.add').get(diff3[c]!).get(fx[j]!);
      code.op('f64x2.mul', 'f64x2.add').set(val[j]!);
    }
    if (owned) {
      widen(() => code.address(frame, q), fr);
      bothColumns(base, [left3, right3, diff3]);
      effective.forEach((e, p) => {
        fraction(e);
        code.load64Splat(0);
        code.set(wv[p]!);
      });
      for (let j = 0; j < 6; j++) {
        const c = QUAD_PAIR[j]!;
        const [p0, p1] = QUAD_PIXELS[j]!;
        code.get(val[j]!);
        if (p0 === p1) code.get(wv[p0]!);
        else pair(wv[p0]!, wv[p1]!);
        code.get(fr[j]!).get(bg[j]!).op('f64x2.sub').get(left3[c]!).get(diff3[c]!).get(fx[j]!);
        code.op('f64x2.mul', 'f64x2.add', 'f64x2.sub', 'f64x2.mul', 'f64x2.add').set(val[j]!);
      }
    }
    // clipped to 0..255, + 0.5, truncated; narrowed to the 12 bytes (and 4 the next pixels rewrite)
    const lanes = (j: number) => {
      code.get(val[j]!).get(zero).op('f64x2.max').get(top255);
      code.op('f64x2.min').get(half);
      code.op('f64x2.add', 'i32x4.trunc_sat_f64x2_u_zero');
    };
    [lo, hi, tmp].forEach((local, n) => {
      lanes(2 * n);
      lanes(2 * n + 1);
      code.shuffle(floatLanes([0, 1, 4, 5])).set(local);
    });
    code.address(out, q).get(lo).get(hi).op('i16x8.narrow_i32x4_u').get(tmp).get(tmp).op('i16x8.narrow_i32x4_u', 'i8x16.narrow_i16x8_u').store(0);
  };

  // Which frame owns the quad's pixels that have a layer: `owner` (NOBODY: none), `mixed` when two
  // differ; each pixel's weight in `effective`, 0 where its owner has no layer (w = 0 adds 0).
  const classify = () => {
    code.i32(NOBODY).set(owner).i32(0).set(mixed);
    effective.forEach((e, p) => {
      code.i32(0).set(e);
      code.address(weight, x).load8(p).set(wgt).get(wgt).when(() => {
        code.address(winner, x).load8(p).set(k).get(k).i32(3).op('i32.shl').get(owners).op('i32.add').load32(4);
        code.when(() => {
          code.get(owner).i32(NOBODY).op('i32.eq').when(() => code.get(k).set(owner));
          code.get(mixed).get(owner).get(k).op('i32.ne', 'i32.or').set(mixed);
          code.get(wgt).set(e);
        });
      });
    });
  };

  code.whileBelow(x, width, () => {
    code.get(x).i32(1).op('i32.add').set(end);
    // a quad: x = 4c + 2 ≥ 2, its 4 pixels before quadEnd
    code.get(x).i32(2).op('i32.sub').i32(3).op('i32.and', 'i32.eqz');
    code.get(x).i32(4).op('i32.add').get(quadEnd).op('i32.le_u', 'i32.and');
    code.get(x).i32(2).op('i32.ge_u').op('i32.and');
    code.when(() => {
      code.get(x).i32(4).op('i32.add').set(end);
      code.address(weight, x).load32(0)
        .op('i32.eqz')
        .when(
          () => {
            // no owner: the background where both columns are still, else background + bands
            code.get(x).i32(2).op('i32.sub').i32(2);
            code.op('i32.shr_u').get(still).op('i32.add').set(k);
            code.get(k).load8(0);
            code.get(k).load8(1);
            code.op('i32.and').when(
              () => code.address(out, x).get(x).get(x).op('i32.add', 'i32.add').get(background).get(x).get(x).op('i32.add').get(x).op('i32.add', 'i32.add').load(0).store(0),
              () => quad(false),
            );
            code.get(end).set(x);
          },
          () => {
            classify();
            code.get(mixed).op('i32.eqz').when(() => {
              code.get(owner).i32(NOBODY).op('i32.eq').when(
                () => quad(false),
                () => {
                  code.get(owner).i32(3).op('i32.shl').get(owners).op('i32.add').set(k);
                  code.get(k).load32(0).set(frame);
                  code.get(k).load32(4).set(base);
                  quad(true);
                },
              );
              code.get(end).set(x);
            });
          },
        );
    });
    code.whileBelow(x, end, () => {
      pixel();
      code.get(x).i32(1).op('i32.add').set(x);
    });
  });
  return code;
}

let kernels: { run: CompositeKernels; memory: WasmMemory } | null = null;

function compiled(): { run: CompositeKernels; memory: WasmMemory } {
  if (!kernels) {
    const functions = {
      columnSums: columnSums(),
      blockSums: blockSums(),
      doubleSums: doubleSums(),
      pickSums: pickSums(),
      baseCells: baseCells(),
      ...pyramidKernels(),
      ownedBytes: ownedBytes(),
      strongest: strongest(),
      haloRows: haloRows(),
      claim: claim(),
      spans: spans(),
      lerpRows: lerpRows(),
      addFloats: addFloats(),
      stillColumns: stillColumns(),
      finishRow: finishRow(),
    };
    const { exports, memory } = instantiate(functions, 1);
    kernels = { run: exports as unknown as CompositeKernels, memory };
  }
  return kernels;
}

/** The kernels of this thread and buffers laid out in their memory for one task (KernelArena). */
export class KernelMemory extends KernelArena {
  readonly run: CompositeKernels;

  constructor() {
    const { run, memory } = compiled();
    super(memory);
    this.run = run;
  }

  /** Writes a grid's column taps for `width` pixels at `at` (TAP_BYTES a pixel). */
  putTaps(at: number, taps: Taps, width: number): void {
    const { i32, f32 } = this;
    for (let x = 0, e = at >> 2; x < width; x++, e += 3) {
      i32[e] = taps.left[x]!;
      i32[e + 1] = taps.right[x]!;
      f32[e + 2] = taps.fx[x]!;
    }
  }
}

/**
 * The end of the pixels from 2 on whose taps are those of a quad (factor 4: pixel 4c + 2 + j reads
 * columns c and c + 1 with weight QUAD_FX[j]), which finishRow takes four at a time; 0 for none.
 */
export function quadEnd(taps: Taps, width: number, factor: number): number {
  if (factor !== 4) return 0;
  let x = 2;
  while (x < width && taps.left[x] === (x - 2) >> 2 && taps.right[x] === taps.left[x]! + 1 && taps.fx[x] === QUAD_FX[(x - 2) & 3]) x++;
  return x;
}

let shared: KernelMemory | null = null;

/** The one KernelMemory of this thread, its buffers laid out afresh by each task. */
export function kernelMemory(): KernelMemory {
  shared ??= new KernelMemory();
  return shared.reset();
}
