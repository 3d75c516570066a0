// The quick start of docs/scaleout.md, run as written: the commands are read from the doc (between
// its quickstart markers), not copied here, so the doc and this test cannot drift apart. Allowed
// changes, and only these: `sudo apt-get install` is skipped (PostgreSQL is already here), `sudo -u
// postgres` is dropped (the commands go to this test's own server as its superuser via PGHOST /
// PGPORT / PGUSER), the URL's port becomes that server's, HOME is a temporary folder (for
// ~/rft-weights), and `npx rft` runs the source (RFT_FROM_SOURCE=1, not a possibly stale bundle).
// The explorer command is started twice ("as many as you like"). Any other command in the section
// fails the test: a new step in the doc needs a rule here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPg } from '../buffer/storage-helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The shell lines of the quick start's ```bash blocks, in order. */
function quickStartLines(): string[] {
  const doc = readFileSync(join(ROOT, 'docs', 'scaleout.md'), 'utf8');
  const a = doc.indexOf('<!-- quickstart');
  const b = doc.indexOf('<!-- /quickstart -->');
  assert.ok(a >= 0 && b > a, 'docs/scaleout.md has no quickstart section');
  const lines: string[] = [];
  for (const m of doc.slice(a, b).matchAll(/```bash\n([\s\S]*?)```/g))
    for (const l of m[1]!.split('\n')) if (l.trim() && !l.trim().startsWith('#')) lines.push(l.trim());
  return lines;
}

test("the README's scale-out commands are the quick start's (the test below runs those)", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf('### Scale-out');
  assert.ok(at >= 0, 'README.md has a scale-out section');
  const block = /```bash\n([\s\S]*?)```/.exec(readme.slice(at))![1]!;
  const doc = quickStartLines();
  const lines = block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
  assert.ok(lines.length >= 5);
  for (const l of lines) assert.ok(doc.includes(l), `README line not in the tested quick start: ${l}`);
});

interface Proc {
  name: string;
  child: ChildProcess;
  out: string;
  exit: Promise<number | null>;
}

