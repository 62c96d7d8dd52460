import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { ObjectStorageConfig } from '../config.js';
import { AppError } from '../errors.js';
import { checkKey, type ObjectStore } from './storage.js';

// The SDK warns on Node 20 that its releases after January 2027 need Node 22; the variable it
// documents for that silences the warning, which is said once in docs/deploy.md rather than on
// every start of every process.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * The AWS SDK, loaded when a store first needs it: it takes about half a second to load, which
 * every process without object storage (the default) would otherwise pay at start.
 */
type Sdk = typeof import('@aws-sdk/client-s3') & typeof import('@aws-sdk/lib-storage') & typeof import('@aws-sdk/s3-request-presigner');
let loading: Promise<Sdk> | null = null;
const loadSdk = (): Promise<Sdk> =>
  (loading ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage'), import('@aws-sdk/s3-request-presigner')]).then(([s3, storage, presigner]) => ({ ...s3, ...storage, ...presigner })));

/** SigV4 presigned URLs live at most a week. */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

const CHECK_TIMEOUT_MS = 10_000;

/**
 * How long a call to the store may wait: for a connection, for the answer to a request (its body
 * sent, the answer's head received), and with no byte moving on the socket (a response body read).
 */
export interface StoreTimeouts {
  connectMs: number;
  requestMs: number;
  idleMs: number;
}

export const STORE_TIMEOUTS: StoreTimeouts = { connectMs: 5_000, requestMs: 30_000, idleMs: 30_000 };

const CONTENT_TYPES: Record<string, string> = { jpg: 'image/jpeg', png: 'image/png', webp: 'image/webp', avif: 'image/avif' };

const contentTypeOf = (name: string) => CONTENT_TYPES[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream';

/**
 * An S3-compatible bucket (AWS S3, MinIO, Cloudflare R2) as the blend area's object store: what
 * lets API and worker processes on different machines share results and uploads without a shared
 * directory. Keys are the store's own under the configured prefix.
 */
export class S3Store implements ObjectStore {
  private connected: Promise<{ sdk: Sdk; client: S3Client }> | null = null;
  private client: S3Client | null = null;

  constructor(
    private readonly config: ObjectStorageConfig,
    private readonly timeouts: StoreTimeouts = STORE_TIMEOUTS,
  ) {}

  /** The SDK and this store's client, made on first use. */
  private connect(): Promise<{ sdk: Sdk; client: S3Client }> {
    return (this.connected ??= loadSdk().then((sdk) => {
      const config = this.config;
      this.client = new sdk.S3Client({
        region: config.region,
        forcePathStyle: config.pathStyle,
        ...(config.endpoint ? { endpoint: config.endpoint } : {}),
        ...(config.credentials ? { credentials: config.credentials } : {}),
        // Checksums only where S3 requires them: the stores other than AWS's (MinIO, R2 and older
        // releases of others) do not all accept the SDK's newer default ones.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        // Without these the SDK waits forever on a store that accepts a connection and stops
        // answering; the request time-out only warns unless told to throw.
        requestHandler: {
          connectionTimeout: this.timeouts.connectMs,
          requestTimeout: this.timeouts.requestMs,
          throwOnRequestTimeout: true,
          socketTimeout: this.timeouts.idleMs,
        },
      });
      return { sdk, client: this.client };
    }));
  }

  /** The bucket and what names it in messages: its name and endpoint, never a credential. */
  get location(): string {
    return `s3://${this.config.bucket}${this.config.prefix ? `/${this.config.prefix}` : ''} at ${this.config.endpoint ?? `AWS S3 (${this.config.region})`}`;
  }

  private key(key: string): string {
    checkKey(key);
    return this.config.prefix ? `${this.config.prefix}/${key}` : key;
  }

  /**
   * A buffer is one PutObject; a stream of unknown length goes up in parts (lib-storage), which S3
   * shows only once the upload completes, and which is aborted when the stream or a part fails.
   */
  async put(key: string, body: Buffer | Readable): Promise<void> {
    const params = { Bucket: this.config.bucket, Key: this.key(key), ContentType: contentTypeOf(key) };
    const { sdk, client } = await this.connect();
    if (Buffer.isBuffer(body)) {
      await client.send(new sdk.PutObjectCommand({ ...params, Body: body }));
      return;
    }
    let sourceError: unknown = null;
    body.once('error', (err) => (sourceError = err));
    try {
      await new sdk.Upload({ client, params: { ...params, Body: body } }).done();
    } catch (err) {
      // The stream's own failure says more than the failed upload (or its abort) that followed it.
      throw sourceError ?? err;
    }
  }

  async open(key: string): Promise<{ stream: Readable; size: number } | null> {
    const objectKey = this.key(key);
    const { sdk, client } = await this.connect();
    try {
      const object = await client.send(new sdk.GetObjectCommand({ Bucket: this.config.bucket, Key: objectKey }));
      return { stream: object.Body as Readable, size: object.ContentLength ?? 0 };
    } catch (err) {
      if (err instanceof sdk.NoSuchKey) return null;
      // A reader of a result URL can retry this one; Montage's own failures stay 500s.
      if (!(err instanceof sdk.S3ServiceException)) throw new AppError('unavailable', 'The object store holding the result cannot be reached right now.');
      throw err;
    }
  }

  /** S3 answers a delete of a missing key with success, as the directory store does. */
  async delete(key: string): Promise<void> {
    const objectKey = this.key(key);
    const { sdk, client } = await this.connect();
    await client.send(new sdk.DeleteObjectCommand({ Bucket: this.config.bucket, Key: objectKey }));
  }

  /**
   * A GET of `key` signed by this store's credentials, valid `seconds` (at most a week) from
   * `signedAt`: the same `signedAt` gives the same URL, which browsers cache. Served inline as
   * `fileName`, with the content type of its extension.
   */
  async presignGet(key: string, seconds: number, fileName: string, signedAt = Date.now()): Promise<string> {
    const objectKey = this.key(key);
    const { sdk, client } = await this.connect();
    const command = new sdk.GetObjectCommand({
      Bucket: this.config.bucket,
      Key: objectKey,
      ResponseContentDisposition: `inline; filename="${fileName.replace(/["\\\r\n]/g, '_')}"`,
      ResponseContentType: contentTypeOf(fileName),
    });
    return sdk.getSignedUrl(client, command, { expiresIn: Math.min(seconds, MAX_PRESIGN_SECONDS), signingDate: new Date(signedAt) });
  }

  /**
   * Whether the bucket answers (HeadBucket): at start, so that a wrong name, endpoint or key stops
   * the process with a reason instead of failing every job. The reason names the bucket and the
   * endpoint, never a credential.
   */
  async check(): Promise<void> {
    const { sdk, client } = await this.connect();
    try {
      await client.send(new sdk.HeadBucketCommand({ Bucket: this.config.bucket }), { abortSignal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
    } catch (err) {
      throw new AppError('unavailable', `The object store (${this.location}) cannot be used: ${reasonOf(sdk, err)}`);
    }
  }

  close(): void {
    this.client?.destroy();
  }
}

/** What a failed HeadBucket means, in words an operator can act on. */
function reasonOf(sdk: Sdk, err: unknown): string {
  if (err instanceof sdk.S3ServiceException) {
    const status = err.$metadata.httpStatusCode;
    if (status === 404) return 'the bucket does not exist (create it, or correct the name in MONTAGE_STORAGE_URL)';
    if (status === 403 || status === 401) return 'access denied: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY and that the key may list the bucket (s3:ListBucket)';
    if (status === 301 || status === 400) return `the store refused the request (${status}): check region and pathStyle in MONTAGE_STORAGE_URL`;
    return `the store answered ${status ?? 'an error'} (${err.name})`;
  }
  const error = err as NodeJS.ErrnoException;
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return `no answer within ${CHECK_TIMEOUT_MS / 1000} s`;
  if (error.name === 'CredentialsProviderError') return 'no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the process a role';
  return `it cannot be reached (${error.code ?? error.name})`;
}
