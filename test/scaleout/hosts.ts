// Separate "hosts" for the scale-out test: one network namespace per host, each with a veth pair
// into a bridge in the test's own namespace, where PostgreSQL listens on the bridge address.
// Cutting a host off = taking its veth link down (packets are dropped, TCP sees silence, exactly
// like a pulled cable). Where namespaces cannot be made (not root, no iproute2), hosts are plain
// processes on loopback and a cut is emulated by freezing the process (SIGSTOP), which the caller reports.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

function ip(args: string[], check = true): boolean {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (check && r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr || r.error?.message}`);
  return r.status === 0;
}

export interface Hosts {
  mode: 'netns' | 'loopback';
  /** Address PostgreSQL must listen on for the hosts (besides 127.0.0.1), and the hosts' subnet. */
  serverAddr: string;
  subnet: string | null;
  spawn(host: number, cmd: string, args: string[], env?: NodeJS.ProcessEnv): ChildProcess;
  cut(host: number, child: ChildProcess): void;
  restore(host: number, child: ChildProcess): void;
  teardown(): void;
}

export function makeHosts(n: number): Hosts {
  const tag = `rso${process.pid % 100000}`;
  const net = `10.77.${process.pid % 250}`;
  const names = Array.from({ length: n }, (_, i) => ({ ns: `${tag}h${i}`, veth: `${tag}v${i}`, peer: `${tag}p${i}` }));
  const bridge = `${tag}b`;
  // RFT_SCALEOUT_HOSTS=loopback forces the fallback (to test it where namespaces work).
  const canNetns =
    process.env.RFT_SCALEOUT_HOSTS !== 'loopback' &&
    process.getuid?.() === 0 &&
    spawnSync('ip', ['-V']).status === 0 &&
    ip(['netns', 'add', `${tag}probe`], false) &&
    ip(['netns', 'del', `${tag}probe`], false);
  if (canNetns) {
    try {
      ip(['link', 'add', bridge, 'type', 'bridge']);
      ip(['addr', 'add', `${net}.1/24`, 'dev', bridge]);
      ip(['link', 'set', bridge, 'up']);
      names.forEach((h, i) => {
        ip(['netns', 'add', h.ns]);
        ip(['link', 'add', h.veth, 'type', 'veth', 'peer', 'name', h.peer]);
        ip(['link', 'set', h.peer, 'netns', h.ns]);
        ip(['link', 'set', h.veth, 'master', bridge]);
        ip(['link', 'set', h.veth, 'up']);
        ip(['-n', h.ns, 'addr', 'add', `${net}.${10 + i}/24`, 'dev', h.peer]);
        ip(['-n', h.ns, 'link', 'set', h.peer, 'up']);
        ip(['-n', h.ns, 'link', 'set', 'lo', 'up']);
      });
    } catch (e) {
      teardownNetns(names, bridge);
      throw e;
    }
    return {
      mode: 'netns',
      serverAddr: `${net}.1`,
      subnet: `${net}.0/24`,
      spawn: (host, cmd, args, env) =>
        spawn('ip', ['netns', 'exec', names[host]!.ns, cmd, ...args], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: env ?? process.env,
        }),
      // Stopped while its link goes down (ip takes milliseconds, a tiny model's rollout less), so the
      // cut lands where the caller saw the process, not after its next few acks.
      cut: (host, child) => {
        child.kill('SIGSTOP');
        try {
          ip(['link', 'set', names[host]!.veth, 'down']);
        } finally {
          child.kill('SIGCONT');
        }
      },
      restore: (host) => void ip(['link', 'set', names[host]!.veth, 'up']),
      teardown: () => teardownNetns(names, bridge),
    };
  }
  return {
    mode: 'loopback',
    serverAddr: '127.0.0.1',
    subnet: null,
    spawn: (_host, cmd, args, env) => spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env }),
    cut: (_host, child) => void child.kill('SIGSTOP'),
    restore: (_host, child) => void child.kill('SIGCONT'),
    teardown: () => undefined,
  };
}

function teardownNetns(names: { ns: string }[], bridge: string): void {
  for (const h of names) ip(['netns', 'del', h.ns], false);
  ip(['link', 'del', bridge], false);
}
