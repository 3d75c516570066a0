// Map Fields on Parquet (written by DuckDB) and Arrow (written by apache-arrow) files: the first
// rows are read from the file, the mapping proposed from their columns, and the run loads the file
// with the config written.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ext, extensionDir, fakeContext, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { loadTasks } from '../../backend/coordinator/setup/tasks.js';
import { copyParquet, duck, writeArrow } from '../buffer/columnar-fixtures.js';

const SELECT = `SELECT 'm-' || i AS id, 'What is ' || i || ' + ' || i || '?' AS problem, (2 * i)::VARCHAR AS final FROM range(1, 4) t(i)`;
const ROWS = [1, 2, 3].map((i) => ({ id: `m-${i}`, problem: `What is ${i} + ${i}?`, final: String(2 * i) }));

let ctx: ReturnType<typeof fakeContext>;
let ws: string;

before(async () => {
  vscode.resetFake();
  ws = workspaceDir({ 'README.md': '# ws\n' });
  mkdirSync(join(ws, 'mine'));
  await duck(copyParquet(SELECT, join(ws, 'mine', 'math.parquet'), 'zstd'));
  writeArrow(join(ws, 'mine', 'math.arrow'), ROWS, 2, 'stream');
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
  vscode.settings.set('rftStudio.nodePath', process.execPath);
  ctx = fakeContext(extensionDir());
  await ext.activate(ctx as never);
});

after(async () => {
  await ext.deactivate();
  for (const d of ctx.subscriptions) d.dispose();
});

for (const name of ['mine/math.parquet', 'mine/math.arrow']) {
  test(`Map Fields on ${name}: the proposal from its first rows, a config the run loads it with`, async () => {
    let review: string[] = [];
    vscode.answers.quickPick.push((items) => {
      review = (items as { label: string }[]).map((i) => i.label);
      return (items as { label: string }[]).find((i) => i.label.startsWith('$(check) Use:'));
    });
    vscode.answers.quickPick.push((items) =>
      (items as { label: string }[]).find((i) => i.label.includes('A new config for this file')),
    );
    const done = (await vscode.commands.executeCommand('rftStudio.mapFields', vscode.Uri.file(join(ws, name)))) as
      | { config: { fsPath: string }; created: boolean }
      | undefined;
    vscode.answers.quickPick.length = 0;
    assert.ok(done?.created, `no config written: ${JSON.stringify(vscode.recorded.messages.at(-1))}`);
    assert.equal(review[0], '$(check) Use: problem -> prompt, final -> answer, id');
    assert.ok(review.includes(JSON.stringify(ROWS[0])), review.join('\n'));
    const cfg = parse(readFileSync(done.config.fsPath, 'utf8'));
    assert.equal(cfg.taskset.path, name);
    assert.deepEqual(cfg.taskset.format, { prompt_key: 'problem', response_key: 'final' });
    const pools = await loadTasks(loadRunConfig(done.config.fsPath));
    assert.deepEqual(
      pools.train.map((t) => [t.id, t.prompt, t.answer]),
      ROWS.map((r) => [r.id, r.problem, r.final]),
    );
  });
}
