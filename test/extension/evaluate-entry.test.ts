// Evaluate from each entry point, with a real backend (`rft serve`, `rft eval`) on a workspace whose
// files use their own field names (`{id, problem, final}`) mapped by the workspace config's
// `format:` (issue 28 item 3): the palette on an exported Hugging Face folder and the user's eval
// file (was: `'prompt': required field is missing`), the palette's "eval set of train.rft.yaml", the
// Runs view on a run's checkpoint, the dashboard's Evaluate after the backend was killed and
// restarted; a failure ends the progress notification and says why in one line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { activateWith, deactivateFrom, until, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import { makeHfModel } from '../../tools/hf-model.js';
import { RunRegistry } from '../../backend/buffer/runs.js';

const { evaluateCheckpoint } = await import('../../src/commands/evaluate.js');
const { dashboardHandlers } = await import('../../src/webviews/dashboard.js');

const TASKS =
  Array.from({ length: 6 }, (_, i) =>
    JSON.stringify({ id: `q${i}`, problem: `What is ${i} + ${i}?`, final: String(2 * i) }),
  ).join('\n') + '\n';
const FORMAT = '{prompt_key: problem, response_key: final, id_key: id}';
const config = (root: string) => `model:
  checkpoint: ${root}exports/hf-v3
taskset:
  path: ${root}data/math.jsonl
  format: ${FORMAT}
eval:
  path: ${root}data/eval.jsonl
  format: ${FORMAT}
workflow:
  reward: math_answer
explorer:
  eval_sampling:
    max_new_tokens: 2
`;

