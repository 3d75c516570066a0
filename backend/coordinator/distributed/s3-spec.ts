// `--weights s3://BUCKET/PREFIX` and its flags as the run's recorded store spec. Apart from the store
// itself (weights-s3.ts) so that reading a command line never loads the AWS SDK.
import { InputError } from '../../core/errors.js';
import type { S3StoreSpec } from './weights-store.js';

/**
 * The store of `--weights s3://BUCKET/PREFIX`: the endpoint from `--s3-endpoint` or AWS_ENDPOINT_URL_S3 /
 * AWS_ENDPOINT_URL (none: AWS's own for the region), the region from `--s3-region` or AWS_REGION /
 * AWS_DEFAULT_REGION (default us-east-1), the addressing from `--s3-addressing` (default: path-style for
 * an endpoint of its own, as MinIO, Ceph and s3rver expect; virtual-hosted on AWS).
 */
export function s3Spec(
  weights: string,
  o: { endpoint?: string; region?: string; addressing?: string },
  env: NodeJS.ProcessEnv = process.env,
): S3StoreSpec {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(weights);
  if (!m)
    throw new InputError(
      `--weights: '${weights}' is not s3://BUCKET[/PREFIX] (a bucket name is 3-63 lower-case letters, digits, dots, hyphens)`,
    );
  const endpoint = o.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  let origin: string | undefined;
  if (endpoint) {
    let u: URL;
    try {
      u = new URL(endpoint);
    } catch {
      throw new InputError(`--s3-endpoint: '${endpoint}' is not a URL`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new InputError(`--s3-endpoint: '${endpoint}' must be http:// or https://`);
    origin = u.origin;
  }
  if (o.addressing !== undefined && o.addressing !== 'path' && o.addressing !== 'virtual')
    throw new InputError(`--s3-addressing: '${o.addressing}' is not path or virtual`);
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  return {
    kind: 's3',
    ...(origin ? { endpoint: origin } : {}),
    bucket: m[1]!,
    prefix,
    region: o.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    addressing: (o.addressing as 'path' | 'virtual' | undefined) ?? (origin ? 'path' : 'virtual'),
  };
}
