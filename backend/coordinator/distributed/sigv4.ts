// AWS Signature Version 4 for S3 requests (header-based, path-style), small enough to read instead
// of an SDK: canonical request -> string to sign -> HMAC chain of the secret over date, region,
// service. Checked against the worked examples of AWS's S3 documentation (test/scaleout/weights-s3.test.ts).
import { createHash, createHmac } from 'node:crypto';

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials (AWS_SESSION_TOKEN). */
  sessionToken?: string;
}

export const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

/** S3's URI encoding: RFC 3986 unreserved characters stay, everything else is %XX (slashes kept in paths). */
export function uriEncode(s: string, keepSlash: boolean): string {
  const e = encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return keepSlash ? e.replace(/%2F/g, '/') : e;
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

export interface SignInput {
  method: string;
  url: URL;
  /** Headers to sign besides host / x-amz-date / x-amz-content-sha256 (lower- or mixed-case names). */
  headers?: Record<string, string>;
  payloadSha256: string;
  region: string;
  service?: string;
  now?: Date;
}

/** The headers to send: the given ones plus host, x-amz-date, x-amz-content-sha256, (x-amz-security-token) and authorization. */
export function signV4(req: SignInput, creds: S3Credentials): Record<string, string> {
  const amzDate = (req.now ?? new Date())
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const service = req.service ?? 's3';
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers ?? {})) h[k.toLowerCase()] = String(v).trim().replace(/\s+/g, ' ');
  h.host = req.url.host;
  h['x-amz-date'] = amzDate;
  h['x-amz-content-sha256'] = req.payloadSha256;
  if (creds.sessionToken) h['x-amz-security-token'] = creds.sessionToken;
  const names = Object.keys(h).sort();
  const query = [...req.url.searchParams.entries()]
    .map(([k, v]) => [uriEncode(k, false), uriEncode(v, false)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  // Each segment encoded once in S3's way (URL leaves e.g. '$' as is; callers send keys encoded so too).
  const path = (req.url.pathname || '/')
    .split('/')
    .map((s) => uriEncode(decodeURIComponent(s), false))
    .join('/');
  const canonical = [
    req.method,
    path,
    query,
    ...names.map((n) => `${n}:${h[n]}`),
    '',
    names.join(';'),
    req.payloadSha256,
  ].join('\n');
  const scope = `${day}/${req.region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${creds.secretAccessKey}`, day), req.region), service), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  h.authorization = `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  return h;
}
