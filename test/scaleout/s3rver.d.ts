// The part of s3rver (an S3-compatible server in Node, devDependency) the tests use; it ships no types.
declare module 's3rver' {
  export default class S3rver {
    constructor(o: {
      port?: number;
      address?: string;
      silent?: boolean;
      directory: string;
      configureBuckets?: { name: string }[];
    });
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
