import { AUTO_CHOICES } from '../choose.js';
import type { DeghostReference } from './deghost/masks.js';
import type { PointKernel } from './point/stack.js';
import type { EngineTasks, TaskFunctions } from './threads/tasks.js';

/**
 * Every blend type, declared once: what the engine dispatches on (engine/blend.ts), what the API
 * accepts and documents (blend.schemas.ts), how much memory a job is given (memory.ts), which
 * defaults a job gets (blend.service.ts, pipeline.ts), what the benchmark runs (bench/blend.mjs)
 * and what the tests iterate. It imports no engine code (the kernels' thread tasks only as types), so
 * the API and the benchmark read it without loading the engine. docs/blend.md ("Adding a blend
 * type") says how a new one is added.
 */

/** How a type is computed: per pixel over the frames' rows, through Laplacian pyramids, or from people's masks. */
export type BlendFamily = 'point' | 'pyramid' | 'composite';

/** The frames a type is made for, which the benchmark and the docs show it on. */
export type BlendInput = 'scene' | 'bracket' | 'focus-bracket' | 'group';

/** A per-pixel kernel: the thread task (threads/tasks.ts) of a function with the PointKernel signature (a renamed one breaks the build). */
export type PointKernelTask = { [N in keyof EngineTasks]: TaskFunctions<EngineTasks>[N] extends PointKernel ? N : never }[keyof EngineTasks];

export interface BlendTypeDeclaration {
  family: BlendFamily;
  /** Other names the API accepts for it. */
  aliases: readonly string[];
  /** The row function of a `point` type; null for the others, which engine/blend.ts or composite/ dispatch by name. */
  kernel: PointKernelTask | null;
  /** Whether a job aligns its frames unless it says otherwise (star trails: the motion is the subject). */
  align: boolean;
  /** Whether the quality score measures ghosting (moving things left half-visible) in its result. */
  ghosting: boolean;
  /** Whether moving things are removed before the blend (deghosting), and against which frame; null where the type does not deghost. */
  deghost: DeghostReference | null;
  /** Whether its scratch (pyramids, weights, masks) is worth a collection before scoring. */
  largeScratch: boolean;
  /**
   * How a job of the type holds its frames (docs/blend.md, "Memory"): 'fold', one frame at a time
   * folded into an accumulator (point/fold.ts); 'bands', its aligned frames spooled to disk and
   * blended a band of rows at a time; 'pyramid', its aligned frames spooled to disk and read back
   * one at a time in passes into accumulator pyramids (engine/pyramid-stream.ts); null, every
   * frame in memory at once. The first three stream (blend/stream.ts): their memory does not grow
   * with the frame count. Each has its own image limit (memory.ts `imageLimit`).
   */
  stream: 'fold' | 'bands' | 'pyramid' | null;
  /**
   * A job's peak memory per pixel of its frames, beyond memory.ts's base, when it holds every
   * frame (its own way for the types that do not stream; `auto` and preserveBackground for the
   * others): the smallest figure that covers every measurement of bench/blend-memory.mjs, rounded
   * up (docs/blend.md, "Memory").
   */
  bytesPerPixel: number;
  /**
   * A streaming job's peak memory per pixel it holds (memory.ts `jobPixels`: a few frames' worth,
   * whatever the frame count) beyond the base; a median adds its band memory. lighten's and
   * median's cover the measurements of bench/blend-stack.mjs; mean's and the layer modes' add what
   * their accumulators hold beyond lighten's (docs/blend.md, "Memory"). Null for the types that do
   * not stream.
   */
  streamBytesPerPixel: number | null;
  input: BlendInput;
  /** One sentence for the API's description. */
  description: string;
}

