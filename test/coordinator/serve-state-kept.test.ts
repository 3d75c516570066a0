// A serve run keeps its episodes' state as it changes, not only when it closes: a process killed
// before its close (a stop landing while a checkpoint load blocks the event loop past the stop's
// grace) still leaves the open episodes and the rewarded rows waiting for their group for `rft
// resume`, and a group written to the buffer is never kept as waiting too (no row written twice).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { PolicyGate } from '../../backend/explorer/openai-server/policy.js';
import { openServeEndpoint } from '../../backend/coordinator/placement/serve-endpoint.js';
import { makeHfModel } from '../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-serve-state-'));
after(() => rmSync(root, { recursive: true, force: true }));

interface Kept {
  book: { open: { id: string }[]; closed: [string, string][] };
  groups: [string, unknown[]][];
}

async function until<T>(what: string, f: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const v = await f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('the episodes are kept in the buffer while serving, before any close', async () => {
  const ck = loadCheckpoint(
    makeHfModel(join(root, 'model'), {
      architecture: 'LlamaForCausalLM',
      tokenizer: 'llama3',
      hidden: 16,
      layers: 1,
      heads: 2,
      kvHeads: 1,
      intermediate: 24,
      tied: true,
      seed: 3,
    }),
  );
  const { config, issues } = validateRunConfig({
    name: 'served',
    mode: 'serve',
    model: { checkpoint: join(root, 'model') },
    taskset: { path: join(root, 'tasks.jsonl') },
    workflow: { reward: 'exact_match' },
    algorithm: { name: 'grpo' },
    explorer: { repeat_times: 2 },
    serve: { limits: { max_tokens: 3 }, reward_timeout_seconds: 3600 },
  });
  assert.deepEqual(issues, []);
  const store = await openStore(`sqlite:${join(root, 'buffer.db')}`);
  const gate = new PolicyGate(
    { model: new LocalRolloutModel(ck.model, ck.tokenizer!, 0), transformer: ck.model },
    'served',
  );
  const endpoint = await openServeEndpoint({
    cfg: config!,
    runId: 'r1',
    runDir: root,
    store,
    metrics: { write: () => undefined },
    gate,
    algorithm: () => ({ name: 'grpo', params: {} }),
  });
  const client = new OpenAI({
    baseURL: endpoint.server.baseURL,
    apiKey: readFileSync(join(root, 'serve-token'), 'utf8').trim(),
    maxRetries: 0,
  });
  const call = (id: string, task: string) =>
    client.chat.completions.create({
      model: 'served',
      messages: [{ role: 'user', content: 'Say yes.' }],
      metadata: { episode_id: id, task_id: task },
    });
  const reward = (id: string) => client.post('/rft/rewards', { body: { rewards: [{ episode_id: id, reward: 1 }] } });
  try {
    await call('open-1', 't1');
    await call('waits-1', 't2');
    await reward('waits-1');
    // No close: what a killed process leaves behind.
    const kept = await until('the open episode and the waiting row kept', async () => {
      const s = await store.getState<Kept>('r1', 'serve_episodes');
      return s?.book.open.some((e) => e.id === 'open-1') && s.groups.length === 1 ? s : undefined;
    });
    assert.deepEqual(
      kept.book.open.map((e) => e.id),
      ['open-1'],
    );
    assert.deepEqual(kept.book.closed, [['waits-1', 'rewarded']]);
    // The second episode of task t2 completes the group: written to the buffer, no longer kept waiting.
    // While its rows are being written (held here), what is kept already counts it as rewarded: a
    // process killed mid-write must not reopen it (a second reward would write its rows again).
    await call('waits-2', 't2');
    const append = store.appendExperiences.bind(store);
    let release!: () => void;
    let entered!: () => void;
    const inWrite = new Promise<void>((r) => (entered = r));
    store.appendExperiences = async (...a) => {
      entered();
      await new Promise<void>((r) => (release = r));
      return append(...a);
    };
    const rewarded = reward('waits-2');
    await inWrite;
    const mid = await until('a save made while the group is being written', async () => {
      const s = await store.getState<Kept>('r1', 'serve_episodes');
      return s?.book.closed.some(([id]) => id === 'waits-2') ? s : undefined;
    });
    assert.deepEqual(
      mid.book.open.map((e) => e.id),
      ['open-1'],
      'the episode being rewarded is not kept as open',
    );
    release();
    await rewarded;
    store.appendExperiences = append;
    const after = await until('the group written and no longer kept', async () => {
      const s = await store.getState<Kept>('r1', 'serve_episodes');
      return s?.groups.length === 0 && s.book.closed.length === 2 ? s : undefined;
    });
    assert.deepEqual(
      after.book.open.map((e) => e.id),
      ['open-1'],
    );
    assert.equal(await store.count({ runId: 'r1' }), 2);
  } finally {
    await endpoint.close();
    await store.close();
    ck.model.dispose();
  }
});
