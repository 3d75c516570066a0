// Task synthesis through an OpenAI-compatible endpoint (proposer `endpoint`, and the same code path
// as `model`): a real HTTP server in this test speaks the chat-completions API and answers each
// request with a proposal; the run's synthesis hook asks it with the configured prompt, checks
// every proposal with math_answer on its reference, stores the accepted ones with their origin and
// hands them to the task feed. Refused proposals are counted by reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { validateRunConfig } from '../../backend/core/config.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { loadTasks, TaskFeed } from '../../backend/coordinator/setup/tasks.js';
import { storedSynthesizedTasks, taskSynthesis } from '../../backend/coordinator/task-synthesis.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { modelProposer } from '../../backend/explorer/task-proposers.js';
import { OpenAIRolloutModel } from '../../backend/explorer/openai-model.js';

async function body(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of req) s += c;
  return s;
}

/**
 * A chat-completions server: the proposal of index i (the client sends seed = base + i) gets reply
 * i % replies.length, a function of the user message; requests may arrive in any order.
 */
async function chatServer(replies: ((user: string, i: number) => string)[], base = 0) {
  const seen: { user: string; auth?: string; model: string }[] = [];
  const srv = createServer(async (req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404).end('{}');
      return;
    }
    const b = JSON.parse(await body(req)) as {
      model: string;
      seed: number;
      messages: { role: string; content: string }[];
    };
    const user = b.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    const k = seen.length;
    seen.push({ user, auth: req.headers.authorization, model: b.model });
    const content = replies[(b.seed - base) % replies.length]!(user, b.seed - base);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: `c${k}`,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      }),
    );
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => srv.close(() => r())),
  };
}

/** The expression of a `Compute EXPR.` prompt, with its first operand plus `d`; its value in JS. */
function shifted(user: string, d: number): { prompt: string; value: number } {
  const expr = /Compute (.+?)\. Put/.exec(user)![1]!;
  const fresh = expr.replace(/\d+/, (n) => String(Number(n) + d));
  return {
    prompt: `Compute ${fresh}. Put the result in <answer></answer>.`,
    value: Function(`return (${fresh});`)() as number,
  };
}

