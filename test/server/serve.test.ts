// Integration: spawns `rft serve` on a real SQLite buffer and talks JSON-RPC to it over stdio.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeBuffer } from '../../tools/make-buffer.js';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { spawnServe, type Served } from '../../tools/spawn-serve.js';
import { ErrorCodes } from '../../backend/core/protocol.js';

let s: Served;
async function until(f: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
}
let bufferPath: string;
const logs: { level: string; msg: string }[] = [];

before(async () => {
  bufferPath = await makeBuffer(120);
  s = spawnServe(['--workspace', tmpdir()], { RFT_LOG_LEVEL: 'debug' });
  s.conn.onNotification('log/line', (l: unknown) => void logs.push(l as { level: string; msg: string }));
});
after(async () => {
  await s.close();
});

test('hello reports capabilities honestly', async () => {
  const h = await s.request('server/hello', { clientVersion: 'test' });
  assert.equal(h.pid, s.child.pid);
  assert.equal(h.capabilities.buffer, true);
  assert.equal(h.capabilities.taskset, true);
  assert.equal(h.capabilities.runControl, true);
});

test('log lines arrive as notifications, not on stdout', async () => {
  // The server logged 'backend serving ...' at start; stdout carried only JSON-RPC (else parsing failed above).
  await s.request('server/hello', { clientVersion: 'test' });
  assert.ok(
    logs.some((l) => l.msg.includes('serving JSON-RPC on stdio')),
    JSON.stringify(logs),
  );
});

test('requests before a buffer is open fail with a clear error', async () => {
  await assert.rejects(s.request('buffer/counts', {}), /no buffer is open/);
});

test('buffer/open, counts, list with filters and paging, get, group', async () => {
  const o = await s.request('buffer/open', { path: bufferPath });
  assert.equal(o.path, bufferPath);
  assert.equal(o.counts.usual, 120);
  assert.equal(o.counts.expert, 0);
  assert.equal(o.counts.infraFailure, 7); // i % 17 == 16 for i < 120: 16,33,50,67,84,101,118

  const page = await s.request('buffer/list', { offset: 10, limit: 5 });
  assert.equal(page.total, 120);
  assert.deepEqual(
    page.rows.map((r) => r.id),
    ['e00010', 'e00011', 'e00012', 'e00013', 'e00014'],
  );
  assert.equal(page.rows[0]!.responsePreview, 'answer 10');
  assert.equal('responseTokens' in page.rows[0]! && typeof page.rows[0]!.responseTokens, 'number');

  const f = await s.request('buffer/list', {
    filter: { runId: 'run-a', minReward: 0.8 },
    offset: 0,
    limit: 100,
    sort: 'reward',
    descending: true,
  });
  assert.ok(f.total > 0);
  assert.ok(f.rows.every((r) => r.runId === 'run-a' && r.reward >= 0.8));
  for (let i = 1; i < f.rows.length; i++) assert.ok(f.rows[i - 1]!.reward >= f.rows[i]!.reward);

  const t = await s.request('buffer/list', { filter: { text: 'ANSWER 11' }, offset: 0, limit: 100 });
  assert.equal(t.total, 11); // e11 and e110..e119
  assert.ok(t.rows.every((r) => r.responsePreview.startsWith('answer 11')));

  // The task's own columns (its metadata) come with the detail (issue 40 item 1).
  const store = new SqliteStore(bufferPath);
  await store.putTasks('run-a', [
    { id: 't2', taskset: 'mine.jsonl', domain: 'math', prompt: 'question 2', metadata: { difficulty: 'easy' } },
  ]);
  await store.close();
  const e = await s.request('buffer/get', { id: 'e00042' });
  assert.ok(e);
  assert.deepEqual(e.taskMetadata, { difficulty: 'easy' });
  assert.equal((await s.request('buffer/get', { id: 'e00041' }))?.taskMetadata, undefined, 'a task not stored');
  assert.equal(e.responseText, 'answer 42');
  assert.equal(e.logprobs.length, e.responseTokens.length);
  assert.equal(await s.request('buffer/get', { id: 'nope' }), null);

  const g = await s.request('buffer/group', { groupId: 'g3' });
  assert.deepEqual(g.map((x) => x.id).sort(), ['e00012', 'e00013', 'e00014', 'e00015']);
});

test('buffer/list clamps the page size', async () => {
  const r = await s.request('buffer/list', { buffer: { path: bufferPath }, offset: 0, limit: 1e9 });
  assert.equal(r.rows.length, 120);
});

