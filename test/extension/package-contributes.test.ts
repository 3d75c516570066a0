// What package.json contributes for a new user (issue 28, Low): an icon the Welcome page can show,
// a walkthrough whose code samples fit its media pane and that covers own data and Import Model,
// ▶ Start Training in the editor title of a run config.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../tools/spawn-serve.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  icon?: string;
  contributes: {
    walkthroughs: { steps: { id: string; description: string; media: { markdown?: string } }[] }[];
    menus: Record<string, { command: string; when?: string; group?: string }[]>;
  };
};

test('the extension has a PNG icon (the walkthrough tile on the Welcome page is not blank)', () => {
  assert.ok(pkg.icon, 'package.json icon');
  const png = readFileSync(join(ROOT, pkg.icon!));
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
  assert.equal(png.readUInt32BE(16), 128, 'width 128');
  assert.equal(png.readUInt32BE(20), 128, 'height 128');
});

test('the walkthrough: own data (Map Fields) and Import Model steps; its code samples fit the media pane', () => {
  const steps = pkg.contributes.walkthroughs[0]!.steps;
  assert.deepEqual(
    steps.map((s) => s.id),
    ['taskset', 'ownData', 'importModel', 'validate', 'train', 'curate'],
  );
  assert.match(steps[1]!.description, /command:rftStudio\.mapFields/);
  assert.match(steps[2]!.description, /command:rftStudio\.importModel/);
  for (const s of steps) {
    const md = readFileSync(join(ROOT, s.media.markdown!), 'utf8');
    // Lines of a code block do not wrap in the media pane (about 60 characters wide at the default size).
    const code = [...md.matchAll(/```\w*\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split('\n'));
    for (const line of code)
      assert.ok(line.length <= 60, `${s.media.markdown}: code line of ${line.length} characters is cut off: ${line}`);
  }
});

test('▶ Start Training in the editor title of *.rft.yaml (trusted workspaces)', () => {
  const title = pkg.contributes.menus['editor/title'] ?? [];
  const start = title.find((m) => m.command === 'rftStudio.startTraining');
  assert.ok(start, 'editor/title entry');
  assert.equal(start!.group, 'navigation');
  const re = new RegExp(/resourceFilename =~ \/(.+)\/ /.exec(start!.when!)![1]!.replace(/\\\\/g, '\\'));
  assert.ok(re.test('train.rft.yaml') && re.test('a.rft.yml') && !re.test('train.yaml'));
  assert.match(start!.when!, /isWorkspaceTrusted/);
  assert.ok(existsSync(join(ROOT, 'media/walkthrough/own-data.md')));
});
