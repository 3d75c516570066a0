// A serve run with real processes, in both placements that serve: `rft run` serves and trains
// (placement memory: in its own process; placement checkpoint: the explorer process serves and the
// trainer process trains, the served weights switching to each published checkpoint between
// requests), `rft stop` ends it with the usual summary and checkpoint, and `rft resume` serves the
// newest weights again with the episodes' state kept: an episode left open is rewarded after the
// resume, a rewarded one still waiting for its GRPO group is trained with it, a closed id stays closed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { cliCommand } from '../../../backend/coordinator/processes.js';
import { openStore } from '../../../backend/buffer/storage/index.js';
import { makeHfModel } from '../../../tools/hf-model.js';

const root = mkdtempSync(join(tmpdir(), 'rft-serve-resume-'));
after(() => rmSync(root, { recursive: true, force: true }));

const config = (placement: string) => `name: served
seed: 1
mode: serve
placement: ${placement}
model: { checkpoint: model }
taskset: { path: tasks.jsonl }
eval: { path: tasks.jsonl }
workflow: { reward: exact_match }
algorithm: { name: grpo }
explorer: { repeat_times: 2, eval_sampling: { max_new_tokens: 3 } }
trainer: { batch_size: 2, steps: 3, lr: 0.01 }
buffer: { storage: sqlite }
serve: { limits: { max_tokens: 4 }, reward_timeout_seconds: 3600 }
`;

let outs: (() => string)[] = [];

interface Proc {
  child: ChildProcess;
  out: () => string;
  exit: Promise<number | null>;
}

function rft(args: string[]): Proc {
  // Info-level logs: the process logs a failure shows (the test runner sets warn).
  const child = spawn(process.execPath, [...cliCommand(), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RFT_LOG_LEVEL: 'info' },
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b));
  child.stderr!.on('data', (b: Buffer) => (out += b));
  outs.push(() => out);
  return { child, out: () => out, exit: new Promise((r) => child.once('exit', (code) => r(code))) };
}