test(
  'Evaluate: palette (HF folder, mapped file and config eval set), Runs view, dashboard after a backend restart; a failure ends the progress',
  { timeout: 600_000 },
  async () => {
    vscode.resetFake();
    const ws = workspaceDir({ 'data/math.jsonl': TASKS, 'data/eval.jsonl': TASKS, 'train.rft.yaml': config('') });
    const hf = makeHfModel(join(ws, 'exports', 'hf-v3'), {
      architecture: 'Qwen2ForCausalLM',
      tokenizer: 'qwen3',
      hidden: 32,
      layers: 1,
      heads: 4,
      kvHeads: 2,
      intermediate: 64,
      tied: true,
    });
    // A run of this workspace with one checkpoint (its config as a run keeps it: paths absolute).
    const reg = await RunRegistry.open(ws);
    const run = await reg.create({
      name: 'mine',
      config: { eval: { path: join(ws, 'data/eval.jsonl') }, workflow: { reward: 'math_answer' } },
    });
    mkdirSync(run.dir, { recursive: true });
    writeFileSync(join(run.dir, 'config.yaml'), config(`${ws}/`));
    const ck = join(run.dir, 'checkpoints', 'v1');
    mkdirSync(ck, { recursive: true });
    cpSync(hf, ck, { recursive: true });
    await reg.addCheckpoint(run.id, { version: 1, path: ck, step: 1 });
    await reg.setStatus(run.id, 'stopped');

    const { ctx, api } = await activateWith(ws);
    const s = api.services!;
    const evaluated = () =>
      vscode.recorded.messages.filter((m) => m.kind === 'info' && m.message.startsWith('Evaluated '));
    const errors = () => vscode.recorded.messages.filter((m) => m.kind === 'error');
    try {
      // 1. Palette: "Another checkpoint folder…" (the exported folder), then the user's eval file.
      let targets: { label: string; description?: string }[] = [];
      vscode.answers.quickPick.push((items) =>
        (items as { label: string }[]).find((i) => i.label.includes('Another checkpoint folder')),
      );
      vscode.answers.openDialog.push([vscode.Uri.file(hf)]);
      vscode.answers.quickPick.push(
        (items) => ((targets = items as typeof targets), targets.find((i) => i.label === 'data/eval.jsonl')),
      );
      await evaluateCheckpoint(s);
      assert.deepEqual(
        errors().map((m) => m.message),
        [],
      );
      assert.equal(targets.find((i) => i.label === 'data/eval.jsonl')!.description, 'read as train.rft.yaml reads it');
      assert.match(
        evaluated()[0]!.message,
        /^Evaluated exports\/hf-v3: accuracy \d+\.\d% on 6 tasks of data\/eval\.jsonl\.$/,
      );

      // 2. Palette: the folder on the workspace config's eval set.
      vscode.answers.quickPick.push((items) =>
        (items as { label: string }[]).find((i) => i.label.includes('Another checkpoint folder')),
      );
      vscode.answers.openDialog.push([vscode.Uri.file(hf)]);
      vscode.answers.quickPick.push((items) =>
        (items as { label: string }[]).find((i) => i.label === '$(beaker) The eval set of train.rft.yaml'),
      );
      await evaluateCheckpoint(s);
      assert.match(evaluated()[1]!.message, /on 6 tasks of the eval set of train\.rft\.yaml\.$/);

      // 3. Runs view: the run's item (a RunInfo) offers that run's checkpoints, then its held-out split.
      let offered: { label: string }[] = [];
      vscode.answers.quickPick.push(
        (items) => ((offered = items as typeof offered), offered.find((i) => i.label === 'v1')),
      );
      vscode.answers.quickPick.push((items) =>
        (items as { label: string }[]).find((i) => i.label === "$(beaker) The run's held-out split"),
      );
      await evaluateCheckpoint(s, s.state.runs.find((r) => r.id === run.id)!);
      assert.ok(offered.some((i) => i.label === 'v1'));
      assert.match(
        evaluated()[2]!.message,
        /^Evaluated v1 of mine \(step 1\): accuracy \d+\.\d% on 6 tasks of the held-out split\.$/,
      );

      // 4. A failure (the folder on a file no config reads, and no reward): the progress has ended when
      // the error is shown, in one line with Show Log.
      // With no workspace config left, nothing maps the user's field names.
      writeFileSync(join(ws, 'data', 'plain.jsonl'), TASKS);
      rmSync(join(ws, 'train.rft.yaml'));
      vscode.answers.quickPick.push((items) =>
        (items as { label: string }[]).find((i) => i.label.includes('Another checkpoint folder')),
      );
      vscode.answers.openDialog.push([vscode.Uri.file(hf)]);
      vscode.answers.quickPick.push((items) =>
        (items as { label: string }[]).find((i) => i.label === 'data/plain.jsonl'),
      );
      await evaluateCheckpoint(s);
      const err = errors().at(-1)!;
      assert.ok(err, 'the failure is shown');
      assert.equal(err.duringProgress, undefined, 'the progress notification ended before the error was shown');
      assert.deepEqual(err.items, ['Show Log']);
      assert.doesNotMatch(err.message, /\n/);
      assert.match(err.message, /^Evaluate exports\/hf-v3: /);

      // 5. Dashboard after the backend was killed and restarted by the client.
      const pid = Number(
        /running \(pid (\d+)\)/.exec(
          vscode.recorded.log
            .map((l) => l.line)
            .filter((l) => /backend .* running \(pid/.test(l))
            .at(-1)!,
        )![1],
      );
      const starts = s.client.starts;
      process.kill(pid, 'SIGKILL');
      await until(() => s.client.starts > starts && s.client.state === 'running', 'the backend restarted', 60_000);
      await s.state.refreshRuns();
      const r = await dashboardHandlers(s).evaluate({ runId: run.id, checkpoint: ck });
      assert.equal(r.tasks, 6);
      // Told as a toast too (was: the result only inside the webview, nothing on failure).
      assert.equal(evaluated().length, 4);
      assert.match(
        evaluated().at(-1)!.message,
        /^Evaluated v1 of mine \(step 1\): accuracy \d+\.\d% on 6 tasks of the held-out split\.$/,
      );
    } finally {
      await deactivateFrom(ctx);
    }
  },
);
