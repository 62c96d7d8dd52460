import { assemble, type ModuleSource, PLAIN, SIMD } from './assembler.js';

/**
 * A module of wasm/assembler.ts in the WebAssembly text format, for reading a kernel while
 * debugging it (scripts/wasm-print.ts). It reads the assembled bytes back, so it shows what the
 * engine runs, and knows exactly the subset the assembler emits: a byte it does not know is an
 * error, not a guess. Parameters and locals that were declared by name (`fn`, `Code.declare`)
 * print as `$name`; the others by index, their declaration followed by `;; index`.
 */

const VALUE_TYPES: Record<number, string> = { 0x7f: 'i32', 0x7d: 'f32', 0x7c: 'f64', 0x7b: 'v128' };

// Instructions with a memory argument (alignment, offset): core opcodes, and SIMD ones after 0xfd.
const MEMORY: Record<number, string> = {
  0x28: 'i32.load',
  0x2a: 'f32.load',
  0x2b: 'f64.load',
  0x2d: 'i32.load8_u',
  0x2f: 'i32.load16_u',
  0x36: 'i32.store',
  0x38: 'f32.store',
  0x39: 'f64.store',
  0x3a: 'i32.store8',
  0x3b: 'i32.store16',
};
const SIMD_MEMORY: Record<number, string> = { 0x00: 'v128.load', 0x0a: 'v128.load64_splat', 0x0b: 'v128.store' };

const invert = (table: Record<string, number>): Map<number, string> => new Map(Object.entries(table).map(([n, op]) => [op, n]));
const PLAIN_NAMES = invert(PLAIN);
const SIMD_NAMES = invert(SIMD);

/** Reads the binary format from `at`. */
class Reader {
  constructor(
    private readonly bytes: Uint8Array,
    public at = 0,
  ) {}

  byte(): number {
    if (this.at >= this.bytes.length) throw new Error('the module ends in the middle of an item');
    return this.bytes[this.at++]!;
  }

  unsigned(): number {
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      const b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
    }
  }

  signed(): number {
    let result = 0;
    let shift = 0;
    let b: number;
    do {
      b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return b & 0x40 ? result - 2 ** shift : result;
  }

  take(n: number): Uint8Array {
    this.at += n;
    if (this.at > this.bytes.length) throw new Error('the module ends in the middle of an item');
    return this.bytes.subarray(this.at - n, this.at);
  }

  name(): string {
    return Buffer.from(this.take(this.unsigned())).toString('utf8');
  }

  valueType(): string {
    const t = this.byte();
    const name = VALUE_TYPES[t];
    if (!name) throw new Error(`unknown value type 0x${t.toString(16)}`);
    return name;
  }
}

/** The text format of the module `source` assembles to. */
export function moduleText(source: ModuleSource): string {
  const bytes = assemble(source);
  const codes = Object.values(source.functions);
  const r = new Reader(bytes, 8);
  const types: Array<{ params: string[] }> = [];
  const exports: string[] = [];
  const lines: string[] = ['(module'];
  while (r.at < bytes.length) {
    const id = r.byte();
    const end = r.unsigned() + r.at;
    if (id === 1) {
      for (let n = r.unsigned(); n > 0; n--) {
        if (r.byte() !== 0x60) throw new Error('a type that is not a function type');
        const params = Array.from({ length: r.unsigned() }, () => r.valueType());
        if (r.unsigned() !== 0) throw new Error('a function type with results');
        types.push({ params });
      }
    } else if (id === 7) {
      for (let n = r.unsigned(); n > 0; n--) {
        const name = r.name();
        const kind = r.byte();
        const index = r.unsigned();
        if (kind === 0) exports[index] = name;
      }
    } else if (id === 10) {
      const count = r.unsigned();
      for (let f = 0; f < count; f++) lines.push(...functionText(r, exports[f] ?? `${f}`, types[f]!.params, codes[f]?.names ?? new Map()));
    } else if (id === 5) {
      r.unsigned();
      if (r.byte() !== 0x00) throw new Error('a memory with a maximum');
      lines.push(`  (memory (export "memory") ${r.unsigned()})`);
    }
    r.at = end;
  }
  lines.push(')');
  return lines.join('\n');
}

