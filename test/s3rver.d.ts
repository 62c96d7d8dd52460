// s3rver ships no types: the part of it the tests and benchmarks use.
declare module 's3rver' {
  export default class S3rver {
    constructor(options: { port?: number; address?: string; silent?: boolean; directory: string; configureBuckets?: Array<{ name: string }>; resetOnClose?: boolean });
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
declare module 's3rver/lib/models/account.js' {
  const AWSAccount: { DUMMY_ACCOUNT: { createKeyPair(accessKeyId: string, secretAccessKey: string): void } };
  export default AWSAccount;
}