test('buffer/export writes every matching experience as JSONL', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'rft-exp-')), 'out.jsonl');
  const r = await s.request('buffer/export', { file, filter: { source: 'usual', status: 'infra_failure' } });
  assert.equal(r.written, 7);
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(lines.length, 7);
  assert.ok(lines.every((x) => x.status === 'infra_failure' && Array.isArray(x.logprobs)));
});

test('run control names what is missing: the config file, the run', async () => {
  const notFound = (re: RegExp) => (err: { code?: number; message: string }) => {
    assert.equal(err.code, ErrorCodes.NotFound);
    assert.match(err.message, re);
    return true;
  };
  await assert.rejects(
    s.request('runs/start', { configPath: 'missing.rft.yaml' }),
    notFound(/config 'missing.rft.yaml' not found/),
  );
  await assert.rejects(s.request('runs/stop', { runId: 'no-such-run' }), notFound(/no run 'no-such-run'/));
  await assert.rejects(s.request('runs/resume', { runId: 'no-such-run' }), notFound(/no run 'no-such-run'/));
});

test('buffer/get gives the text of each response token from the run tokenizer', async () => {
  const e = await s.request('buffer/get', { id: 'e00007' });
  assert.deepEqual(e?.responsePieces, [...'answer 7']);
});

test('feedback: promote, promote with an edited response, reject, rate, undo — all in the buffer', async () => {
  const changed: { counts: { expert: number } }[] = [];
  const sub = s.conn.onNotification(
    'buffer/changed',
    (c: unknown) => void changed.push(c as { counts: { expert: number } }),
  );
  const p1 = await s.request('feedback/promote', { id: 'e00009' });
  assert.equal(p1.kind, 'promote');
  const expert = await s.request('buffer/get', { id: p1.expertId });
  assert.equal(expert?.source, 'expert');
  assert.equal(expert?.responseText, 'answer 9');
  assert.deepEqual(
    expert?.logprobs,
    (await s.request('buffer/get', { id: 'e00009' }))?.logprobs,
    'a plain promotion keeps the behaviour log-probs',
  );

  const p2 = await s.request('feedback/promote', { id: 'e00010', editedResponse: 'the answer is 10' });
  const edited = await s.request('buffer/get', { id: p2.expertId });
  assert.equal(edited?.responseText, 'the answer is 10');
  assert.equal(edited?.modelVersion, -1);
  assert.equal(edited?.feedback?.editedFrom, 'e00010');
  assert.equal(
    edited?.responseTokens.length,
    'the answer is 10'.length + 1,
    're-tokenised with the run tokenizer, closed with the end marker (chat layout)',
  );
  assert.equal((await s.request('buffer/counts', {})).expert, 2);
  await until(() => changed.length >= 2);
  assert.equal(changed.at(-1)!.counts.expert, 2);

  await s.request('feedback/reject', { id: 'e00011' });
  assert.equal((await s.request('buffer/get', { id: 'e00011' }))?.feedback?.rejected, true);
  assert.equal((await s.request('buffer/counts', {})).rejected, 1);
  const rate = await s.request('feedback/rate', { id: 'e00012', rating: 4 });
  assert.equal((await s.request('buffer/get', { id: 'e00012' }))?.feedback?.rating, 4);

  // Undo the latest (the rating), then a named one (the edited promotion).
  const u1 = await s.request('feedback/undo', {});
  assert.equal(u1.undone?.changeId, rate.changeId);
  assert.equal((await s.request('buffer/get', { id: 'e00012' }))?.feedback?.rating, undefined);
  const u2 = await s.request('feedback/undo', { changeId: p2.changeId });
  assert.equal(u2.undone?.changeId, p2.changeId);
  assert.equal(await s.request('buffer/get', { id: p2.expertId }), null);
  assert.equal((await s.request('buffer/counts', {})).expert, 1);
  // Undoing the same change twice is refused.
  await assert.rejects(s.request('feedback/undo', { changeId: p2.changeId }), { code: -32009 });
  sub.dispose();
});

