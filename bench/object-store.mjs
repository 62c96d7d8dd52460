// The object store of the soak: a local server speaking the S3 protocol (s3rver), on loopback, with
// one bucket. Montage's processes keep blend results there (MONTAGE_STORAGE_URL) and share no
// directory, as API and worker processes on separate machines would (docs/deploy.md, "Object storage").
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { makeTempDir, onCleanup } from './lib.mjs';

// The soak's own client (it lists the bucket) stays as quiet on Node 20 as Montage's (docs/deploy.md, "Object storage").
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// s3rver's built-in key pair; it checks the key id, not SigV4 signatures.
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export async function startObjectStore({ bucket = 'montage-soak', prefix = 'soak' } = {}) {
  const { dir } = makeTempDir('montage-soak-s3-');
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CREDENTIALS });
  onCleanup(`stop the S3 server ${endpoint}`, async () => {
    client.destroy();
    await server.close();
  });
  return {
    endpoint,
    bucket,
    env: {
      MONTAGE_STORAGE_URL: `s3://${bucket}/${prefix}?endpoint=${endpoint}&region=us-east-1&pathStyle=true`,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    },
    /** Every key under the prefix, without it (as Montage names them: `<account>/<job>.<ext>`). */
    async keys() {
      const keys = new Set();
      let token;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}/`, ContinuationToken: token }));
        for (const object of page.Contents ?? []) keys.add(object.Key.slice(prefix.length + 1));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys;
    },
  };
}
