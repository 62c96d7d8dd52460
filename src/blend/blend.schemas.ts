import { Type } from 'typebox';
import { PageQuery, pageSchema } from '../http/paging.js';
import { Nullable, NullableTimestamp, StringEnum, Timestamp } from '../schemas.js';
import { BLEND_FAILURE_CODES } from './failures.js';
import { OUTPUT_FORMATS } from './media.js';
import { uploadComponents } from './uploads.schemas.js';
import { PROGRESS_STAGES } from './progress.js';
import { BLEND_REGISTRY, BLEND_TYPES, ENGINE_BLEND_TYPES } from './engine/registry.js';
import { type ImageLimits, largestImageLimit } from './memory.js';

export const BlendStatus = StringEnum(['queued', 'processing', 'completed', 'failed', 'cancelled'] as const);
const ImageUrl = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'http or https URL of a JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIF image, or the id (`upl_...`) of an image uploaded to `POST /v1/blend/uploads`',
});
const ProjectId = Type.String({ pattern: '^[A-Za-z0-9._:-]{1,128}$', maxLength: 128, description: 'Your own grouping label', examples: ['wedding-2026-06-14'] });

/** `a`, `b` and `c`. */
function quoted(names: readonly string[]): string {
  const q = names.map((n) => `\`${n}\``);
  return q.length > 1 ? `${q.slice(0, -1).join(', ')} and ${q.at(-1)}` : q.join('');
}

/** Each blend type of the registry with its description and aliases (docs/blend.md, "Blend types", says more). */
const BLEND_TYPE_DESCRIPTION = [
  'Default `auto`: chosen from the frames (brightness range, sharpness per tile, frame count).',
  ...ENGINE_BLEND_TYPES.map((t) => {
    const { description, aliases } = BLEND_REGISTRY[t];
    return `\`${t}\`${aliases.length ? ` (also ${quoted(aliases)})` : ''}: ${description}.`;
  }),
].join(' ');

const ALIGN_DESCRIPTION = `Align every frame to the first. Default true, except for ${quoted(ENGINE_BLEND_TYPES.filter((t) => !BLEND_REGISTRY[t].align))} (star trails: the motion is the subject).`;

const startBodies = new Map<string, ReturnType<typeof makeStartBody>>();

/** The body of POST /blend/start for a server with these per-type image limits (memory.ts, `imageLimit`): one schema object per set of limits. */
export function startBody(limits: ImageLimits) {
  const key = `${limits.maxImages}/${limits.maxStreamingImages}/${limits.maxMedianImages}/${limits.maxPyramidImages}`;
  let schema = startBodies.get(key);
  if (!schema) startBodies.set(key, (schema = makeStartBody(limits)));
  return schema;
}

/** What `images` says of the limits: the schema takes the largest, the service each type's own. */
function imagesDescription(limits: ImageLimits): string {
  const folded = ENGINE_BLEND_TYPES.filter((t) => BLEND_REGISTRY[t].stream === 'fold');
  const pyramids = ENGINE_BLEND_TYPES.filter((t) => BLEND_REGISTRY[t].stream === 'pyramid');
  return (
    `Image URLs or upload ids (\`upl_...\`), mixed as you like; the first is the reference frame. At least 2; at most ${limits.maxStreamingImages} for ${quoted(folded)} (blended one frame at a time), ` +
    `${limits.maxMedianImages} for \`median\` (blended by bands of rows), ${limits.maxPyramidImages} for ${quoted(pyramids)} (blended in passes over the frames kept on disk), ${limits.maxImages} for the other types, for \`auto\` and for any job with \`preserveBackground\` ` +
    '(every frame held at once). A job over its type\'s limit is refused with `invalid_request` naming the limit.'
  );
}

const makeStartBody = (limits: ImageLimits) =>
  Type.Object(
    {
      projectId: ProjectId,
      images: Type.Array(ImageUrl, { minItems: 2, maxItems: largestImageLimit(limits), description: imagesDescription(limits) }),
      options: Type.Optional(
        Type.Object(
          {
            blendType: Type.Optional({ ...StringEnum(BLEND_TYPES), description: BLEND_TYPE_DESCRIPTION }),
            preserveBackground: Type.Optional(
              Type.Boolean({ description: 'Keep every pixel outside the people exactly as in the first frame. Default false, except for `composite` (true).' }),
            ),
            qualityThreshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'Fail the job (quality_below_threshold) when its score is lower. Default 0.' })),
            align: Type.Optional(Type.Boolean({ description: ALIGN_DESCRIPTION })),
            deghost: Type.Optional(
              Type.Boolean({
                description:
                  'Count each frame only where it agrees with the reference frame (frame 0 for `mean`, the middle exposure for `exposure`), so a person who moved leaves no ghost. Applies to `mean`, `average`, `exposure` and `auto` (when it chooses one of them); `true` is refused for the other types (`median` and `composite` keep moving things out by themselves). Default true for the types it applies to (`false` turns it off), false for the others.',
              }),
            ),
            outputFormat: Type.Optional({ ...StringEnum(OUTPUT_FORMATS), description: 'Default `jpeg`.' }),
          },
          { additionalProperties: false },
        ),
      ),
      webhookUrl: Type.Optional(Type.String({ maxLength: 2048, description: "This job's blend.* events are also sent here, signed with the account's webhook secret." })),
    },
    {
      $id: 'StartBlendRequest',
      additionalProperties: false,
      examples: [{ projectId: 'wedding-2026-06-14', images: ['https://images.example.com/1.jpg', 'https://images.example.com/2.jpg', 'https://images.example.com/3.jpg'], options: { blendType: 'median' } }],
    },
  );