test('endpoint proposer: a real chat server proposes, the reward checks, accepted tasks are stored with their origin', async () => {
  const replies = [
    // A good task with its solution (prose around the JSON is fine).
    (u: string, i: number) => {
      const s = shifted(u, 100 + i);
      return `Here it is: ${JSON.stringify({ prompt: s.prompt, answer: String(s.value), solution: `<answer>${s.value}</answer>` })}`;
    },
    // A task without a solution: unverifiable.
    (u: string) => JSON.stringify({ prompt: shifted(u, 200).prompt, answer: String(shifted(u, 200).value) }),
    // A wrong solution: fails the check.
    (u: string) => {
      const s = shifted(u, 300);
      return JSON.stringify({ prompt: s.prompt, answer: String(s.value), solution: `<answer>${s.value + 1}</answer>` });
    },
    // Not a task.
    () => 'I would rather not.',
  ];
  // The round's seed: cfg.seed * 1_000_003 + step (task-synthesis.ts).
  const server = await chatServer(replies, 3 * 1_000_003);
  const dir = mkdtempSync(join(tmpdir(), 'rft-synth-ep-'));
  const store = await openStore(join(dir, 'buffer.db'));
  process.env.RFT_SYNTH_TEST_KEY = 'sk-test-1';
  try {
    const { config: cfg, issues } = validateRunConfig({
      seed: 3,
      taskset: {
        builtin: 'arith',
        size: 12,
        pipeline: [
          { name: 'dedupe' },
          {
            name: 'synthesize',
            proposer: 'endpoint',
            per_step: 2,
            attempts: 8,
            prompt: 'Make a new task from: {prompt} (answer {answer})',
            endpoint: { base_url: server.url, model: 'proposer-1', api_key_env: 'RFT_SYNTH_TEST_KEY' },
          },
        ],
      },
      workflow: { name: 'single_turn', reward: 'math_answer' },
      explorer: { tasks_per_step: 4 },
    });
    assert.ok(cfg, JSON.stringify(issues));
    const pools = await loadTasks(cfg);
    const tok = CharTokenizer.train(pools.train.map((t) => t.prompt!));
    const feed = new TaskFeed(cfg, pools.train);
    const rounds: object[] = [];
    const hook = taskSynthesis(cfg, { runId: 'r1', store, feed, pools, tok, onRound: (r) => rounds.push(r) })!;
    assert.ok(hook);
    await store.putTasks('r1', pools.train);
    const step0 = feed.next(4);
    // The endpoint is the proposer: the rollout model passed in is not asked.
    await hook.afterStep(step0, undefined as never, 0);
    assert.equal(server.seen.length, 8, 'attempts: 8 requests');
    assert.ok(server.seen.every((r) => r.model === 'proposer-1'));
    assert.ok(server.seen.every((r) => r.auth === 'Bearer sk-test-1'));
    for (const r of server.seen)
      assert.match(
        r.user,
        /^Make a new task from: Compute .+\. Put the result in <answer><\/answer>\. \(answer -?\d+\)$/,
      );
    // Requests 0 and 4 carry good tasks; per_step 2 stops the round after the second, so request 7 is never looked at.
    assert.deepEqual(rounds, [
      {
        step: 0,
        added: 2,
        total: 2,
        proposed: 5,
        accepted: 2,
        unverifiable: 1,
        failed_check: 1,
        unchecked: 0,
        malformed: 1,
        duplicate: 0,
      },
    ]);
    const stored = await storedSynthesizedTasks(store, 'r1');
    assert.equal(stored.length, 2);
    for (const t of stored) {
      assert.equal(t.metadata?.origin, 'synth:endpoint');
      assert.ok(step0.some((p) => p.id === t.metadata?.parent));
      assert.equal(t.taskset, 'builtin:arith');
      assert.equal(Number(t.answer), Function(`return (${/Compute (.+?)\. Put/.exec(t.prompt!)![1]!});`)());
      assert.equal(t.metadata?.reference, `<answer>${t.answer}</answer>`);
    }
    // In the feed: the selector now holds them.
    assert.equal(pools.train.length, 14);
    const ids = new Set(stored.map((t) => t.id));
    const picked = feed.next(200).filter((t) => ids.has(t.id));
    assert.ok(picked.length >= 1, 'synthesized tasks are sampled');
    // The same step again (a step re-explored to fill a batch) gets no second round.
    await hook.afterStep(step0, undefined as never, 0);
    assert.equal(server.seen.length, 8);
  } finally {
    delete process.env.RFT_SYNTH_TEST_KEY;
    await store.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('model proposer: the rollout model (here an OpenAI-compatible one) is asked; a failed request is an unchecked proposal', async () => {
  const server = await chatServer([
    () =>
      '{"prompt": "Compute 50 + 1. Put the result in <answer></answer>.", "answer": "51", "solution": "<answer>51</answer>"}',
  ]);
  try {
    const tok = CharTokenizer.train(['Compute 1 + 2. Put the result in <answer></answer>. {}"']);
    const parent = {
      id: 'p1',
      taskset: 't',
      domain: 'math' as const,
      prompt: 'Compute 1 + 2. Put the result in <answer></answer>.',
      answer: '3',
    };
    const live = new OpenAIRolloutModel({ baseUrl: server.url, model: 'm', tokenizer: tok });
    const ps = await modelProposer({ model: () => live, maxNewTokens: 64, temperature: 1 })([parent], 2, {
      step: 0,
      seed: 1,
    });
    assert.equal(ps.length, 2);
    assert.equal(ps[0]!.task?.prompt, 'Compute 50 + 1. Put the result in <answer></answer>.');
    assert.equal(ps[0]!.reference, '<answer>51</answer>');
    // The default prompt names the parent task and its answer.
    assert.match(server.seen[0]!.user, /Task: Compute 1 \+ 2\. .*\nAnswer: 3\n/);
    const down = new OpenAIRolloutModel({
      baseUrl: 'http://127.0.0.1:9',
      model: 'm',
      tokenizer: tok,
      maxRetries: 0,
      timeoutMs: 2000,
    });
    const failed = await modelProposer({ model: () => down, maxNewTokens: 8, temperature: 1 })([parent], 1, {
      step: 0,
      seed: 1,
    });
    assert.equal(failed[0]!.infra, true);
    assert.equal(failed[0]!.task, undefined);
    // A local model whose prompt does not fit its context: every proposal is an infra failure, not a crash.
    const { Transformer } = await import('../../backend/model/transformer.js');
    const { presetConfig } = await import('../../backend/model/config.js');
    const m = new Transformer(presetConfig('tiny-0.4m', tok.vocabSize, { maxSeqLen: 16 }), 1);
    try {
      const tiny = await modelProposer({
        model: () => new LocalRolloutModel(m, tok, 0),
        maxNewTokens: 4,
        temperature: 1,
      })([parent], 2, { step: 0, seed: 1 });
      assert.ok(tiny.every((p) => p.infra && /generation failed/.test(p.error!)));
    } finally {
      m.dispose();
    }
  } finally {
    await server.close();
  }
});

/**
 * A server whose replies are hostile: `big` sends a 10 MB JSON reply (without a content-length,
 * chunk by chunk, so only the streaming count can stop it), `slow` sends its headers and then one
 * byte every 200 ms for ever. Records how many bytes each reply got out before the client hung up.
 */
async function hostileServer(kind: 'big' | 'slow') {
  const sent: number[] = [];
  const srv = createServer(async (req, res) => {
    await body(req);
    const k = sent.push(0) - 1;
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = kind === 'big' ? 'x'.repeat(64 << 10) : ' ';
    const head = '{"choices":[{"finish_reason":"stop","message":{"content":"';
    res.write(head);
    sent[k] = head.length;
    const total = 10_000_000;
    const push = () => {
      if (res.destroyed || sent[k]! >= total) return res.end('"}}]}');
      res.write(chunk);
      sent[k] = sent[k]! + chunk.length;
      if (kind === 'big') setImmediate(push);
      else setTimeout(push, 200);
    };
    res.on('close', () => undefined);
    push();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    sent,
    close: () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
}

for (const kind of ['big', 'slow'] as const) {
  test(`endpoint proposer: a ${kind === 'big' ? '10 MB' : 'never-ending slow'} reply is cut off (${kind === 'big' ? 'max_reply_bytes' : 'timeout_ms'}) and counted as a failed proposal`, async () => {
    const server = await hostileServer(kind);
    const dir = mkdtempSync(join(tmpdir(), 'rft-synth-cap-'));
    const store = await openStore(join(dir, 'buffer.db'));
    try {
      const endpoint = {
        base_url: server.url,
        model: 'm',
        timeout_ms: kind === 'slow' ? 1500 : 60_000,
        ...(kind === 'big' ? { max_reply_bytes: 100_000 } : {}),
      };
      const { config: cfg, issues } = validateRunConfig({
        seed: 1,
        taskset: {
          builtin: 'arith',
          size: 4,
          pipeline: [{ name: 'synthesize', proposer: 'endpoint', per_step: 1, attempts: 2, endpoint }],
        },
        workflow: { name: 'single_turn', reward: 'math_answer' },
        explorer: { tasks_per_step: 2 },
      });
      assert.ok(cfg, JSON.stringify(issues));
      const pools = await loadTasks(cfg);
      const tok = CharTokenizer.train(pools.train.map((t) => t.prompt!));
      const rounds: { proposed: number; accepted: number; unchecked: number }[] = [];
      const hook = taskSynthesis(cfg, {
        runId: 'r',
        store,
        feed: new TaskFeed(cfg, pools.train),
        pools,
        tok,
        onRound: (r) => rounds.push(r),
      })!;
      await hook.afterStep(pools.train.slice(0, 2), undefined as never, 0);
      assert.equal(rounds.length, 1, 'the round ended');
      assert.equal(rounds[0]!.accepted, 0);
      assert.equal(
        rounds[0]!.unchecked,
        2,
        `both proposals failed on the proposer's side: ${JSON.stringify(rounds[0])}`,
      );
      // The client stopped reading: far less than the 10 MB left the server.
      assert.ok(server.sent.length >= 2);
      for (const n of server.sent) assert.ok(n < 5_000_000, `the client hung up early (${n} bytes sent)`);
      // The reason each one failed (the proposer's error) names the limit.
      const live = new OpenAIRolloutModel({
        baseUrl: server.url,
        model: 'm',
        tokenizer: tok,
        maxRetries: 0,
        timeoutMs: endpoint.timeout_ms,
        maxReplyBytes: 100_000,
      });
      const [g] = await live.generate([tok.encode('Compute 1 + 2.')], { maxNewTokens: 8 });
      assert.equal(g!.finishReason, 'error');
      assert.match(
        g!.infraError!,
        kind === 'big' ? /reply is over 100000 bytes \(the max_reply_bytes limit\)/ : /no reply within 1500 ms/,
      );
    } finally {
      await store.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