test('feedback: bulk promote the top-1 per task, then undo it as one change', async () => {
  const before = (await s.request('buffer/counts', {})).expert;
  const r = await s.request('feedback/bulkPromote', { topK: 1, filter: { runId: 'run-a' } });
  // run-a holds the even i, whose tasks (i mod 5) cover t0..t4: one new expert per task.
  const experts = r.experienceIds.filter((id) => id.includes('~expert~'));
  assert.equal(experts.length, 5);
  const originals = r.experienceIds.filter((id) => !id.includes('~expert~'));
  for (const id of originals) {
    const e = (await s.request('buffer/get', { id }))!;
    const sameTask = await s.request('buffer/list', {
      filter: { runId: 'run-a', taskId: e.taskId, status: 'ok', rejected: false, source: 'usual' },
      sort: 'reward',
      descending: true,
      offset: 0,
      limit: 1,
    });
    assert.equal(sameTask.rows[0]!.reward, e.reward, `${id} is the best of ${e.taskId}`);
  }
  assert.equal((await s.request('buffer/counts', {})).expert, before + 5);
  await s.request('feedback/undo', { changeId: r.changeId });
  assert.equal((await s.request('buffer/counts', {})).expert, before);
});

test('add an expert example, tokenised with the run tokenizer', async () => {
  const r = await s.request('feedback/addExpert', {
    taskId: 't9',
    prompt: 'question 9',
    response: 'answer 99',
    runId: 'run-a',
  });
  const e = await s.request('buffer/get', { id: r.expertId });
  assert.equal(e?.source, 'expert');
  assert.equal(e?.responseTokens.length, 'answer 99'.length + 1, 'the response text + the end marker (chat layout)');
  await s.request('feedback/undo', { changeId: r.changeId });
});

test('taskset/validate: every bad record with its line and field, the good ones counted; unsaved text too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-ts-'));
  const file = join(dir, 'math.jsonl');
  writeFileSync(
    file,
    [
      '{"id":"a","prompt":"1+1?","answer":"2"}',
      '{"id":"b","prompt":"","answer":"3"}',
      'not json',
      '{"id":"a","prompt":"dup","answer":"1"}',
      '{"id":"c","prompt":"2+2?","answer":"4"}',
    ].join('\n') + '\n',
  );
  const r = await s.request('taskset/validate', { file });
  assert.equal(r.tasks, 2);
  assert.deepEqual(
    r.issues.map((i) => i.line),
    [2, 3, 4],
  );
  assert.equal(r.issues[0]!.field, 'prompt');
  assert.equal(r.issues[2]!.field, 'id');
  assert.match(r.issues[2]!.message, /duplicate id 'a'/);
  const unsaved = await s.request('taskset/validate', { file, text: '{"id":"a","prompt":"1+1?","answer":"2"}\n' });
  assert.deepEqual(unsaved, { file, tasks: 1, issues: [] });
  const missing = await s.request('taskset/validate', { file: join(dir, 'nope.jsonl') });
  assert.equal(missing.issues.length, 1);
  assert.match(missing.issues[0]!.message, /ENOENT|no such file/);
});

test('taskset/watch pushes a fresh report when the file changes on disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-tw-'));
  const file = join(dir, 'k12.jsonl');
  writeFileSync(file, '{"id":"a","prompt":"p","answer":"1"}\n');
  const reports: { file: string; tasks: number; issues: unknown[] }[] = [];
  const sub = s.conn.onNotification('taskset/report', (r: unknown) => void reports.push(r as (typeof reports)[number]));
  await s.request('taskset/watch', { files: [file] });
  await until(() => reports.length >= 1);
  assert.deepEqual(reports[0], { file, tasks: 1, issues: [] });
  writeFileSync(file, '{"id":"a","prompt":"p","answer":"1"}\n{"id":"b","answer":"2"}\n');
  await until(() => reports.length >= 2);
  assert.equal(reports[1]!.tasks, 1);
  assert.deepEqual(reports[1]!.issues, [
    {
      file,
      line: 2,
      field: 'prompt',
      message: (reports[1]!.issues[0] as { message: string }).message,
      severity: 'error',
    },
  ]);
  sub.dispose();
});

test('a bad request input names the field', async () => {
  await assert.rejects(
    s.request('feedback/bulkPromote', { topK: 0 }),
    (err: { code?: number; message: string; data?: { field?: string } }) => {
      assert.equal(err.code, -32002);
      assert.equal(err.data?.field, 'topK');
      return true;
    },
  );
});

test('shutdown ends the process', async () => {
  const exited = new Promise<number | null>((r) => s.child.once('exit', (c) => r(c)));
  await s.request('server/shutdown', {});
  assert.equal(await exited, 0);
});
