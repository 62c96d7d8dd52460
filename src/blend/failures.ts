/**
 * Why a blend job failed (docs/blend.md, Failures): the job's `error.code`, with what /docs/errors says
 * of it. A code cannot be added without both texts.
 */
export const BLEND_FAILURES = {
  image_fetch_failed: {
    happened:
      'An image URL could not be downloaded: the host did not answer or refused, the answer was not 2xx, it took longer than the fetch time limit, it redirected too often, or the host resolves to a loopback or private address.',
    next: "Check that every URL opens from the internet without cookies (a pre-signed link that has not expired), and look at `error.imageIndex` and the message. Addresses on your own network are fetched only when the operator sets `MONTAGE_ALLOW_PRIVATE_NETWORK=1`.",
  },
  unsupported_image: {
    happened: 'An image was downloaded but is not a picture the engine can decode (JPEG, PNG, WebP, AVIF, TIFF, GIF), its data is damaged, it has transparent pixels, or it is an animation (an animated GIF or WebP).',
    next: 'The message says which: send the frame again as JPEG or PNG, flattened onto a background if it has transparency, and one image per frame; `error.imageIndex` names the frame (0 is the first). A file that opens in an image viewer but fails here is worth reporting with the `requestId`.',
  },
  image_too_large: {
    happened: 'An image is larger than the server takes: more bytes than `MONTAGE_BLEND_MAX_IMAGE_BYTES` or more pixels than `MONTAGE_BLEND_MAX_PIXELS` in one frame.',
    next: 'Scale the frame down (a blend rarely needs more than the final picture\'s size) or compress it harder, and start a new job; `error.imageIndex` names the frame.',
  },
  job_too_large: {
    happened: "The job as a whole would need more memory than a job may take: its frames times the first frame's pixels exceed `MONTAGE_BLEND_MAX_JOB_PIXELS`. It is refused from the image headers, before anything is decoded.",
    next: 'Send fewer frames, or smaller ones (every frame is scaled to the first frame\'s size, so a large first frame counts for all), and start a new job. The operator can raise the budget where the machine has the memory.',
  },
  alignment_failed: {
    happened: 'A frame could not be lined up with the first frame: it does not show the same scene, or too little of it to align (a different photo, a frame of another shot).',
    next: 'Check that every frame shows the same scene as the first one; `error.imageIndex` names the frame that does not. Frames that already line up (a tripod) can be sent with alignment off (`options.align: false`).',
  },
  quality_below_threshold: {
    happened: "The blend finished, but its quality score is lower than the job's `options.qualityThreshold`, so no result is kept.",
    next: 'Look at the score in the message: lower the threshold, or send frames that line up better (less motion between them, the same exposure), and start a new job.',
  },
  job_timeout: {
    happened: 'The job took longer than the time one job may take (`MONTAGE_BLEND_JOB_TIMEOUT`) and was stopped.',
    next: 'Send fewer or smaller frames, or start the job again at a quieter time; the operator can raise the limit or run more workers.',
  },
  internal_error: {
    happened: 'The engine failed unexpectedly on every attempt the job had; nothing about the job was found wrong.',
    next: 'Start the job again; if it fails again, report it with the job id and the `requestId` of the start request: the server log has the details.',
  },
} as const satisfies Record<string, { happened: string; next: string }>;

export type BlendFailureCode = keyof typeof BLEND_FAILURES;
export const BLEND_FAILURE_CODES = Object.keys(BLEND_FAILURES) as BlendFailureCode[];

/**
 * A failure the job reports to its client. `retryable` failures (a server error or timeout
 * while fetching) are tried again while attempts remain; the others can never succeed.
 * `internal` is what only the server log may hold (the address a client's host name resolved to).
 */
export class BlendFailure extends Error {
  constructor(
    readonly code: BlendFailureCode,
    message: string,
    readonly imageIndex: number | null = null,
    readonly retryable = false,
    readonly internal: string | null = null,
  ) {
    super(message);
  }
}

/** Like Promise.all, but when several fail the error is the one of the lowest index (reports name the first bad image). */
export async function firstFailureInOrder<T>(work: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(work);
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) throw failure.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}
