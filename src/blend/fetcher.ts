import type { BlendLimits } from '../config.js';
import { type AddressPolicy, SafeFetchError, safeFetch } from '../net/safe-http.js';
import { BlendFailure } from './failures.js';
import { readSample, sampleOf } from './samples.js';
import type { ObjectStore } from './storage.js';

/** An uploaded image's key in the object store, as a job's spec names it (blend.service.ts, `specOf`). */
const UPLOAD_KEY = /^uploads\/[a-z0-9_]+\/upl_[0-9a-z]{26}$/;

/**
 * Reads an uploaded image from the object store, within the same byte and time limits as a fetched
 * one (its pixels are checked from its header like every image's): a store that stops answering
 * must not hold the job before its time limit starts. An upload deleted before the job read it is a
 * failure of that image; a store that cannot be reached, or not within the time, is worth another
 * attempt.
 */
async function readUpload(key: string, index: number, limits: BlendLimits, store: ObjectStore | null): Promise<Buffer> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), limits.fetchTimeoutMs);
  const timedOut = new Promise<never>((_, reject) =>
    deadline.signal.addEventListener('abort', () => reject(new BlendFailure('image_fetch_failed', `image ${index}: the upload could not be read from storage within ${limits.fetchTimeoutMs / 1000} s`, index, true)), { once: true }),
  );
  try {
    return await Promise.race([readObject(key, index, limits, store, deadline.signal), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads the object of an upload whole; its stream is destroyed when `deadline` fires, whenever that is. */
async function readObject(key: string, index: number, limits: BlendLimits, store: ObjectStore | null, deadline: AbortSignal): Promise<Buffer> {
  let object;
  try {
    object = store ? await store.open(key) : null;
  } catch (err) {
    throw new BlendFailure('image_fetch_failed', `image ${index}: the upload could not be read from storage`, index, true, String(err));
  }
  if (!object) throw new BlendFailure('image_fetch_failed', `image ${index}: the upload no longer exists (it was deleted)`, index);
  const stream = object.stream;
  const tooLarge = () => new BlendFailure('image_too_large', `image ${index} is larger than ${limits.maxImageBytes} bytes`, index);
  if (object.size > limits.maxImageBytes || deadline.aborted) {
    // Past the deadline the job has already failed this image; the stream is only let go.
    stream.destroy();
    throw deadline.aborted ? new BlendFailure('image_fetch_failed', `image ${index}: the upload could not be read from storage in time`, index, true) : tooLarge();
  }
  const stop = () => stream.destroy(new Error('the time to read the upload ran out'));
  deadline.addEventListener('abort', stop, { once: true });
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of stream) {
      bytes += (chunk as Buffer).length;
      if (bytes > limits.maxImageBytes) throw tooLarge();
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    stream.destroy();
    if (err instanceof BlendFailure) throw err;
    throw new BlendFailure('image_fetch_failed', `image ${index}: the upload could not be read from storage`, index, true, String(err));
  } finally {
    deadline.removeEventListener('abort', stop);
  }
  return Buffer.concat(chunks, bytes);
}

/** Where a refused address points the client: the operator's switch for private networks. */
export const PRIVATE_NETWORK_HINT = 'the server fetches from loopback and private addresses only with MONTAGE_ALLOW_PRIVATE_NETWORK=1';

/**
 * Fetches image `index` of a job through the SSRF-safe client, within the job's byte, redirect
 * and time limits (the pipeline fetches every image at once). A failure names the image's index;
 * only a server-side error or a timeout is worth another attempt (a 404 or a refused address
 * never will succeed). The failure's message is the client's; the address a name resolved to or
 * a socket tried is in its `internal` text, for the log. A URL under the server's own
 * `publicUrl` + `/samples/` is a shipped sample (samples.ts), read from disk with no connection at all;
 * an upload's key (`uploads/...`) is read from the object store `store`.
 */
export async function fetchImage(url: string, index: number, limits: BlendLimits, policy: AddressPolicy, publicUrl: string, store: ObjectStore | null = null): Promise<Buffer> {
  if (UPLOAD_KEY.test(url)) return readUpload(url, index, limits, store);
  const sample = sampleOf(url, publicUrl);
  if (sample === null) throw new BlendFailure('image_fetch_failed', `image ${index} could not be fetched: the server has no such sample (GET /samples/ lists them)`, index);
  if (sample) return readSample(sample);
  let response;
  try {
    response = await safeFetch(url, {
      timeoutMs: limits.fetchTimeoutMs,
      maxBytes: limits.maxImageBytes,
      maxRedirects: limits.maxRedirects,
      policy,
      headers: { accept: 'image/*', 'user-agent': 'Montage-Blend/1.0' },
    });
  } catch (err) {
    if (!(err instanceof SafeFetchError)) throw err;
    switch (err.code) {
      case 'too_large':
        throw new BlendFailure('image_too_large', `image ${index} is larger than ${limits.maxImageBytes} bytes`, index);
      case 'timeout':
      case 'network':
        throw new BlendFailure('image_fetch_failed', `image ${index} could not be fetched: ${err.message}`, index, true, err.internal);
      case 'blocked_address':
        throw new BlendFailure('image_fetch_failed', `image ${index} could not be fetched: ${err.message}; ${PRIVATE_NETWORK_HINT}`, index, false, err.internal);
      default:
        throw new BlendFailure('image_fetch_failed', `image ${index} could not be fetched: ${err.message}`, index, false, err.internal);
    }
  }
  if (response.status >= 300 && response.status < 400) {
    throw new BlendFailure('image_fetch_failed', `image ${index}: redirect without a usable Location`, index);
  }
  if (response.status !== 200) {
    const retryable = response.status >= 500 || response.status === 429 || response.status === 408;
    throw new BlendFailure('image_fetch_failed', `image ${index} could not be fetched: the server answered ${response.status}`, index, retryable);
  }
  return response.body;
}