const QualitySchema = Type.Object({
  alignment: Type.Number(),
  sharpness: Type.Number(),
  exposure: Type.Number(),
  ghosting: Nullable(Type.Number()),
});

export const FrameAlignmentSchema = Type.Object(
  {
    index: Type.Integer({ format: 'int32', minimum: 0, maximum: 4999, description: '0-based index of the frame in `images` (a job has at most 5000, the largest MONTAGE_BLEND_MAX_STREAMING_IMAGES).' }),
    method: {
      ...StringEnum(['reference', 'identity', 'translation', 'homography'] as const),
      description:
        '`reference`: frame 0, which the others are brought onto. `identity`: left as it is, because it already lines up with frame 0 within half a pixel. `translation`: moved by the shift phase correlation found. `homography`: warped by a homography (from feature matches, or the shift refined).',
    },
    shiftPx: Type.Number({ minimum: 0, description: 'How far alignment moved the frame: the largest displacement of its corners, in pixels of the result. 0 for `reference` and `identity`.' }),
    confidence: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        'Share of the textured parts of frame 0 (blocks of an 8 × 8 grid) whose gradients agree with the frame once aligned: near 1 for a clean set, lowered by moving people, focus blur and clipping; 0 when frame 0 has no texture at all. A frame that needed more than leaving it as it is fails as another scene below 0.1.',
    }),
  },
  { additionalProperties: false },
);

export const BlendProgressSchema = Type.Object(
  {
    stage: {
      ...StringEnum(PROGRESS_STAGES),
      description:
        '`fetching`: the images are being fetched (the job is still `queued`). `aligning`: decoded and, when the job aligns, brought onto frame 0. `blending`: the frames are blended (all at once). `encoding`: the result is scored and encoded.',
    },
    fraction: Type.Number({ minimum: 0, maximum: 1, description: 'Share of the stage done.' }),
    framesDone: Type.Integer({ minimum: 0, maximum: 100, description: 'Frames done in the stage (every frame while encoding).' }),
    framesTotal: Type.Integer({ minimum: 0, maximum: 100, description: 'Frames of the job.' }),
  },
  { additionalProperties: false, examples: [{ stage: 'aligning', fraction: 0.571, framesDone: 4, framesTotal: 7 }] },
);

export const BlendJobSchema = Type.Object(
  {
    jobId: Type.String({ examples: ['job_01m80eg3tperaacsapew6ns732'] }),
    projectId: Type.String(),
    status: BlendStatus,
    blendType: Type.String({ description: 'The type used (for `auto`, the one it chose), or the requested type until the job has started.' }),
    requestedBlendType: Type.String(),
    options: Type.Object({ preserveBackground: Type.Boolean(), qualityThreshold: Type.Number(), align: Type.Boolean(), deghost: Type.Boolean(), outputFormat: Type.String() }),
    images: Type.Array(Type.String(), { description: 'The input URLs and upload ids, as sent; the first is the reference frame.' }),
    attempts: Type.Integer(),
    createdAt: Timestamp,
    startedAt: NullableTimestamp,
    completedAt: NullableTimestamp,
    progress: Nullable(BlendProgressSchema, {
      description: "How far the job's worker has come: null until a worker takes the job, its final values once completed, where it stopped once failed or cancelled. Updated at most every 250 ms within a stage.",
    }),
    cancelRequestedAt: Type.Optional({ ...Timestamp, description: 'When a cancel was asked for; the job is `cancelled` once its worker has stopped it.' }),
    resultUrl: Type.Optional(Type.String({ description: 'Signed, expiring URL of the result; works without the API key. A presigned URL of the object store when the server keeps results in one.' })),
    resultUrlExpiresAt: Type.Optional(Timestamp),
    width: Type.Optional(Type.Integer()),
    height: Type.Optional(Type.Integer()),
    processingTime: Type.Optional(Type.Integer({ description: 'Milliseconds from start of processing to the stored result.' })),
    qualityScore: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    quality: Type.Optional(QualitySchema),
    alignment: Type.Optional(
      Type.Array(FrameAlignmentSchema, { maxItems: 5000, description: 'How each frame was brought onto frame 0, in image order; present once a job that aligns has finished (absent with `align: false`).' }),
    ),
    error: Type.Optional(
      Type.Object({
        code: StringEnum(BLEND_FAILURE_CODES),
        message: Type.String(),
        imageIndex: Nullable(Type.Integer(), { description: '0-based index of the image at fault, when one is.' }),
      }),
    ),
  },
  { $id: 'BlendJob' },
);

export const ListJobsQuery = Type.Object(
  {
    ...PageQuery,
    projectId: Type.Optional(ProjectId),
    status: Type.Optional(BlendStatus),
  },
  { additionalProperties: false },
);

export const ResultParams = Type.Object({ file: Type.String({ pattern: '^job_[0-9a-z]{26}\\.(jpg|png|webp|avif)$', maxLength: 35 }) }, { additionalProperties: false });
export const ResultQuery = Type.Object(
  { expires: Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Unix seconds' }), signature: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', maxLength: 43 }) },
  { additionalProperties: false },
);

export const BlendJobPage = pageSchema('BlendJobPage', BlendJobSchema);

/** Every named schema of the blend area, for the OpenAPI document's components (`limits`: the server's image limits). */
export const blendComponents = (limits: ImageLimits) => [BlendJobSchema, BlendJobPage, startBody(limits), ...uploadComponents];
