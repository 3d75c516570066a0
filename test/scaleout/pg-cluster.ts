// The PostgreSQL server of the scale-out test: a throwaway cluster from scripts/pg-test-server.sh,
// reopened to also listen on the hosts' bridge address, and restarted on demand (a crash-like
// `immediate` stop: every client connection is cut).
import { appendFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..', '..');
const script = join(root, 'scripts', 'pg-test-server.sh');

export interface Cluster {
  /** URL for processes on `addr` (the bridge address, or loopback). */
  url(addr: string): string;
  restart(): void;
  stop(): void;
}

function pgBin(): string {
  const r = spawnSync(
    'bash',
    [
      '-c',
      'if command -v pg_ctl >/dev/null; then dirname "$(readlink -f "$(command -v pg_ctl)")"; else ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1; fi',
    ],
    { encoding: 'utf8' },
  );
  return r.stdout.trim();
}

export function startCluster(listen: string, subnet: string | null): Cluster | { skip: string } {
  const r = spawnSync('bash', [script, 'start'], { encoding: 'utf8' });
  if (r.status !== 0) {
    const why = `PostgreSQL did not start (scripts/pg-test-server.sh exit ${r.status}): ${(r.stderr || '').trim().slice(-300)}`;
    if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(why);
    return { skip: why };
  }
  const [base, dir] = r.stdout.trim().split('\n') as [string, string];
  const port = new URL(base).port;
  const asPg = (args: string[]) =>
    process.getuid?.() === 0
      ? spawnSync('runuser', ['-u', 'postgres', '--', ...args], { encoding: 'utf8' })
      : spawnSync(args[0]!, args.slice(1), { encoding: 'utf8' });
  const pgCtl = join(pgBin(), 'pg_ctl');
  const restart = () => {
    const hostsOpt = listen === '127.0.0.1' ? '127.0.0.1' : `127.0.0.1,${listen}`;
    const x = asPg([
      pgCtl,
      '-D',
      join(dir, 'data'),
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '30',
      '-m',
      'immediate',
      '-o',
      `-h ${hostsOpt} -p ${port} -k ${dir} -c max_connections=200`,
      'restart',
    ]);
    if (x.status !== 0) throw new Error(`pg_ctl restart: ${x.stderr || x.stdout}`);
  };
  if (subnet) {
    appendFileSync(join(dir, 'data', 'pg_hba.conf'), `\nhost all all ${subnet} trust\n`);
    restart();
  }
  return {
    url: (addr) => base.replace('127.0.0.1', addr),
    restart,
    stop: () => void spawnSync('bash', [script, 'stop', dir], { encoding: 'utf8' }),
  };
}
