/** Why a blend job failed (API.md section 9); the job's `error.code`. */
export const BLEND_FAILURE_CODES = [
  'image_fetch_failed',
  'unsupported_image',
  'image_too_large',
  'job_too_large',
  'alignment_failed',
  'quality_below_threshold',
  'job_timeout',
  'internal_error',
] as const;
export type BlendFailureCode = (typeof BLEND_FAILURE_CODES)[number];

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
