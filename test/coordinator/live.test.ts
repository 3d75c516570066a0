// Live tasksets, in a run of each local process model: while the run goes on, a task line appended
// to the taskset file is explored in a later step, a bad line next to it is skipped (the run goes
// on), and a line appended to the experts file becomes an expert experience in the buffer.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { openStore } from '../../backend/buffer/storage/index.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-live-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function config(method: 'memory' | 'checkpoint', tasks: string, experts: string): RunConfig {
  const format = { id_key: 'key', prompt_key: 'text', response_key: 'rev' };
  const { config, issues } = validateRunConfig({
    name: 'live',
    seed: 5,
    model: { size: 'tiny-0.4m', max_seq_len: 32 },
    tokenizer: { kind: 'char' },
    taskset: { path: tasks, format },
    eval: { path: tasks, format },
    experts: { path: experts, format: { prompt_key: 'text', response_key: 'demo' } },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    algorithm: { name: 'grpo' },
    explorer: {
      tasks_per_step: 2,
      repeat_times: 2,
      sampling: { max_new_tokens: 3 },
      eval_sampling: { max_new_tokens: 3 },
    },
    trainer: { batch_size: 4, steps: 500 },
    placement: method,
  });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const method of ['memory', 'checkpoint'] as const) {
  test(`synchronizer ${method}: saving the taskset and experts files feeds the running run`, async () => {
    const tasks = join(dir, `tasks-${method}.jsonl`);
    const experts = join(dir, `experts-${method}.jsonl`);
    writeFileSync(
      tasks,
      ['abc', 'de']
        .map((w) => JSON.stringify({ key: w, text: `reverse: ${w}`, rev: [...w].reverse().join('') }))
        .join('\n') + '\n',
    );
    writeFileSync(experts, JSON.stringify({ text: 'reverse: ab', demo: 'ba' }) + '\n');
    const ws = mkdtempSync(join(dir, `ws-${method}-`));
    const stop = new AbortController();
    const run = runJob({ config: config(method, tasks, experts), workspace: ws, runId: method, signal: stop.signal });
    run.catch(() => undefined);
    const db = join(ws, '.rft', 'runs', method, 'buffer.db');
    let store: Awaited<ReturnType<typeof openStore>> | undefined;
    try {
      // Wait until the run explores (the files are watched from before its first step).
      const deadline = Date.now() + 120_000;
      for (;;) {
        if (Date.now() > deadline) throw new Error('the run never explored');
        if (existsSync(db)) {
          store ??= await openStore(db);
          if ((await store.list({ runId: method, source: 'usual', limit: 1 })).length > 0) break;
        }
        await sleep(100);
      }
      appendFileSync(
        tasks,
        '{"key": "bad", "rev": "x"}\n' + JSON.stringify({ key: 'new1', text: 'reverse: xyz', rev: 'zyx' }) + '\n',
      );
      appendFileSync(experts, JSON.stringify({ text: 'reverse: xyz', demo: 'zyx' }) + '\n');
      let sawNew = false;
      let expertRows = 0;
      while (Date.now() < deadline && !(sawNew && expertRows === 2)) {
        await sleep(200);
        sawNew = (await store!.list({ runId: method, source: 'usual', limit: 10_000 })).some(
          (e) => e.taskId === 'new1',
        );
        expertRows = (await store!.list({ runId: method, source: 'expert', limit: 100 })).length;
      }
      assert.ok(sawNew, 'the appended task was explored');
      assert.equal(expertRows, 2, 'the appended demonstration is an expert experience');
      const expert = (await store!.list({ runId: method, source: 'expert', limit: 100 })).find(
        (e) => e.promptText === 'reverse: xyz',
      );
      assert.equal(expert?.responseText, 'zyx');
    } finally {
      stop.abort();
      await store?.close();
      await run.catch(() => undefined);
    }
    // The bad line was skipped and the run went on to stop cleanly when asked.
    const s = await run.catch((e: Error) => e);
    assert.ok(!(s instanceof Error), s instanceof Error ? s.message : '');
  });
}
