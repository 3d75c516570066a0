// The package's own files (configs, vendor/, worker entry points, the CLI bundle) are found from the
// package root, wherever the package sits and whatever the working directory is: the bundled CLI is
// run from a copy of the package at another depth, from an unrelated working directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPackageRoot, packageRoot } from '../../backend/core/package-root.js';
import { tinyConfig, writeConfig } from '../coordinator/tiny-config.js';

const ROOT = packageRoot();

test('findPackageRoot walks up past other packages to ours', () => {
  const top = mkdtempSync(join(tmpdir(), 'rft-root-'));
  writeFileSync(join(top, 'package.json'), JSON.stringify({ name: 'rft-studio' }));
  const inner = join(top, 'node_modules', 'other', 'dist', 'backend');
  mkdirSync(inner, { recursive: true });
  writeFileSync(join(top, 'node_modules', 'other', 'package.json'), JSON.stringify({ name: 'other' }));
  writeFileSync(join(top, 'node_modules', 'other', 'dist', 'package.json'), '{ not json');
  assert.equal(findPackageRoot(inner), top);
  assert.equal(findPackageRoot(tmpdir(), 'no-such-package-name-xyz'), undefined);
  assert.equal(existsSync(join(ROOT, 'configs', 'main.yaml')), true);
});

/** A copy of the package at another depth: its own package.json, bin/ and dist/, the rest linked. */
function cloneAtDepth(): string {
  const clone = join(mkdtempSync(join(tmpdir(), 'rft-clone-')), 'a', 'b', 'rft-studio');
  mkdirSync(clone, { recursive: true });
  copyFileSync(join(ROOT, 'package.json'), join(clone, 'package.json'));
  cpSync(join(ROOT, 'bin'), join(clone, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'configs'), join(clone, 'configs'), { recursive: true });
  for (const d of ['backend', 'src', 'webview', 'node_modules', 'vendor'])
    if (existsSync(join(ROOT, d))) symlinkSync(join(ROOT, d), join(clone, d), 'dir');
  const b = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: clone, encoding: 'utf8' });
  assert.equal(b.status, 0, `build failed: ${b.stderr}`);
  for (const f of ['cli.mjs', 'serve.mjs', 'rollout-worker.mjs'])
    assert.ok(existsSync(join(clone, 'dist', 'backend', f)), `dist/backend/${f} is built`);
  return clone;
}

test('the bundled CLI finds its files from another working directory and another depth', { timeout: 240_000 }, () => {
  const clone = cloneAtDepth();
  const cwd = mkdtempSync(join(tmpdir(), 'rft-cwd-'));
  // Nothing may point the bundle at the checkout: it has to find its own files.
  const env: NodeJS.ProcessEnv = { ...process.env, RFT_LOG_LEVEL: 'warn' };
  for (const k of ['RFT_FROM_SOURCE', 'RFT_CLI', 'RFT_PACKAGE_ROOT']) delete env[k];
  const rft = (...args: string[]) =>
    spawnSync(process.execPath, [join(clone, 'bin', 'rft.mjs'), ...args], {
      cwd,
      env,
      encoding: 'utf8',
      timeout: 200_000,
    });

  // Every command answers --help without doing anything.
  const help = rft('--help');
  assert.equal(help.status, 0, help.stderr);
  const names = [...help.stdout.matchAll(/^ {2}(\S+(?: [a-z-]+)?)/gm)].map((m) =>
    m[1]!
      .split(' ')
      .filter((w) => /^[a-z][a-z-]*$/.test(w))
      .join(' '),
  );
  assert.ok(names.includes('demo') && names.includes('run'), help.stdout);
  for (const name of names) {
    const r = rft(...name.split(' '), '--help');
    assert.equal(r.status, 0, `rft ${name} --help: ${r.stderr}`);
    assert.match(r.stdout, /^usage: rft /, `rft ${name} --help`);
  }

  // `rft demo` reads the package's configs/main.yaml, not one relative to the working directory.
  const demo = rft('demo', '--check');
  assert.equal(demo.status, 0, demo.stderr);
  const checked = JSON.parse(demo.stdout.trim().split('\n').at(-1)!) as { config: string; valid: boolean };
  assert.equal(realpathSync(checked.config), realpathSync(join(clone, 'configs', 'main.yaml')));

  // A real run through the bundle: explorer and trainer as child processes (the CLI bundle found
  // from the package root), two rollout worker threads (dist/backend/rollout-worker.mjs), the tensor
  // engine's vendor/ files. Its last line is the JSON summary.
  const cfgFile = writeConfig(
    cwd,
    tinyConfig({ sync_offset: 0 }, 2, {
      explorer: {
        tasks_per_step: 2,
        repeat_times: 2,
        workers: 2,
        sampling: { max_new_tokens: 4 },
        eval_sampling: { max_new_tokens: 4 },
      },
    }),
  );
  const run = rft('run', cfgFile, '--workspace', cwd, '--quiet');
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  for (const k of ['base_accuracy', 'final_accuracy', 'wall_seconds', 'report', 'run_dir', 'checkpoint', 'evals'])
    assert.ok(k in summary, `summary has ${k}`);
  assert.ok(existsSync(join(summary.checkpoint as string, 'model.safetensors')));
  const stages = (summary.evals as { stage: string }[]).map((e) => e.stage);
  assert.deepEqual(stages, ['start', 'warmup', 'final']);
});
