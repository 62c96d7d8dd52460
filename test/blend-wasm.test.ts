import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { assemble, F32, fn, I32 } from '../src/blend/engine/wasm/assembler.js';
import { engineModules } from '../src/blend/engine/wasm/modules.js';
import { moduleText } from '../src/blend/engine/wasm/text.js';
import { fill } from '../src/blend/engine/pyramid/simd-arithmetic.js';

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
