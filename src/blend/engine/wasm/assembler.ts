/**
 * A minimal WebAssembly assembler: enough of the binary format to build, at run time, the small
 * SIMD kernels the engine generates (point/stack-simd.ts, image/blocks-simd.ts, pyramid/simd.ts, composite/simd.ts...).
 * Nothing is compiled ahead of time, so no toolchain is needed and nothing is downloaded.
 * Instruction names are those of the text format; opcodes from the core and SIMD specifications.
 * A kernel is written with named parameters and locals (`fn`); wasm/modules.ts lists every module
 * the engine builds, and `npm run wasm:print -- <kernel>` prints one in the text format (wasm/text.ts).
 */

// Value types; `as const` keeps them literal in objects of named parameters (`Signature`).
export const I32 = 0x7f as const;
export const F32 = 0x7d as const;
export const V128 = 0x7b as const;
export const F64 = 0x7c as const;
export type ValueType = typeof I32 | typeof F32 | typeof F64 | typeof V128;

/** Instructions without immediates, one byte. */
export const PLAIN = {
  'i32.add': 0x6a,
  'i32.sub': 0x6b,
  'i32.mul': 0x6c,
  'i32.ge_u': 0x4f,
  'i32.lt_u': 0x49,
  select: 0x1b,
  'f64.add': 0xa0,
  'f64.mul': 0xa2,
  'f64.div': 0xa3,
  'i32.trunc_f64_s': 0xaa,
  'i32.trunc_f64_u': 0xab,
  'f64.convert_i32_u': 0xb8,
  'i32.eqz': 0x45,
  'i32.eq': 0x46,
  'i32.ne': 0x47,
  'i32.lt_s': 0x48,
  'i32.gt_u': 0x4b,
  'i32.le_s': 0x4c,
  'i32.le_u': 0x4d,
  'i32.ge_s': 0x4e,
  'f32.eq': 0x5b,
  'f32.gt': 0x5e,
  'f64.ne': 0x62,
  'i32.and': 0x71,
  'i32.or': 0x72,
  'i32.shl': 0x74,
  'i32.shr_s': 0x75,
  'i32.shr_u': 0x76,
  'f64.sub': 0xa1,
  'f64.min': 0xa4,
  'f64.max': 0xa5,
  'f32.demote_f64': 0xb6,
  'f64.promote_f32': 0xbb,
  'f64.abs': 0x99,
  'f64.convert_i32_s': 0xb7,
  'f32.convert_i32_u': 0xb3,
  'f64.gt': 0x64,
  'f64.ge': 0x66,
  'f32.ge': 0x60,
  'f32.ne': 0x5c,
  'f32.min': 0x96,
  'i32.gt_s': 0x4a,
} as const;

/** SIMD instructions without immediates: the 0xfd prefix, then this LEB128 opcode. */
export const SIMD = {
  'i8x16.narrow_i16x8_u': 0x66,
  'i8x16.min_u': 0x77,
  'i8x16.max_u': 0x79,
  'i8x16.avgr_u': 0x7b,
  'i16x8.narrow_i32x4_u': 0x86,
  'i16x8.extend_low_i8x16_u': 0x89,
  'i16x8.extend_high_i8x16_u': 0x8a,
  'i16x8.add': 0x8e,
  'i32x4.extend_low_i16x8_u': 0xa9,
  'i32x4.extend_high_i16x8_u': 0xaa,
  'i32x4.add': 0xae,
  'f32x4.add': 0xe4,
  'f32x4.div': 0xe7,
  'i32x4.trunc_sat_f32x4_u': 0xf9,
  'f32x4.convert_i32x4_u': 0xfb,
  'i32x4.splat': 0x11,
  'f32x4.splat': 0x13,
  'i8x16.splat': 0x0f,
  'i8x16.eq': 0x23,
  'v128.and': 0x4e,
  'f32x4.floor': 0x68,
  'f32x4.nearest': 0x6a,
  'i16x8.extend_low_i8x16_s': 0x87,
  'i16x8.extend_high_i8x16_s': 0x88,
  'i16x8.shl': 0x8b,
  'i16x8.mul': 0x95,
  'i32x4.extend_low_i16x8_s': 0xa7,
  'i32x4.extend_high_i16x8_s': 0xa8,
  'i32x4.shl': 0xab,
  'f32x4.abs': 0xe0,
  'f32x4.sqrt': 0xe3,
  'f32x4.sub': 0xe5,
  'f32x4.mul': 0xe6,
  'f32x4.max': 0xe9,
  'i32x4.trunc_sat_f32x4_s': 0xf8,
  'i8x16.narrow_i16x8_s': 0x65,
  'i16x8.narrow_i32x4_s': 0x85,
  'i32x4.gt_s': 0x3b,
  'i32x4.abs': 0xa0,
  'i32x4.sub': 0xb1,
  'i32x4.mul': 0xb5,
  'v128.bitselect': 0x52,
  'i8x16.gt_u': 0x28,
  'f64x2.splat': 0x14,
  'f32x4.demote_f64x2_zero': 0x5e,
  'f64x2.promote_low_f32x4': 0x5f,
  'f64x2.add': 0xf0,
  'f64x2.sub': 0xf1,
  'f64x2.mul': 0xf2,
  'f64x2.min': 0xf4,
  'f64x2.max': 0xf5,
  'i32x4.trunc_sat_f64x2_u_zero': 0xfd,
  'f64x2.convert_low_i32x4_u': 0xff,
  'f32x4.convert_i32x4_s': 0xfa,
  'i32x4.dot_i16x8_s': 0xba,
  'i32x4.shr_u': 0xad,
  'f64x2.div': 0xf3,
  'i32x4.trunc_sat_f64x2_s_zero': 0xfc,
  'i32x4.lt_s': 0x39,
  'i32x4.ge_u': 0x40,
  'i32x4.shr_s': 0xac,
  'v128.andnot': 0x4f,
  'v128.or': 0x50,
  'i16x8.splat': 0x10,
  'i32x4.extmul_low_i16x8_s': 0xbc,
  'i32x4.extmul_high_i16x8_s': 0xbd,
  'i32x4.extmul_low_i16x8_u': 0xbe,
  'i32x4.extmul_high_i16x8_u': 0xbf,
  'i32x4.eq': 0x37,
  'i32x4.all_true': 0xa3,
} as const;