/** The declarations; the order is the API's. */
export const BLEND_REGISTRY = {
  mean: {
    family: 'point',
    aliases: ['average'],
    kernel: 'meanRows',
    align: true,
    ghosting: true,
    deghost: 'first',
    largeScratch: false,
    stream: 'fold',
    bytesPerPixel: 7,
    streamBytesPerPixel: 10,
    input: 'scene',
    description: 'per-pixel mean of the aligned frames (noise reduction, long-exposure look)',
  },
  median: {
    family: 'point',
    aliases: [],
    kernel: 'medianRows',
    align: true,
    ghosting: true,
    deghost: null,
    largeScratch: false,
    stream: 'bands',
    bytesPerPixel: 7,
    streamBytesPerPixel: 7,
    input: 'scene',
    description: 'per-pixel median (removes passers-by and moving things)',
  },
  lighten: {
    family: 'point',
    aliases: [],
    kernel: 'lightenRows',
    align: false,
    ghosting: false,
    deghost: null,
    largeScratch: false,
    stream: 'fold',
    bytesPerPixel: 7,
    streamBytesPerPixel: 7,
    input: 'scene',
    description: 'per-pixel, per-channel maximum (star trails, light painting)',
  },
  darken: {
    family: 'point',
    aliases: [],
    kernel: 'darkenRows',
    align: false,
    ghosting: false,
    deghost: null,
    largeScratch: false,
    stream: 'fold',
    bytesPerPixel: 7,
    streamBytesPerPixel: 7,
    input: 'scene',
    description: 'per-pixel, per-channel minimum (removes bright specks)',
  },
  exposure: {
    family: 'pyramid',
    aliases: [],
    kernel: null,
    align: true,
    ghosting: false,
    deghost: 'middle-exposure',
    largeScratch: true,
    stream: 'pyramid',
    bytesPerPixel: 11,
    streamBytesPerPixel: 10,
    input: 'bracket',
    description: 'exposure fusion (Mertens) of a bracket',
  },
  focus: {
    family: 'pyramid',
    aliases: [],
    kernel: null,
    align: true,
    ghosting: false,
    deghost: null,
    largeScratch: true,
    stream: 'pyramid',
    bytesPerPixel: 9,
    streamBytesPerPixel: 10,
    input: 'focus-bracket',
    description: 'focus stacking: the sharpest frame per pixel, blended so seams do not show',
  },
  composite: {
    family: 'composite',
    aliases: [],
    kernel: null,
    align: true,
    ghosting: true,
    deghost: null,
    largeScratch: true,
    stream: null,
    bytesPerPixel: 9,
    streamBytesPerPixel: null,
    input: 'group',
    description: 'the people of every frame placed on the first (a group photo in which everyone appears)',
  },
  multiply: {
    family: 'point',
    aliases: [],
    kernel: 'multiplyRows',
    align: true,
    ghosting: false,
    deghost: null,
    largeScratch: false,
    stream: 'fold',
    bytesPerPixel: 7,
    streamBytesPerPixel: 12,
    input: 'scene',
    description: 'W3C multiply blend mode, folded left to right',
  },
  screen: {
    family: 'point',
    aliases: [],
    kernel: 'screenRows',
    align: true,
    ghosting: false,
    deghost: null,
    largeScratch: false,
    stream: 'fold',
    bytesPerPixel: 7,
    streamBytesPerPixel: 12,
    input: 'scene',
    description: 'W3C screen blend mode, folded left to right',
  },
  overlay: {
    family: 'point',
    aliases: [],
    kernel: 'overlayRows',
    align: true,
    ghosting: false,
    deghost: null,
    largeScratch: false,
    stream: 'fold',
    bytesPerPixel: 7,
    streamBytesPerPixel: 12,
    input: 'scene',
    description: 'W3C overlay blend mode, folded left to right',
  },
  'soft-light': {
    family: 'point',
    aliases: [],
    kernel: 'softLightRows',
    align: true,
    ghosting: false,
    deghost: null,
    largeScratch: false,
    stream: 'fold',
    bytesPerPixel: 7,
    streamBytesPerPixel: 12,
    input: 'scene',
    description: 'W3C soft-light blend mode, folded left to right',
  },
} as const satisfies Record<string, BlendTypeDeclaration>;

type Registry = typeof BLEND_REGISTRY;

/** A type the engine computes (an alias resolved, `auto` decided). */
export type EngineBlendType = keyof Registry;

/** The types of one family. */
export type BlendTypeOf<F extends BlendFamily> = { [T in EngineBlendType]: Registry[T]['family'] extends F ? T : never }[EngineBlendType];

/** Every type the engine computes, in the registry's order. */
export const ENGINE_BLEND_TYPES = Object.keys(BLEND_REGISTRY) as EngineBlendType[];

/** What a job may ask for: `auto`, then each type followed by its aliases. */
export const BLEND_TYPES = ['auto', ...ENGINE_BLEND_TYPES.flatMap((t) => [t, ...BLEND_REGISTRY[t].aliases])] as Array<
  'auto' | EngineBlendType | Registry[EngineBlendType]['aliases'][number]
>;
export type BlendType = (typeof BLEND_TYPES)[number];

/** The type a requested name stands for: itself, or the type it is an alias of; `auto` stays `auto`. */
export function resolveBlendType(requested: BlendType): EngineBlendType | 'auto' {
  if (requested === 'auto') return requested;
  return ENGINE_BLEND_TYPES.find((t) => t === requested || (BLEND_REGISTRY[t].aliases as readonly string[]).includes(requested))!;
}

/** Whether a job of the requested type aligns unless it says otherwise: its type's default; for `auto`, whether every type it may choose aligns. */
export function alignsByDefault(requested: BlendType): boolean {
  const type = resolveBlendType(requested);
  return (type === 'auto' ? AUTO_CHOICES : [type]).every((t) => BLEND_REGISTRY[t].align);
}

/** Whether a job of the requested type may deghost: its type deghosts; for `auto`, some type it may choose does (the engine deghosts only the type chosen). */
export function canDeghost(requested: BlendType): boolean {
  const type = resolveBlendType(requested);
  return (type === 'auto' ? AUTO_CHOICES : [type]).some((t) => BLEND_REGISTRY[t].deghost !== null);
}

/**
 * Whether a job deghosts when it does not say: yes, for the types that can (a person who walks
 * through a mean or a bracket leaves no ghost unless the client turns it off with
 * `options.deghost: false`). The agreement test (deghost/agreement.ts) judges each window against
 * windows of like detail in the same frames, so JPEG's blockwise error and a warp's smoothing do not
 * read as motion; docs/blend.md, "Deghosting", has the figures.
 */
export const DEGHOST_BY_DEFAULT = true;