test(
  'the quick start of docs/scaleout.md, as written: database, coordinator, trainer, two explorers, workers, summary',
  { timeout: 420_000 },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const home = mkdtempSync(join(tmpdir(), 'rft-quickstart-'));
    const pgUrl = new URL(server.url);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: home,
      RFT_FROM_SOURCE: '1',
      RFT_LOG_LEVEL: 'info',
      PGHOST: pgUrl.hostname,
      PGPORT: pgUrl.port,
      PGUSER: 'postgres',
    };
    const procs: Proc[] = [];
    const sh = (name: string, line: string): Proc => {
      const child = spawn('bash', ['-c', line], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      const p: Proc = { name, child, out: '', exit: new Promise((res) => child.on('exit', (code) => res(code))) };
      child.stdout!.on('data', (d: Buffer) => (p.out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (p.out += d.toString()));
      procs.push(p);
      return p;
    };
    const dump = () => procs.map((p) => `--- ${p.name}\n${p.out.slice(-3000)}`).join('\n');
    try {
      let trainer: Proc | null = null;
      const explorers: Proc[] = [];
      const later: string[] = [];
      for (const line of quickStartLines()) {
        if (/^sudo apt-get install/.test(line)) {
          t.diagnostic(`skipped: ${line}`);
        } else if (line.startsWith('sudo -u postgres ')) {
          const p = sh('setup', line.slice('sudo -u postgres '.length));
          assert.equal(await p.exit, 0, `${line}\n${p.out}`);
        } else if (line.startsWith('export URL=')) {
          const u = new URL(line.slice('export URL='.length));
          assert.equal(u.port, '5432', "the doc names PostgreSQL's default port");
          u.port = pgUrl.port;
          env.URL = u.toString();
          t.diagnostic(`URL=${env.URL}`);
        } else if (line.startsWith('npx rft coordinator ')) {
          const p = sh('coordinator', line);
          assert.equal(await p.exit, 0, dump());
          const printed = JSON.parse(
            p.out
              .trim()
              .split('\n')
              .filter((l) => l.startsWith('{'))
              .at(-1)!,
          ) as { run: string; created: boolean; jobs: number; checkpoint: string };
          assert.equal(printed.created, true);
          assert.equal(printed.checkpoint, join(home, 'rft-weights', 'quick1', 'v0'));
          t.diagnostic(`coordinator: ${JSON.stringify(printed)}`);
        } else if (line.startsWith('npx rft trainer ')) {
          trainer = sh('trainer', line);
        } else if (line.startsWith('npx rft explorer ')) {
          explorers.push(sh('explorer 1', line), sh('explorer 2', line));
        } else if (line.startsWith('npx rft workers ') || line.startsWith('cat ')) {
          later.push(line); // status while the run goes, the summary after it
        } else {
          assert.fail(`docs/scaleout.md quick start has a command this test does not know: ${line}`);
        }
      }
      assert.ok(trainer && explorers.length, 'the quick start starts a trainer and explorers');
      const workersLine = later.find((l) => l.startsWith('npx rft workers '));
      assert.ok(workersLine, 'the quick start shows how to watch');
      // While the run goes: the status lists the trainer and both explorers.
      for (let i = 0; ; i++) {
        const w = sh('workers', workersLine);
        const code = await w.exit;
        if (code === 0 && (w.out.match(/explorer@/g) ?? []).length === 2 && w.out.includes('trainer@')) {
          t.diagnostic(
            `rft workers:\n${w.out
              .split('\n')
              .filter((l) => !l.startsWith('npm warn'))
              .join('\n')}`,
          );
          break;
        }
        assert.ok(
          i < 60 && trainer.child.exitCode === null,
          `rft workers never listed the trainer and 2 explorers\n${dump()}`,
        );
        await new Promise((r) => setTimeout(r, 1000));
      }
      assert.equal(await trainer.exit, 0, dump());
      for (const e of explorers) assert.equal(await e.exit, 0, dump());
      const result = JSON.parse(trainer.out.split('\n').find((l) => l.includes('"trainer_result"'))!) as {
        done: boolean;
        step: number;
        eval: { start: { accuracy: number } | null; final: { accuracy: number } | null };
        outDir: string;
      };
      assert.equal(result.done, true);
      assert.equal(result.step, 60);
      assert.ok(result.eval.start && result.eval.final);
      assert.match(trainer.out, /serving weights at http:\/\//);
      assert.match(trainer.out, /step \d+\/60: loss/);
      for (const e of explorers) {
        const r = JSON.parse(e.out.split('\n').find((l) => l.includes('"explorer_result"'))!) as {
          jobs: number;
          loads: { http: number; folder: number };
        };
        t.diagnostic(`${e.name}: ${r.jobs} jobs, loads ${JSON.stringify(r.loads)}`);
      }
      for (const line of later.filter((l) => l.startsWith('cat '))) {
        const p = sh('summary', line);
        assert.equal(await p.exit, 0, p.out);
        const summary = JSON.parse(p.out) as { base_accuracy: number; final_accuracy: number; trainer_steps: number };
        assert.equal(summary.trainer_steps, 60);
        assert.equal(summary.final_accuracy, result.eval.final.accuracy);
        t.diagnostic(
          `summary.json: base_accuracy ${summary.base_accuracy}, final_accuracy ${summary.final_accuracy}, trainer wall ${JSON.stringify((result as unknown as { wallS: number }).wallS)} s`,
        );
      }
      assert.ok(existsSync(join(home, 'rft-weights', 'quick1', 'report.html')));
      assert.ok(existsSync(join(home, 'rft-weights', 'quick1', 'metrics.jsonl')));
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await server.stop();
      rmSync(home, { recursive: true, force: true });
    }
  },
);
