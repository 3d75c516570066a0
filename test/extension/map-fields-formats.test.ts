// Map Fields… reads every taskset format the backend reads (issue 28: it read JSONL / JSON only, and
// a CSV or YAML file of the user's own got "no JSON records to map"). The same `{id, problem, final}`
// records are written in each format of backend/core/taskset-text (a format added there without a
// writer here fails); Map Fields proposes problem -> prompt, final -> answer for each and writes a
// config, and the run's own loader reads the file through that config.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ext, extensionDir, fakeContext, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { loadTasks } from '../../backend/coordinator/setup/tasks.js';
import { formatOf, isColumnar, TASKSET_EXTENSIONS, type TextFormat } from '../../backend/core/taskset-text/index.js';

const RECORDS = [1, 2, 3].map((i) => ({
  id: `m-${i}`,
  problem: `What is ${i} + ${i}, "in words"?`,
  final: String(2 * i),
}));
const csvCell = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
const WRITE: Record<TextFormat, () => string> = {
  jsonl: () => RECORDS.map((r) => JSON.stringify(r)).join('\n') + '\n',
  json: () => JSON.stringify(RECORDS, null, 2),
  yaml: () => stringify(RECORDS),
  csv: () =>
    ['id,problem,final', ...RECORDS.map((r) => [r.id, r.problem, r.final].map(csvCell).join(','))].join('\n') + '\n',
};
// The text formats here; Parquet and Arrow (binary, written by other writers) in map-fields-columnar.test.ts.
const TEXT_EXTENSIONS = TASKSET_EXTENSIONS.filter((e) => !isColumnar(formatOf(`x${e}`)));
const FILES = Object.fromEntries(
  TEXT_EXTENSIONS.map((e) => [`mine/math${e}`, WRITE[formatOf(`x${e}`) as TextFormat]()]),
);

let ctx: ReturnType<typeof fakeContext>;
let ws: string;

before(async () => {
  vscode.resetFake();
  ws = workspaceDir(FILES);
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
  vscode.settings.set('rftStudio.nodePath', process.execPath);
  ctx = fakeContext(extensionDir());
  await ext.activate(ctx as never);
});

after(async () => {
  await ext.deactivate();
  for (const d of ctx.subscriptions) d.dispose();
});

for (const name of Object.keys(FILES)) {
  test(`Map Fields on ${name}: the proposal from its first records, a config the run loads it with`, async () => {
    let review: string[] = [];
    vscode.answers.quickPick.push((items) => {
      review = (items as { label: string }[]).map((i) => i.label);
      return (items as { label: string }[]).find((i) => i.label.startsWith('$(check) Use:'));
    });
    // After the first file a config exists that does not read this one: a new config for it.
    vscode.answers.quickPick.push((items) =>
      (items as { label: string }[]).find((i) => i.label.includes('A new config for this file')),
    );
    const done = (await vscode.commands.executeCommand('rftStudio.mapFields', vscode.Uri.file(join(ws, name)))) as
      | { config: { fsPath: string }; created: boolean }
      | undefined;
    vscode.answers.quickPick.length = 0;
    assert.ok(done?.created, `no config written: ${JSON.stringify(vscode.recorded.messages.at(-1))}`);
    assert.equal(review[0], '$(check) Use: problem -> prompt, final -> answer, id');
    // The first records are shown as read (a CSV cell with quotes and a comma whole).
    assert.ok(
      review.includes(JSON.stringify({ id: 'm-1', problem: 'What is 1 + 1, "in words"?', final: '2' })),
      review.join('\n'),
    );
    const cfg = parse(readFileSync(done.config.fsPath, 'utf8'));
    assert.equal(cfg.taskset.path, name);
    assert.deepEqual(cfg.taskset.format, { prompt_key: 'problem', response_key: 'final' });
    const pools = await loadTasks(loadRunConfig(done.config.fsPath));
    assert.deepEqual(
      pools.train.map((t) => [t.id, t.prompt, t.answer]),
      RECORDS.map((r) => [r.id, r.problem, r.final]),
    );
  });
}
