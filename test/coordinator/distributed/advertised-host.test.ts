// Issue 24 (low): `rft trainer --weights-host ADDR` took an address this machine does not have; it was
// recorded for the explorers, which then all failed to fetch the weights. Now it is refused at start,
// naming this machine's addresses, unless declared forwarded (NAT).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { advertisedHostProblem } from '../../../backend/coordinator/distributed/advertised-host.js';
import { defaultAdvertisedHost } from '../../../backend/coordinator/distributed/weights-http.js';

test('an address of this machine, or a name resolving to one, is taken; another address, 0.0.0.0 or a name that does not resolve is refused', async () => {
  assert.equal(await advertisedHostProblem('127.0.0.1'), null);
  assert.equal(await advertisedHostProblem(defaultAdvertisedHost()), null);
  assert.equal(await advertisedHostProblem('localhost'), null);
  // 203.0.113.0/24 is TEST-NET-3: no machine has it.
  assert.match(
    (await advertisedHostProblem('203.0.113.7'))!,
    /^--weights-host 203\.0\.113\.7: this machine has no such address, .*give one of this machine's addresses \(.*127\.0\.0\.1.*\) or a name .*--weights-host-forwarded$/,
  );
  assert.match((await advertisedHostProblem('0.0.0.0'))!, /not an address explorers can connect to/);
  assert.match(
    (await advertisedHostProblem('no-such-host.invalid'))!,
    /^--weights-host no-such-host\.invalid: the name does not resolve here \(/,
  );
  // Addresses as the OS lists them (an IPv6 with its zone, an IPv4-mapped one) compare by address.
  assert.equal(await advertisedHostProblem('fe80::1', { addresses: ['fe80::1%eth0'] }), null);
  assert.equal(await advertisedHostProblem('[fe80::1]', { addresses: ['fe80::1'] }), null);
});

test('rft trainer --weights-host with an address not on this machine exits 2 before touching the database; --weights-host-forwarded passes it', () => {
  const root = join(import.meta.dirname, '..', '..', '..');
  const rft = (extra: string[]) =>
    spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(root, 'backend/cli.ts'),
        'trainer',
        '--buffer',
        'postgres://nobody@127.0.0.1:1/none',
        '--run',
        'r',
        ...extra,
      ],
      { cwd: root, encoding: 'utf8', timeout: 60_000 },
    );
  const r = rft(['--weights-host', '203.0.113.7']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /--weights-host 203\.0\.113\.7: this machine has no such address/);
  // Forwarded: not checked, so the trainer goes on to the database (unreachable here: it then retries; the test stops it).
  const f = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'backend/cli.ts'),
      'trainer',
      '--buffer',
      'postgres://nobody@127.0.0.1:1/none',
      '--run',
      'r',
      '--weights-host',
      '203.0.113.7',
      '--weights-host-forwarded',
    ],
    { cwd: root, encoding: 'utf8', timeout: 8_000, killSignal: 'SIGKILL' },
  );
  assert.notEqual(f.status, 2, f.stderr);
  assert.doesNotMatch(f.stderr ?? '', /no such address/);
});
