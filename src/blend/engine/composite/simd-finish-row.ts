import { NOBODY, type Step, TAP_BYTES, type Taps } from './simd-shared.js';
import { F64, floatLanes, I32, V128 } from '../wasm/assembler.js';

/**
 * One row of the composite's result in WebAssembly (composite/kernels.ts finishRows): the
 * background, plus the layers' bands, plus the owner's detail. Every float step is scalar f64, or
 * f64x2 lanes each taking the scalar steps, with the JavaScript's operations in its order, so each
 * byte is the one it stored.
 */

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
 *
 * The row: background + bands, plus the owner's weight × (frame − background − owner's base
 * level) where the owner has a layer; `owners` holds per frame (frame row, base row) addresses,
 * base 0 for none. A pixel no frame owns where `still` marks both its bands' taps is the
 * background's. Pixels [2, quadEnd) have the taps of factor 4 (quadEnd 0: none do); `fractions`
 * holds w / 255 (f64) for w < 256.
 */
export const finishRow: Step<'background' | 'bands' | 'still' | 'winner' | 'weight' | 'owners' | 'taps' | 'width' | 'out' | 'quadEnd' | 'fractions'> = (code, { background, bands, still, winner, weight, owners, taps, width, out, quadEnd, fractions }) => {
  const { x, q, tap, left, right, wgt, frame, base, k, end, owner, mixed } = code.declare({ x: I32, q: I32, tap: I32, left: I32, right: I32, wgt: I32, frame: I32, base: I32, k: I32, end: I32, owner: I32, mixed: I32 });
  const effective = code.locals(I32, 4);
  const { f, w, bl, ol } = code.declare({ f: F64, w: F64, bl: F64, ol: F64 });
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

  code.i32(0).set(x);
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
};

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
