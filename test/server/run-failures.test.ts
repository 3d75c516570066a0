// Failures that say why: a config's problems at the line of their key (config/validate, with a
// "did you mean" for unknown keys); a run whose process dies before it registers is refused with
// the reason from its log (not a wait for runs.json); runs/log gives a run's last log lines; the
// registry's statusReason reaches RunInfo.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServe, type Served } from '../../tools/spawn-serve.js';
import { tinyRunConfig } from './tiny-run-config.js';
import { RunRegistry } from '../../backend/buffer/runs.js';

let s: Served;
let ws: string;

before(() => {
  ws = mkdtempSync(join(tmpdir(), 'rft-fail-'));
  s = spawnServe(['--workspace', ws], { RFT_FROM_SOURCE: '1' });
});
after(async () => {
  await s.close();
});

test('config/validate: unknown keys at their line with a suggestion, wrong types at the key, YAML syntax at its line', async () => {
  const good = tinyRunConfig({ warmupSteps: 1, mixSeconds: 1 });
  writeFileSync(join(ws, 'good.rft.yaml'), good);
  assert.deepEqual((await s.request('config/validate', { file: 'good.rft.yaml' })).issues, []);

  const lines = good.split('\n');
  const lrLine = lines.findIndex((l) => /^\s+lr:/.test(l));
  assert.ok(lrLine >= 0, 'the tiny config sets trainer.lr');
  const typo = lines.map((l, i) => (i === lrLine ? l.replace('lr:', 'lrr:') : l)).join('\n');
  const r = await s.request('config/validate', { file: 'x.rft.yaml', text: typo });
  const unknown = r.issues.find((i) => i.field.endsWith('lrr'))!;
  assert.equal(unknown.line, lrLine + 1);
  assert.match(unknown.message, /unknown key 'lrr' \(did you mean 'lr'\?\)/);

  const bad = await s.request('config/validate', { file: 'x.rft.yaml', text: 'name: t\nseed: "seven"\n' });
  const seed = bad.issues.find((i) => i.field === 'seed')!;
  assert.equal(seed.line, 2);
  const syntax = await s.request('config/validate', { file: 'x.rft.yaml', text: 'name: t\nmodel: [1\n' });
  assert.equal(syntax.issues[0]!.field, '(syntax)');
  assert.ok(syntax.issues[0]!.line! >= 2);
});

test(
  'a run whose process dies before registering is refused at once with the reason from its log',
  { timeout: 120_000 },
  async () => {
    writeFileSync(
      join(ws, 'broken.rft.yaml'),
      tinyRunConfig({ warmupSteps: 1, mixSeconds: 1 }).replace(/^(\s+)lr:/m, '$1lrr:'),
    );
    await assert.rejects(
      s.request('runs/start', { configPath: 'broken.rft.yaml' }),
      (e: { code: number; message: string }) => {
        assert.equal(e.code, -32002);
        assert.match(e.message, /exited \(code \d+\) before it started/);
        assert.match(e.message, /lrr/, 'the log names the bad key');
        return true;
      },
    );
  },
);

test('runs/log: the last lines of a run log; statusReason of a failed run in runs/list', async () => {
  const reg = await RunRegistry.open(ws);
  const rec = await reg.create({ name: 'dead', config: {} });
  await reg.setStatus(rec.id, 'failed', 'sequence of 120 tokens exceeds the model maxSeqLen 96');
  mkdirSync(join(ws, '.rft', 'logs'), { recursive: true });
  writeFileSync(
    join(ws, '.rft', 'logs', `${rec.id}.log`),
    Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n',
  );
  const log = await s.request('runs/log', { runId: rec.id, lines: 5 });
  assert.deepEqual(log.lines, ['line 25', 'line 26', 'line 27', 'line 28', 'line 29']);
  assert.equal(readFileSync(log.path, 'utf8').split('\n')[0], 'line 0');
  const info = (await s.request('runs/list', {})).find((r) => r.id === rec.id)!;
  assert.equal(info.status, 'failed');
  assert.match(info.statusReason!, /exceeds the model maxSeqLen 96/);
  await assert.rejects(s.request('runs/log', { runId: rec.id, lines: 0 }), { code: -32002 });
});