export type Op = keyof typeof PLAIN | keyof typeof SIMD;

function unsigned(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

function signed(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) return [...out, byte];
    out.push(byte | 0x80);
  }
}

const vector = (items: number[][]): number[] => [...unsigned(items.length), ...items.flat()];
const name = (s: string): number[] => vector([...Buffer.from(s, 'utf8')].map((b) => [b]));

/** Lanes of a byte shuffle (`Code.shuffle`) that picks 4-byte lane `lanes[j]` (0..7 over both vectors) into lane j. */
export const floatLanes = (lanes: number[]): number[] => lanes.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]);

/** Local indices, as many as were asked for (destructured without checks up to 12). */
export type Locals = number[] & Record<0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11, number>;

/** One function's body, written instruction by instruction (each method returns `this`). */
export class Code {
  readonly bytes: number[] = [];
  private readonly localTypes: ValueType[] = [];
  /** The names of parameters and locals declared with one (`fn`, `declare`), by index: for the text format (wasm/text.ts). */
  readonly names = new Map<number, string>();

  constructor(readonly params: ValueType[]) {}

  /** Declares a local of `type` and returns its index. */
  local(type: ValueType): number {
    this.localTypes.push(type);
    return this.params.length + this.localTypes.length - 1;
  }

  /** New locals, one per name, of the types given and in their order: their indices by name. */
  declare<L extends string>(locals: Record<L, ValueType>): Record<L, number> {
    return Object.fromEntries(
      Object.entries<ValueType>(locals).map(([n, type]) => {
        const index = this.local(type);
        this.names.set(index, n);
        return [n, index];
      }),
    ) as Record<L, number>;
  }

  /** `count` new locals of `type`, their indices. */
  locals(type: ValueType, count: number): Locals {
    return Array.from({ length: count }, () => this.local(type)) as Locals;
  }

  /** A new v128 local holding `value` in each of its four f32 lanes (set where the code is now). */
  floats(value: number): number {
    const local = this.local(V128);
    this.f32(value).op('f32x4.splat').set(local);
    return local;
  }

  /** A new v128 local holding `value` in both of its f64 lanes (set where the code is now). */
  doubles(value: number): number {
    const local = this.local(V128);
    this.f64(value).op('f64x2.splat').set(local);
    return local;
  }

  /** Pushes local `base` + local `offset` (an address). */
  address(base: number, offset: number): this {
    return this.get(base).get(offset).op('i32.add');
  }

  op(...names: Op[]): this {
    for (const n of names) {
      if (n in PLAIN) this.bytes.push(PLAIN[n as keyof typeof PLAIN]);
      else this.bytes.push(0xfd, ...unsigned(SIMD[n as keyof typeof SIMD]));
    }
    return this;
  }

  get(index: number): this {
    this.bytes.push(0x20, ...unsigned(index));
    return this;
  }

  set(index: number): this {
    this.bytes.push(0x21, ...unsigned(index));
    return this;
  }

  i32(value: number): this {
    this.bytes.push(0x41, ...signed(value | 0));
    return this;
  }

