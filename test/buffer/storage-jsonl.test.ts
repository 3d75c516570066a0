// JSONL export/import (and the `rft buffer` commands over it): a buffer moves SQLite -> PostgreSQL -> SQLite
// unchanged; bad lines are reported with file, line and field while the good ones are kept.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/registry.js';
import { exportJsonl, importJsonl } from '../../backend/buffer/storage/jsonl.js';
import { parseFor } from '../../backend/cli/command.js';
import { commands } from '../../backend/cli/commands/index.js';
import { makeExp, pgSchemaUrl, startPg } from './storage-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-jsonl-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const pg = startPg();
if (!('skip' in pg)) after(() => pg.stop());

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const [a, b, ...rest] = argv;
  const c = commands.get(`${a} ${b}`);
  const out: string[] = [];
  const err: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = (...xs: unknown[]) => void out.push(xs.join(' '));
  console.error = (...xs: unknown[]) => void err.push(xs.join(' '));
  try {
    const code = await c.run(parseFor(c, rest));
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    [console.log, console.error] = [log, error];
  }
}

const exps = [
  makeExp('j1', { feedback: { rating: 3 }, advantages: Array(120).fill(0.5) }),
  makeExp('j2', { status: 'infra_failure', statusReason: 'sandbox crashed', useCount: 3 }),
  makeExp('j3', { source: 'expert', modelVersion: -1, logprobs: [] }),
];

test(
  'export -> import round-trips SQLite -> PostgreSQL -> SQLite',
  { skip: 'skip' in pg ? pg.skip : undefined },
  async () => {
    if ('skip' in pg) return;
    const a = await openStore(join(dir, 'a.db'));
    await a.appendExperiences(exps);
    const f1 = join(dir, 'a.jsonl');
    assert.equal(await exportJsonl(a, f1), 3);
    const pgUrl = pgSchemaUrl(pg.url);
    const p = await openStore(pgUrl);
    assert.deepEqual(await importJsonl(p, f1), { imported: 3, duplicates: 0, errors: [] });
    const f2 = join(dir, 'p.jsonl');
    await exportJsonl(p, f2);
    const c = await openStore(join(dir, 'c.db'));
    await importJsonl(c, f2);
    for (const e of exps) assert.deepEqual(await c.get(e.id), await a.get(e.id));
    assert.equal(readFileSync(f1, 'utf8'), readFileSync(f2, 'utf8'));
    await Promise.all([a.close(), p.close(), c.close()]);
  },
);

test('import keeps good lines and names file:line and field of bad ones', async () => {
  const f = join(dir, 'mixed.jsonl');
  const bad = { ...makeExp('b1'), reward: 'high' };
  const badMask = { ...makeExp('b2'), actionMask: [2] };
  writeFileSync(
    f,
    [
      JSON.stringify(makeExp('g1')),
      '{not json',
      JSON.stringify(bad),
      '',
      JSON.stringify(badMask),
      JSON.stringify(makeExp('g2')),
    ].join('\n') + '\n',
  );
  const s = await openStore(join(dir, 'imp.db'));
  const r = await importJsonl(s, f, 1);
  assert.equal(r.imported, 2);
  assert.deepEqual(
    r.errors.map((e) => e.message.replace(f, 'F').split(':').slice(0, 3).join(':')),
    ['F:2: invalid JSON', "F:3: field 'reward'", "F:5: field 'actionMask'"],
  );
  assert.deepEqual(
    (await s.list()).map((e) => e.id),
    ['g1', 'g2'],
  );
  const again = await importJsonl(s, f);
  assert.equal(again.duplicates, 2);
  await s.close();
});

test('rft buffer stats / ls / show / export / import', async () => {
  const run = join(dir, 'run1');
  const s = await openStore(join(run, 'buffer.db'));
  await s.appendExperiences(exps);
  await s.close();
  const st = await cli(['buffer', 'stats', run, '--json']);
  assert.equal(st.code, 0);
  const j = JSON.parse(st.out);
  assert.deepEqual([j.total, j.bySource, j.byStatus], [3, { usual: 2, expert: 1 }, { ok: 2, infra_failure: 1 }]);
  assert.match((await cli(['buffer', 'stats', run])).out, /experiences {2}3/);
  const ls = await cli(['buffer', 'ls', run, '--status', 'ok', '--source', 'usual']);
  assert.match(ls.out, /j1/);
  assert.doesNotMatch(ls.out, /j2|j3/);
  assert.match(ls.out, /1 of 1 shown/);
  assert.equal(
    (await cli(['buffer', 'ls', run, '--json', '--sort', 'useCount', '--desc', '--limit', '1'])).out
      .split('\n')
      .map((l) => JSON.parse(l).id)
      .join(),
    'j2',
  );
  await assert.rejects(cli(['buffer', 'ls', run, '--source', 'nope']), /--source/);
  const show = await cli(['buffer', 'show', run, 'j2']);
  assert.match(show.out, /infra_failure \(sandbox crashed\)/);
  assert.match(show.out, /--- tokens/);
  assert.equal((await cli(['buffer', 'show', run, 'zzz'])).code, 1);
  const out = join(dir, 'cli.jsonl');
  assert.match((await cli(['buffer', 'export', run, '--out', out])).out, /exported 3/);
  const imp = await cli(['buffer', 'import', join(dir, 'cli-copy.db'), out]);
  assert.equal(imp.code, 0);
  assert.match(imp.out, /imported 3/);
});

test('rft buffer stats / export / ls take a run id of the registry and agree with the buffer file', async () => {
  const ws = join(dir, 'ws');
  const { RunRegistry } = await import('../../backend/buffer/runs.js');
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({ name: 'byid', config: {} });
  const s = await openStore(run.dbPath);
  await s.appendExperiences(exps.map((e) => ({ ...e, runId: run.id })));
  await s.close();
  const byFile = JSON.parse((await cli(['buffer', 'stats', run.dbPath, '--json'])).out);
  const byId = JSON.parse((await cli(['buffer', 'stats', run.id, '--workspace', ws, '--json'])).out);
  assert.equal(byFile.total, 3);
  assert.deepEqual(byId, byFile);
  const out = join(dir, 'byid.jsonl');
  assert.match((await cli(['buffer', 'export', run.id, '--workspace', ws, '--out', out])).out, /exported 3 /);
  assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 3);
  assert.match((await cli(['buffer', 'ls', run.id, '--workspace', ws])).out, /3 of 3 shown/);
  // A name that is neither a file, a run folder nor a run id is refused; no empty buffer is made for it.
  await assert.rejects(
    cli(['buffer', 'stats', 'no-such-run', '--workspace', ws]),
    /'no-such-run': no such buffer file or run folder .*no run of that id in .*runs\.json/,
  );
  assert.equal(existsSync('no-such-run'), false);
});
