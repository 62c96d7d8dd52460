import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { assemble, F32, fn, I32 } from '../src/blend/engine/wasm/assembler.js';
import { engineModules } from '../src/blend/engine/wasm/modules.js';
import { moduleText } from '../src/blend/engine/wasm/text.js';
import { fill } from '../src/blend/engine/pyramid/simd-arithmetic.js';
import { finishMeanPixels, FOLD_CHUNK, foldMeanPixels } from '../src/blend/engine/point/fold-simd.js';
import { random } from './blend-scenes.js';

/**
 * The engine's WebAssembly modules as modules: each one valid, and its bytes those recorded in
 * test/fixtures/wasm/module-sha256.json. The fixture was recorded from the kernels as they were
 * written with positional parameters (local.get 0, 1, 2...), before they took named ones: a
 * rewrite of a kernel's source that is meant to change nothing must leave its bytes as they were.
 * A kernel whose algorithm changes records its new hash on purpose, in the same commit.
 */

const { WebAssembly: wasm } = globalThis as unknown as { WebAssembly: { validate(bytes: Uint8Array): boolean } };
const recorded = JSON.parse(fs.readFileSync(new URL('./fixtures/wasm/module-sha256.json', import.meta.url), 'utf8')) as Record<string, string>;
const modules = engineModules();

describe('engine WebAssembly modules', () => {
  it('every module the engine builds is valid WebAssembly', () => {
    for (const [name, source] of modules) assert.ok(wasm.validate(assemble(source())), name);
  });

  it('every module is byte for byte the one recorded before kernels had named parameters', () => {
    assert.deepEqual([...modules.keys()].sort(), Object.keys(recorded).sort());
    for (const [name, source] of modules) {
      assert.equal(createHash('sha256').update(assemble(source())).digest('hex'), recorded[name], name);
    }
  });

  it('prints every function of every module in the text format (scripts/wasm-print.ts)', () => {
    for (const [name, source] of modules) {
      const { functions } = source();
      const text = moduleText({ functions, pages: 1 });
      for (const f of Object.keys(functions)) assert.ok(text.includes(`(func $${f} (export "${f}")`), `${name}: ${f}`);
    }
  });

  it('prints a kernel as the text format says, names and all', () => {
    // pyramid/simd-arithmetic.ts `fill`: dst[i] = value for n floats, 4 a step
    const expected = `(module
  (memory (export "memory") 1)
  (func $fill (export "fill")
    (param $dst i32)
    (param $n i32)
    (param $value f32)
    (local $i i32)
    (local $end i32)
    (local $v v128)
    local.get $value
    f32x4.splat
    local.set $v
    local.get $n
    i32.const 4
    i32.mul
    local.set $end
    i32.const 0
    local.set $i
    block
      loop
        local.get $i
        local.get $end
        i32.ge_u
        br_if 1
        local.get $dst
        local.get $i
        i32.add
        local.get $v
        v128.store
        local.get $i
        i32.const 16
        i32.add
        local.set $i
        br 0
      end
    end
  )
)`;
    assert.equal(moduleText({ functions: { fill: fill() }, pages: 1 }), expected);
  });

  it('names parameters before locals, in the order given, and refuses a name used for both', () => {
    const code = fn({ params: { src: I32, scale: F32 }, locals: { i: I32 } }, (c, { src, scale, i }) => {
      assert.deepEqual([src, scale, i], [0, 1, 2]);
      c.get(src).set(i);
    });
    assert.deepEqual(code.params, [I32, F32]);
    assert.throws(() => fn({ params: { n: I32 }, locals: { n: I32 } }, () => {}), /n is both a parameter and a local/);
  });
});

/**
 * The streamed mean's fold (point/fold.ts) in WebAssembly SIMD against its definition in
 * JavaScript (what point/fold.ts ran before the kernels): the sums Σ m·v, the weights Σ m and the
 * result ⌊(2·Σ m·v + Σ m) / (2·Σ m)⌋, value for value, over ranges that start and end off the
 * kernels' 16-pixel steps and span several chunks.
 */