  f32(value: number): this {
    this.bytes.push(0x43, ...new Uint8Array(Float32Array.of(value).buffer));
    return this;
  }

  f64(value: number): this {
    this.bytes.push(0x44, ...new Uint8Array(Float64Array.of(value).buffer));
    return this;
  }

  /** i32.load at the address on the stack plus `offset`. */
  load32(offset: number): this {
    this.bytes.push(0x28, 2, ...unsigned(offset));
    return this;
  }

  /** i32.store8 (the low byte) at the address under the value on the stack, plus `offset`. */
  store8(offset: number): this {
    this.bytes.push(0x3a, 0, ...unsigned(offset));
    return this;
  }

  /** v128.load at the address on the stack plus `offset` (16-byte aligned hint). */
  load(offset: number): this {
    this.bytes.push(0xfd, 0x00, 4, ...unsigned(offset));
    return this;
  }

  store(offset: number): this {
    this.bytes.push(0xfd, 0x0b, 4, ...unsigned(offset));
    return this;
  }

  /** i8x16.shuffle of the two vectors on the stack: lane i of the result is lane `lanes[i]` of their 32 bytes. */
  shuffle(lanes: number[]): this {
    this.bytes.push(0xfd, 0x0d, ...lanes);
    return this;
  }

  /** i32x4.extract_lane: lane `lane` (0–3) of the vector on the stack, as an i32. */
  extractLane(lane: number): this {
    this.bytes.push(0xfd, 0x1b, lane);
    return this;
  }

  /** i32.load16_u at the address on the stack plus `offset`. */
  load16(offset: number): this {
    this.bytes.push(0x2f, 1, ...unsigned(offset));
    return this;
  }

  /** i32.load8_u at the address on the stack plus `offset`. */
  load8(offset = 0): this {
    this.bytes.push(0x2d, 0, ...unsigned(offset));
    return this;
  }

  /** i32.store16 (the low half) at the address under the value on the stack, plus `offset`. */
  store16(offset = 0): this {
    this.bytes.push(0x3b, 1, ...unsigned(offset));
    return this;
  }

  /** f32.load at the address on the stack plus `offset`. */
  loadF32(offset = 0): this {
    this.bytes.push(0x2a, 2, ...unsigned(offset));
    return this;
  }

  /** f32.store at the address under the value on the stack, plus `offset`. */
  storeF32(offset = 0): this {
    this.bytes.push(0x38, 2, ...unsigned(offset));
    return this;
  }

  /** f64.load at the address on the stack plus `offset`. */
  loadF64(offset = 0): this {
    this.bytes.push(0x2b, 3, ...unsigned(offset));
    return this;
  }

  /** f64.store at the address under the value on the stack, plus `offset`. */
  storeF64(offset = 0): this {
    this.bytes.push(0x39, 3, ...unsigned(offset));
    return this;
  }

  /** v128.load64_splat: the f64 (8 bytes) at the address on the stack plus `offset`, in both lanes. */
  load64Splat(offset = 0): this {
    this.bytes.push(0xfd, 0x0a, 3, ...unsigned(offset));
    return this;
  }

  /** `if (the i32 on the stack) then()`, `else otherwise()` when given. */
  when(then: () => void, otherwise?: () => void): this {
    this.bytes.push(0x04, 0x40);
    then();
    if (otherwise) {
      this.bytes.push(0x05);
      otherwise();
    }
    this.bytes.push(0x0b);
    return this;
  }

  /** i32.store at the address under the value on the stack, plus `offset`. */
  store32(offset: number): this {
    this.bytes.push(0x36, 2, ...unsigned(offset));
    return this;
  }

  /** `while (i < end) body()`, `i` and `end` i32 locals: a block around a loop whose head leaves when i ≥ end. */
  whileBelow(i: number, end: number, body: () => void): this {
    this.bytes.push(0x02, 0x40, 0x03, 0x40); // block, loop (no result)
    this.get(i).get(end).op('i32.ge_u');
    this.bytes.push(0x0d, 1); // br_if to the block's end
    body();
    this.bytes.push(0x0c, 0, 0x0b, 0x0b); // br to the loop's head; end loop; end block
    return this;
  }

  /** `for (i = 0; i < end; i += step) body()`. */
  forStep(i: number, end: number, step: number, body: () => void): this {
    this.i32(0).set(i);
    return this.whileBelow(i, end, () => {
      body();
      this.get(i).i32(step).op('i32.add').set(i);
    });
  }

  /** The code section entry: locals grouped by runs of one type, then the body and `end`. */
  encode(): number[] {
    const runs: number[][] = [];
    for (let i = 0; i < this.localTypes.length; ) {
      let j = i;
      while (j < this.localTypes.length && this.localTypes[j] === this.localTypes[i]) j++;
      runs.push([...unsigned(j - i), this.localTypes[i]!]);
      i = j;
    }
    const body = [...vector(runs), ...this.bytes, 0x0b];
    return [...unsigned(body.length), ...body];
  }
}

