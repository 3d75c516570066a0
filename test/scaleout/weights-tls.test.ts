// HTTPS for the trainer's weight server, with certificates made by openssl in the test: the
// explorer's default (the certificate sha256 the trainer recorded, pinned), a CA file with the host
// name checked, and what must fail before the bearer token leaves the explorer: an impostor
// certificate, a pin that is not the recorded certificate, a CA that did not sign it.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  certSha256,
  fetchWeights,
  WeightsServer,
  type HttpWeightsSource,
} from '../../backend/coordinator/distributed/weights-http.js';
import { checksumDir } from '../../backend/coordinator/distributed/weights.js';

const root = mkdtempSync(join(tmpdir(), 'rft-tls-'));
after(() => rmSync(root, { recursive: true, force: true }));

function openssl(args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, `openssl ${args.join(' ')}: ${r.stderr}`);
}
const read = (f: string) => readFileSync(join(root, f), 'utf8');

/** A self-signed certificate for 127.0.0.1 (what `rft trainer --weights-tls-cert` would be given). */
function selfSigned(name: string): { cert: string; key: string } {
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
  ]);
  return { cert: read(`${name}.pem`), key: read(`${name}.key`) };
}

/** A CA and a server certificate it signed for `san`. */
function caSigned(name: string, san: string): { ca: string; cert: string; key: string } {
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}-ca`,
    '-keyout',
    `${name}-ca.key`,
    '-out',
    `${name}-ca.pem`,
  ]);
  openssl([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  ]);
  writeFileSync(join(root, `${name}.ext`), `subjectAltName=${san}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${name}-ca.pem`,
    '-CAkey',
    `${name}-ca.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  ]);
  return { ca: read(`${name}-ca.pem`), cert: read(`${name}.pem`), key: read(`${name}.key`) };
}

function version(): { dir: string; sum: string } {
  const dir = join(root, 'v1');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'rft.json'), '{"version":1}');
  writeFileSync(join(dir, 'weights.bin'), Buffer.alloc(70_000, 7));
  return { dir, sum: checksumDir(dir) };
}

test(
  'HTTPS weight server: the recorded certificate pinned by default; impostor, wrong pin and plain HTTP refused',
  { timeout: 60_000 },
  async () => {
    const { dir, sum } = version();
    const real = selfSigned('trainer');
    const impostor = selfSigned('impostor');
    const server = new WeightsServer();
    server.add(sum, dir);
    const port = await server.listen(0, '127.0.0.1', real);
    // An impostor on another port, with the same token (as if it had read it): its certificate is not the recorded one.
    const fake = new WeightsServer();
    fake.add(sum, dir);
    const fakePort = await fake.listen(0, '127.0.0.1', impostor);
    try {
      const src: HttpWeightsSource = {
        url: `https://127.0.0.1:${port}`,
        token: server.token,
        tls: { cert: real.cert, sha256: certSha256(real.cert) },
      };
      assert.match(src.tls!.sha256, /^[0-9a-f]{64}$/);
      const got = await fetchWeights(src, sum, join(root, 'c1'));
      assert.equal(checksumDir(got), sum);
      // The explorer's own pin, written with colons as openssl prints it, matching: fine.
      const colons = src.tls!.sha256.toUpperCase().match(/../g)!.join(':');
      assert.equal(checksumDir(await fetchWeights(src, sum, join(root, 'c2'), 5000, { pin: colons })), sum);
      // The server presents a certificate that is not the recorded one: the handshake fails.
      await assert.rejects(
        fetchWeights({ ...src, url: `https://127.0.0.1:${fakePort}` }, sum, join(root, 'c3')),
        /127\.0\.0\.1:\d+\/weights\/.*: (DEPTH_ZERO_SELF_SIGNED_CERT|ERR_TLS_CERT_ALTNAME_INVALID|UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|ERR_SSL)/,
      );
      // A pin that is not the recorded certificate's: refused before connecting.
      await assert.rejects(
        fetchWeights(src, sum, join(root, 'c4'), 5000, { pin: certSha256(impostor.cert) }),
        /recorded certificate .* is not the pinned/,
      );
      // An https:// source recorded without a certificate and no CA given: says what to give.
      await assert.rejects(fetchWeights({ url: src.url, token: src.token }, sum, join(root, 'c5')), /--weights-ca/);
      // Plain HTTP to the HTTPS port: an error, not a hang.
      await assert.rejects(
        fetchWeights({ url: `http://127.0.0.1:${port}`, token: src.token }, sum, join(root, 'c6')),
        /ECONNRESET|socket hang up|HTTP 400/,
      );
      for (const c of ['c3', 'c4', 'c5', 'c6'])
        assert.deepEqual(safeList(join(root, c)), [], `${c}: nothing left behind`);
    } finally {
      await server.close();
      await fake.close();
    }
  },
);

test(
  'HTTPS weight server with a CA-signed certificate: --weights-ca checks the chain and the host name',
  { timeout: 60_000 },
  async () => {
    const { dir, sum } = version();
    const good = caSigned('wserver', 'IP:127.0.0.1');
    const wrongHost = caSigned('elsewhere', 'DNS:trainer.example');
    const server = new WeightsServer();
    server.add(sum, dir);
    const port = await server.listen(0, '127.0.0.1', good);
    const other = new WeightsServer();
    other.add(sum, dir);
    const otherPort = await other.listen(0, '127.0.0.1', wrongHost);
    try {
      const src: HttpWeightsSource = {
        url: `https://127.0.0.1:${port}`,
        token: server.token,
        tls: { cert: good.cert, sha256: certSha256(good.cert) },
      };
      assert.equal(checksumDir(await fetchWeights(src, sum, join(root, 'd1'), 5000, { ca: good.ca })), sum);
      // Not signed by the given CA.
      await assert.rejects(
        fetchWeights(src, sum, join(root, 'd2'), 5000, { ca: wrongHost.ca }),
        /UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify/,
      );
      // Signed by its CA, but for another host name.
      await assert.rejects(
        fetchWeights({ url: `https://127.0.0.1:${otherPort}`, token: other.token }, sum, join(root, 'd3'), 5000, {
          ca: wrongHost.ca,
        }),
        /ERR_TLS_CERT_ALTNAME_INVALID/,
      );
    } finally {
      await server.close();
      await other.close();
    }
  },
);

function safeList(d: string): string[] {
  try {
    return readdirSync(d);
  } catch {
    return [];
  }
}