describe('streamed mean fold kernels (point/fold-simd.ts)', () => {
  /** Pixels [p0, p1): sums (= when `first`) += m·v, weights += m; m = mask[p − maskBase], 255 without a mask. */
  const foldJs = (sums: Uint32Array, weights: Uint32Array | null, frame: Uint8Array, mask: Uint8Array | null, maskBase: number, p0: number, p1: number, first = false) => {
    for (let p = p0; p < p1; p++) {
      const m = mask ? mask[p - maskBase]! : 255;
      if (weights) weights[p]! += m;
      for (let c = 0; c < 3; c++) sums[3 * p + c] = (first ? 0 : sums[3 * p + c]!) + m * frame[3 * p + c]!;
    }
  };
  const finishJs = (sums: Uint32Array, weights: Uint32Array | null, every: number, out: Uint8Array, p0: number, p1: number) => {
    for (let p = p0; p < p1; p++) {
      const w = weights ? weights[p]! : every;
      for (let c = 0; c < 3; c++) out[3 * p + c] = Math.floor((2 * sums[3 * p + c]! + w) / (2 * w));
    }
  };
  const pixels = 2 * FOLD_CHUNK + 45;
  const draw = random(19);
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(draw() * 256));
  const frames = Array.from({ length: 4 }, () => bytes(3 * pixels));

  it('folds frames, with and without masks and weights, to the sums and weights of the JavaScript, and finishes to its bytes', () => {
    const [simd, js] = [0, 1].map(() => ({ sums: new Uint32Array(3 * pixels), weights: null as Uint32Array | null }));
    const both = (step: (acc: { sums: Uint32Array; weights: Uint32Array | null }, kernel: boolean) => void, what: string) => {
      step(simd!, true);
      step(js!, false);
      assert.deepEqual(simd!.sums, js!.sums, `${what}: sums`);
      assert.deepEqual(simd!.weights, js!.weights, `${what}: weights`);
    };
    const fold = (kernel: boolean) => (kernel ? foldMeanPixels : foldJs);
    both((a, k) => fold(k)(a.sums, a.weights, frames[0]!, null, 0, 0, pixels, true), 'frame 0');
    both((a, k) => fold(k)(a.sums, a.weights, frames[1]!, null, 0, 0, pixels), 'frame 1, no weights yet');
    // a mask of 0, 255 and values between, read from a row of its own (maskBase) over a ragged range
    const mask = Uint8Array.from(bytes(pixels), (v, p) => (p % 5 === 0 ? 0 : p % 7 === 0 ? 255 : v));
    both((a) => (a.weights = new Uint32Array(pixels).fill(2 * 255)), 'weights start');
    both((a, k) => fold(k)(a.sums, a.weights, frames[2]!, mask.subarray(3), 7, 7, pixels - 9), 'frame 2, masked');
    both((a, k) => fold(k)(a.sums, a.weights, frames[2]!, null, 0, 0, 7), 'frame 2, its first pixels');
    both((a, k) => fold(k)(a.sums, a.weights, frames[2]!, null, 0, pixels - 9, pixels), 'frame 2, its last pixels');
    both((a, k) => fold(k)(a.sums, a.weights, frames[3]!, null, 0, 0, pixels), 'frame 3, with weights');
    for (const weights of [simd!.weights, null]) {
      const [a, b] = [new Uint8Array(3 * pixels), new Uint8Array(3 * pixels)];
      for (const [p0, p1] of [[0, 13], [13, FOLD_CHUNK + 1], [FOLD_CHUNK + 1, pixels]]) {
        finishMeanPixels(simd!.sums, weights, 255 * 4, a, p0!, p1!);
        finishJs(js!.sums, weights, 255 * 4, b, p0!, p1!);
      }
      assert.deepEqual(a, b, weights ? 'finished with weights' : 'finished, every frame counted everywhere');
    }
  });

  it('finishes sums of 5000 frames and every quotient near a half to the bytes of the JavaScript', () => {
    const weights = Uint32Array.from({ length: pixels }, (_, p) => (p % 3 === 0 ? 255 : 255 + Math.floor(draw() * 255 * 4999)));
    // Σ m·v ≤ 255 · Σ m; every third value lands on a half, (2k + 1)·w / 2, when w is even
    const sums = Uint32Array.from({ length: 3 * pixels }, (_, q) => {
      const w = weights[Math.floor(q / 3)]!;
      return q % 3 === 0 && w % 2 === 0 ? (Math.floor(draw() * 255) * w + w / 2) : Math.floor(draw() * 255 * w);
    });
    const [a, b] = [new Uint8Array(3 * pixels), new Uint8Array(3 * pixels)];
    finishMeanPixels(sums, weights, 0, a, 0, pixels);
    finishJs(sums, weights, 0, b, 0, pixels);
    assert.deepEqual(a, b);
  });
});