/** A function's named parameters and the locals it declares first, each with its type, in order. */
export interface Signature<P extends string, L extends string> {
  params: Record<P, ValueType>;
  locals?: Record<L, ValueType>;
}

/**
 * A function written with names: `body` writes into `code` and reads each parameter and local of
 * `signature` by its name in `$` (its index: parameters first, then the locals in order). The
 * parameters' order is the exported function's; a local declared later in `body` (code.local)
 * comes after these.
 */
export function fn<P extends string, L extends string = never>(signature: Signature<P, L>, body: (code: Code, $: Record<P | L, number>) => void): Code {
  const names = Object.keys(signature.params) as P[];
  const code = new Code(names.map((n) => signature.params[n]));
  names.forEach((n, i) => code.names.set(i, n));
  const clash = Object.keys(signature.locals ?? {}).find((n) => names.includes(n as P));
  if (clash) throw new Error(`${clash} is both a parameter and a local`);
  const $ = { ...Object.fromEntries(names.map((n, i) => [n, i])), ...code.declare(signature.locals ?? ({} as Record<L, ValueType>)) } as Record<P | L, number>;
  body(code, $);
  return code;
}

const section = (id: number, content: number[]): number[] => [id, ...unsigned(content.length), ...content];

/** The part of the WebAssembly global used here (@types/node 20 does not declare it; lib.dom does). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
}

const { WebAssembly: wasm } = globalThis as unknown as { WebAssembly: WasmApi };

/** A WebAssembly memory page. */
export const PAGE = 65536;

/** Grows `memory` to hold at least `bytes` bytes (typed-array views over it must be taken afresh). */
export function growTo(memory: WasmMemory, bytes: number): void {
  if (memory.buffer.byteLength < bytes) memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / PAGE));
}

/**
 * Bytes kept free before and after every buffer of a KernelArena: kernels run whole vectors past a
 * row's end (up to 60 bytes), read left edges at −1 and −2 and, expanding, a whole vector before it.
 */
const MARGIN = 64;

/**
 * Buffers laid out in a module's memory for one task: `alloc` each, then `ready` (the memory may
 * grow only before the views are taken), then the views; `reset` before the next task.
 */
export class KernelArena {
  private used = 0;
  u8!: Uint8Array;
  u16!: Uint16Array;
  i32!: Int32Array;
  f32!: Float32Array;
  f64!: Float64Array;

  constructor(private readonly memory: WasmMemory) {}

  /** The address of a new buffer of `bytes` bytes, 16-byte aligned, with MARGIN free bytes on each side. */
  alloc(bytes: number): number {
    const at = this.used + MARGIN;
    this.used += Math.ceil((bytes + 2 * MARGIN) / 16) * 16;
    return at;
  }

  /** Forgets the buffers of the last task. */
  reset(): this {
    this.used = 0;
    return this;
  }

  /** Makes room for the buffers allocated and takes views over the memory. */
  ready(): this {
    growTo(this.memory, this.used);
    const { buffer } = this.memory;
    this.u8 = new Uint8Array(buffer);
    this.u16 = new Uint16Array(buffer);
    this.i32 = new Int32Array(buffer);
    this.f32 = new Float32Array(buffer);
    this.f64 = new Float64Array(buffer);
    return this;
  }
}

/** A module's functions (without results, exported by name) and its memory's initial size in 64 KiB pages. */
export interface ModuleSource {
  functions: Record<string, Code>;
  pages: number;
}

/** The binary module of `source`: its functions and its own memory (`memory`), growable. */
export function assemble({ functions, pages }: ModuleSource): Uint8Array {
  const entries = Object.entries(functions);
  const types = entries.map(([, f]) => [0x60, ...vector(f.params.map((t) => [t])), 0]);
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vector(types)),
    ...section(3, vector(entries.map((_, i) => unsigned(i)))),
    ...section(5, vector([[0x00, ...unsigned(pages)]])),
    ...section(7, vector([...entries.map(([n], i) => [...name(n), 0x00, ...unsigned(i)]), [...name('memory'), 0x02, 0]])),
    ...section(10, vector(entries.map(([, f]) => f.encode()))),
  ]);
}

/** Compiles and instantiates the module of `source`. */
export function instantiate(source: ModuleSource): { exports: Record<string, unknown>; memory: WasmMemory } {
  const { exports } = new wasm.Instance(new wasm.Module(assemble(source)));
  return { exports, memory: exports.memory as WasmMemory };
}