/** The client of the run once it serves (serve.json written), or the run's output if it exited first. */
async function ready(runDir: string, p: Proc): Promise<OpenAI> {
  const info = join(runDir, 'serve.json');
  let exited = false;
  void p.exit.then(() => (exited = true));
  while (!existsSync(info)) {
    assert.ok(!exited, `the run exited before serving:\n${p.out()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const { base_url, token_file } = JSON.parse(readFileSync(info, 'utf8'));
  return new OpenAI({ baseURL: base_url, apiKey: readFileSync(token_file, 'utf8').trim(), maxRetries: 0 });
}

const call = (client: OpenAI, id: string, task: string) =>
  client.chat.completions.create({
    model: 'served',
    messages: [{ role: 'user', content: 'Say yes.' }],
    metadata: { episode_id: id, task_id: task },
  });

async function reward(client: OpenAI, id: string, r: number): Promise<{ status: string; reason?: string }> {
  const a = (await client.post('/rft/rewards', { body: { rewards: [{ episode_id: id, reward: r }] } })) as {
    results: { status: string; reason?: string }[];
  };
  return a.results[0]!;
}

async function episode(client: OpenAI, id: string, task: string, r: number): Promise<void> {
  await call(client, id, task);
  assert.equal((await reward(client, id, r)).status, 'accepted');
}

/** Asks until the served version is V (the trainer trains, then the server switches). */
async function served(client: OpenAI, v: string): Promise<void> {
  for (;;) {
    const got = (
      await client.chat.completions.create({
        model: 'served',
        messages: [{ role: 'user', content: 'v?' }],
        max_tokens: 1,
      })
    ).system_fingerprint;
    if (got === v) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The machine-readable summary: the last line `rft run` / `rft resume` prints. */
function summaryOf(out: string): { trainer_steps: number; checkpoint: string; report: string } {
  const last = out.trim().split('\n').at(-1)!;
  return JSON.parse(last);
}

async function stopResumeFinish(placement: 'memory' | 'checkpoint'): Promise<void> {
  const dir = join(root, placement);
  mkdirSync(dir);
  makeHfModel(join(dir, 'model'), {
    architecture: 'Qwen2ForCausalLM',
    tokenizer: 'qwen3',
    hidden: 16,
    layers: 1,
    heads: 2,
    kvHeads: 1,
    intermediate: 24,
    tied: true,
    seed: 3,
  });
  writeFileSync(join(dir, 'tasks.jsonl'), '{"id": "q1", "prompt": "Say yes.", "answer": "yes", "domain": "text"}\n');
  writeFileSync(join(dir, 'config.yaml'), config(placement));
  const ws = join(dir, 'ws');
  const runDir = join(ws, '.rft', 'runs', 'sr');
  outs = [];
  const first = rft(['run', join(dir, 'config.yaml'), '--workspace', ws, '--run-id', 'sr', '--quiet']);
  try {
    let client = await ready(runDir, first);
    await episode(client, 'e0', 'q1', 1);
    await episode(client, 'e1', 'q1', 0);
    await served(client, 'v1');
    // An episode left open, and a rewarded one waiting for the second episode of its group.
    await call(client, 'open', 'q2');
    await episode(client, 'wait', 'q2', 1);

    const stop = spawnSync(process.execPath, [...cliCommand(), 'stop', 'sr', '--workspace', ws], { encoding: 'utf8' });
    assert.equal(stop.status, 0, stop.stderr);
    assert.equal(await first.exit, 0, first.out());
    const s1 = summaryOf(first.out());
    assert.equal(s1.trainer_steps, 1);
    assert.ok(existsSync(join(s1.checkpoint, 'rft.json')), s1.checkpoint);
    assert.ok(existsSync(s1.report), s1.report);
    await assert.rejects(client.models.list(), OpenAI.APIConnectionError);

    rmSync(join(runDir, 'serve.json'));
    const second = rft(['resume', 'sr', '--workspace', ws, '--quiet']);
    try {
      client = await ready(runDir, second);
      const again = await client.chat.completions.create({
        model: 'served',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 1,
      });
      assert.equal(again.system_fingerprint, 'v1', 'the newest weights are served after the resume');
      assert.equal((await reward(client, 'e0', 1)).reason, 'already rewarded');
      // The open episode is rewarded after the resume: with the waiting one, the group of q2 trains.
      assert.equal((await reward(client, 'open', 0)).status, 'accepted');
      await served(client, 'v2');
      await episode(client, 'e3', 'q3', 1);
      await episode(client, 'e4', 'q3', 0);
      assert.equal(await second.exit, 0, second.out());
    } finally {
      second.child.kill();
    }
    const s2 = summaryOf(second.out());
    assert.equal(s2.trainer_steps, 3);
    assert.ok(existsSync(join(s2.checkpoint, 'rft.json')), s2.checkpoint);
    const store = await openStore(join(runDir, 'buffer.db'));
    const q2 = await store.list({ runId: 'sr', taskId: 'q2' });
    await store.close();
    assert.deepEqual(q2.map((e) => e.metadata!.episode_id).sort(), ['open', 'wait']);
    assert.ok(
      q2.every((e) => e.advantages?.some((x) => x !== 0)),
      'one group: rewards 1 and 0',
    );
  } catch (e) {
    // The process logs say why (a placement checkpoint run's explorer and trainer log there).
    const logs = ['explorer', 'trainer'].map((n) => join(runDir, 'logs', `${n}.log`)).filter((f) => existsSync(f));
    const tail = logs.map((f) => `${f}:\n${readFileSync(f, 'utf8').split('\n').slice(-30).join('\n')}`);
    const runs = outs.map((o) => o().split('\n').slice(-40).join('\n'));
    throw new Error(`${(e as Error).stack}\n${tail.join('\n')}\n${runs.join('\n----\n')}`, { cause: e });
  } finally {
    first.child.kill();
  }
}

test('placement memory: a serve run stopped with rft stop resumes with its newest weights and its episodes', () =>
  stopResumeFinish('memory'));

test('placement checkpoint: the explorer process serves, the trainer process trains; stop and resume keep the episodes', () =>
  stopResumeFinish('checkpoint'));
