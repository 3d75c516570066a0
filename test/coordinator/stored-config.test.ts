// One reader for the config a run stored (load-config.ts storedRunConfig): a resume reads the run
// registry's record, explorer and trainer processes the run folder's config.yaml, distributed workers
// the run's dist:config row. Each error names where the config is stored and the field; a config
// written back with its defaults filled in reads as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { validateRunConfig } from '../../backend/core/config.js';
import { InputError } from '../../backend/core/errors.js';
import { readRunFolderConfig, storedRunConfig } from '../../backend/coordinator/load-config.js';
import { readDistributedConfig } from '../../backend/coordinator/distributed/explorer.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { runJob } from '../../backend/coordinator/run.js';

const BASE = { taskset: { builtin: 'reverse', size: 20 }, workflow: { name: 'single_turn' } };

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'rft-stored-'));
}

test("a run folder's config.yaml: written back with its defaults it reads as it was; a bad one names the file and field", () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'config.yaml');
    const cfg = validateRunConfig({ ...BASE, mode: 'explore', trainer: { steps: 3 } }).config!;
    writeFileSync(file, stringify(cfg));
    assert.deepEqual(readRunFolderConfig(dir), cfg);

    writeFileSync(file, stringify({ ...cfg, trainer: { ...cfg.trainer, steps: 0 } }));
    assert.throws(
      () => readRunFolderConfig(dir),
      (e: Error) =>
        e instanceof InputError &&
        e.message.startsWith(`${file}: stored config is invalid, 1 problem(s):`) &&
        e.message.includes("field 'trainer.steps': "),
    );
    writeFileSync(file, 'name: x\ntaskset: [\n');
    assert.throws(
      () => readRunFolderConfig(dir),
      (e: Error) => e.message.startsWith(`${file}:3: YAML syntax`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a stored config is checked for its fields, not for what its run reads (it was checked whole at the run's start)", () => {
  // restart in mode explore is refused in a new config; a run stored before that refusal still resumes.
  assert.ok(validateRunConfig({ ...BASE, mode: 'explore', restart: 3 }).issues.some((i) => i.path === 'restart'));
  const raw = { ...BASE, mode: 'explore', restart: 3 };
  assert.equal(storedRunConfig(raw, 'somewhere').restart, 3);
});

test("a distributed run's dist:config: a bad one names the run; a missing one says how to create it", async () => {
  await assert.rejects(
    readDistributedConfig(async () => ({ ...BASE, trainer: { steps: 0 } }), 'run r1'),
    (e: Error) => {
      assert.match(
        e.message,
        /^run r1 \(its dist:config\): stored config is invalid, 1 problem\(s\):\n {2}field 'trainer\.steps': /,
      );
      return true;
    },
  );
  await assert.rejects(
    readDistributedConfig(async () => null, 'run r2'),
    /run r2: no distributed run of that id/,
  );
});

test('a resume: a registry record whose config is invalid names the registry file and the run', async () => {
  const ws = tempDir();
  try {
    mkdirSync(join(ws, '.rft'), { recursive: true });
    const reg = await RunRegistry.open(ws);
    const rec = await reg.create({ name: 'r', config: { ...BASE, explorer: { repeat_times: 0 } }, configPath: null });
    await assert.rejects(runJob({ workspace: ws, resume: rec.id }), (e: Error) => {
      assert.ok(
        e.message.startsWith(`${reg.file} (run '${rec.id}'): stored config is invalid, 1 problem(s):`),
        e.message,
      );
      assert.match(e.message, /field 'explorer\.repeat_times': /);
      return true;
    });
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
