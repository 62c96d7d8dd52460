import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { assemble } from '../src/blend/engine/wasm/assembler.js';
import { engineModules } from '../src/blend/engine/wasm/modules.js';

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
});