/** One function of the code section, as `(func $name (export "name") (param ...) (local ...) body)`. */
function functionText(r: Reader, name: string, params: string[], names: Map<number, string>): string[] {
  const end = r.unsigned() + r.at;
  const ref = (index: number) => (names.has(index) ? `$${names.get(index)}` : `${index}`);
  // an unnamed one is declared without an identifier, its index in a comment
  const declare = (kind: string, index: number, type: string) => (names.has(index) ? `(${kind} $${names.get(index)} ${type})` : `(${kind} ${type}) ;; ${index}`);
  const declared = params.map((type, i) => declare('param', i, type));
  let index = params.length;
  for (let runs = r.unsigned(); runs > 0; runs--) {
    const count = r.unsigned();
    const type = r.valueType();
    for (let k = 0; k < count; k++) declared.push(declare('local', index++, type));
  }
  const lines = [`  (func $${name} (export "${name}")`, ...declared.map((d) => `    ${d}`)];
  let depth = 2;
  const line = (text: string) => lines.push(`${'  '.repeat(depth)}${text}`);
  while (r.at < end) {
    const op = r.byte();
    if (op === 0x0b) {
      if (r.at === end) break;
      depth--;
      line('end');
    } else if (op === 0x02 || op === 0x03 || op === 0x04) {
      if (r.byte() !== 0x40) throw new Error('a block with a result');
      line(op === 0x02 ? 'block' : op === 0x03 ? 'loop' : 'if');
      depth++;
    } else if (op === 0x05) {
      depth--;
      line('else');
      depth++;
    } else if (op === 0x0c || op === 0x0d) line(`${op === 0x0c ? 'br' : 'br_if'} ${r.unsigned()}`);
    else if (op === 0x20 || op === 0x21) line(`${op === 0x20 ? 'local.get' : 'local.set'} ${ref(r.unsigned())}`);
    else if (op === 0x41) line(`i32.const ${r.signed()}`);
    else if (op === 0x43) line(`f32.const ${new Float32Array(Uint8Array.from(r.take(4)).buffer)[0]}`);
    else if (op === 0x44) line(`f64.const ${new Float64Array(Uint8Array.from(r.take(8)).buffer)[0]}`);
    else if (MEMORY[op]) line(memoryText(MEMORY[op], r));
    else if (op === 0xfd) {
      const simd = r.unsigned();
      if (SIMD_MEMORY[simd]) line(memoryText(SIMD_MEMORY[simd], r));
      else if (simd === 0x0d) line(`i8x16.shuffle ${[...r.take(16)].join(' ')}`);
      else if (simd === 0x1b) line(`i32x4.extract_lane ${r.byte()}`);
      else if (SIMD_NAMES.has(simd)) line(SIMD_NAMES.get(simd)!);
      else throw new Error(`${name}: unknown SIMD opcode 0x${simd.toString(16)}`);
    } else if (PLAIN_NAMES.has(op)) line(PLAIN_NAMES.get(op)!);
    else throw new Error(`${name}: unknown opcode 0x${op.toString(16)}`);
  }
  lines.push('  )');
  return lines;
}

/** A memory instruction with its offset, and its alignment where it is not the natural one. */
function memoryText(name: string, r: Reader): string {
  const align = 2 ** r.unsigned();
  const offset = r.unsigned();
  const natural = /load8|store8/.test(name) ? 1 : /16/.test(name) ? 2 : /64_splat|f64/.test(name) ? 8 : /v128/.test(name) ? 16 : 4;
  return `${name}${offset ? ` offset=${offset}` : ''}${align !== natural ? ` align=${align}` : ''}`;
}
