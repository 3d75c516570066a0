// The explorer half of a run is built in one place (backend/coordinator/explorer-half.ts): no placement
// constructs an explorer, a task feed or a synthesis hook, or watches the run's files itself, and the
// distributed explorer runs a job through the Explorer class instead of calling the workflow (only a
// partial-rollout job, a continuation of stored trajectories, runs the workflow on its own); every
// explorer runs in one driver (explorer/explorer-loop.ts driveExplorer) with a gate: numbered steps, or
// jobs leased from the distributed queue.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = join(dir, name);
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...files(rel));
    else if (name.endsWith('.ts')) out.push(rel);
  }
  return out;
}

/** Product files (backend, cli, server) whose code matches `re`, comments left out. */
function filesMatching(re: RegExp): string[] {
  return files('backend')
    .filter((f) => {
      const code = readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .filter((l) => !/^\s*(\/\/|\*|\/\*)/.test(l))
        .join('\n');
      return re.test(code);
    })
    .map((f) => relative('backend', f))
    .sort();
}

test('one place builds the explorer half: explorer, task feed, synthesis hook and live files', () => {
  assert.deepEqual(filesMatching(/new (Filling)?Explorer\(/), ['coordinator/explorer-half.ts']);
  // A distributed trainer plans its jobs' tasks with a feed of its own, and synthesizes tasks for them.
  assert.deepEqual(filesMatching(/new TaskFeed\(/), [
    'coordinator/explorer-half.ts',
    'coordinator/placement/distributed.ts',
  ]);
  assert.deepEqual(filesMatching(/watchRunFiles\(/), ['coordinator/explorer-half.ts', 'coordinator/live.ts']);
  assert.deepEqual(filesMatching(/taskSynthesis\(cfg,/), [
    'coordinator/explorer-half.ts',
    'coordinator/placement/distributed.ts',
  ]);
});

test('every placement opens its explorer through explorer-half.ts (the distributed explorer with its leased seams)', () => {
  assert.deepEqual(filesMatching(/makeExplorer\(/), ['coordinator/explorer-half.ts']);
  assert.deepEqual(filesMatching(/open(Leased)?ExplorerHalf\(/), [
    'coordinator/distributed/explorer.ts',
    'coordinator/explorer-half.ts',
    'coordinator/explorer-process.ts',
    'coordinator/placement/explore-bench.ts',
    'coordinator/placement/in-process.ts',
  ]);
});

test('the coordinator runs the workflow only through the Explorer (and a partial-rollout job)', () => {
  assert.deepEqual(
    filesMatching(/\bworkflow\.run\(/).filter((f) => f.startsWith('coordinator/')),
    ['coordinator/distributed/partial-jobs.ts'],
  );
});

test('one driver runs every explorer (driveExplorer): numbered steps and leased jobs are its two gates', () => {
  // Explore steps run in the two gates' run() only.
  assert.deepEqual(filesMatching(/\.exploreStep\(/), [
    'coordinator/distributed/lease-gate.ts',
    'explorer/explorer-loop.ts',
    'explorer/filling-explorer.ts', // its refill rounds call the base class
  ]);
  assert.deepEqual(filesMatching(/driveExplorer\(/), [
    'coordinator/distributed/explorer.ts',
    'explorer/explorer-loop.ts',
  ]);
  assert.deepEqual(filesMatching(/runExplorerLoop\(/), [
    'coordinator/explorer-process.ts',
    'coordinator/placement/explore-bench.ts',
    'coordinator/placement/lockstep-explorer.ts',
    'coordinator/placement/memory-explorer.ts',
    'explorer/explorer-loop.ts',
  ]);
  // No loop of its own around leases: the distributed explorer leases only in its gate.
  assert.deepEqual(filesMatching(/\.lease\(o?\.?runId|q\.lease\(/), ['coordinator/distributed/lease-gate.ts']);
});
