// RFT-core: `runJob` is the entry of every run (registry record, pid file, final status). It hands
// the run to its placement, each a placement/ entry of one signature (placement/entry.ts):
// placement/in-process.ts (`placement: memory`: one process, the model shared in memory),
// placement/child-processes.ts (`placement: checkpoint`, the default: explorer and trainer as
// their own processes) or placement/explore-bench.ts (modes explore, bench). Each builds its parts from the
// config through setup/, and the ones that train run the one run loop (run-loop.ts); none of them
// imports this file.
import { errorKind, InputError } from '../core/errors.js';
import { asDiskFull } from '../core/disk-full.js';
import { logger } from '../core/log.js';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { engineRecord, initEngine } from '../model/engine.js';
import type { CheckpointMeta } from '../model/checkpoint.js';
import { readCheckpointMeta } from '../model/checkpoint-meta.js';
import { runModelParams } from '../model/run-model.js';
import { assertNotLive, claimRunPid, RunRegistry } from '../buffer/runs.js';
import { MetricsLog } from './monitor.js';
import { openEventFile } from './tensorboard.js';
import { executeProcesses } from './placement/child-processes.js';
import { executeWithoutTrainer } from './placement/explore-bench.js';
import { executeInProcess } from './placement/in-process.js';
import { executeServe } from './placement/serve.js';
import type { PlacementEntry } from './placement/entry.js';
import { resolveConfigPaths } from './setup/config-paths.js';
import { assertRunnableConfig } from './config-check.js';
import { configForResume } from './resume-config.js';
import { fileDigest } from './resume-state.js';
import { loadWorkspaceCode, trustedFromEnv } from './workspace-code.js';
import type { RunOptions, RunSummary } from './run-types.js';

export type { RunOptions, RunSummary } from './run-types.js';

const log = logger('monitor');

/** A run ended by its signal: paused (`rft pause`, abort reason 'pause') or stopped. */
function endedStatus(signal: AbortSignal): 'paused' | 'stopped' {
  return signal.reason === 'pause' ? 'paused' : 'stopped';
}

export async function runJob(opts: RunOptions): Promise<RunSummary> {
  const t0 = Date.now();
  const registry = await RunRegistry.open(opts.workspace);
  // auto: the model's size decides webgpu (engine.ts autoWebgpu); a stored config's paths are absolute.
  const sized = opts.resume ? (await registry.get(opts.resume))?.config : opts.config;
  await initEngine({ modelParams: runModelParams(sized, opts.resume ? undefined : opts.configPath) });
  const trusted = opts.trustWorkspaceCode ?? trustedFromEnv();
  let record;
  let resumeFrom: { dir: string; meta: CheckpointMeta } | undefined;
  if (opts.resume) {
    record = await registry.get(opts.resume);
    if (!record) throw new InputError(`no run '${opts.resume}' in ${registry.file}`);
    // A run still running elsewhere is not taken over (its pid file, its status): refused with its pid.
    assertNotLive(record.dir, record.id);
    // The stored config, or the config file as it is now when the user chose it (resume-config.ts).
    const config = await configForResume(registry, record, opts.resumeConfig);
    opts = { ...opts, config };
    // A resumed run is trusted again (or not) by whoever resumes it.
    await loadWorkspaceCode(config, trusted);
    const last = await registry.latestCheckpoint(record.id);
    if (last) resumeFrom = { dir: last.path, meta: readCheckpointMeta(last.path) };
  } else {
    if (!opts.config) throw new Error('runJob: a config is required for a new run');
    // Every stage's algorithm, the sampler, storage and operators: checked before anything is created.
    assertRunnableConfig(opts.config, opts.configPath, { local: true });
    // File paths in the config are relative to the config file; the run keeps them absolute.
    const config = opts.configPath ? resolveConfigPaths(opts.config, opts.configPath) : opts.config;
    opts = { ...opts, config };
    // workflow.file: refused without trust, loaded (and its names checked) before the run is created.
    await loadWorkspaceCode(config, trusted);
    record = await registry.create({
      name: config.name,
      config,
      configPath: opts.configPath ?? null,
      // What a later resume compares the file with (resume-state.ts): an edited file is a choice.
      ...(opts.configPath ? { configDigest: fileDigest(opts.configPath) } : {}),
      id: opts.runId,
    });
  }
  const cfg = opts.config!;
  const runId = record.id;
  const runDir = record.dir;
  await registry.setStatus(runId, 'running');
  mkdirSync(join(runDir, 'checkpoints'), { recursive: true });
  writeFileSync(join(runDir, 'config.yaml'), toYaml(cfg));
  const tensorboard = openEventFile(cfg.monitor.tensorboard, runDir, runId, 'run', (m) => log.warn(m));
  // A resume trains again from its checkpoint's step: TensorBoard drops the earlier events past it.
  if (resumeFrom) tensorboard?.restartAt(resumeFrom.meta.step ?? resumeFrom.meta.version);
  tensorboard?.text(0, 'config', `\`\`\`yaml\n${toYaml(cfg)}\`\`\``);
  const metrics = new MetricsLog(join(runDir, 'metrics.jsonl'), tensorboard);
  // Each start and resume opens a segment: the report sums their running time (monitor.ts runSeconds).
  metrics.write({ kind: 'segment', resumed: !!opts.resume });
  metrics.write(engineRecord('run'));
  // `rft stop RUN` signals this process through the pid file.
  const pidFile = claimRunPid(runDir, runId);
  try {
    // Synchronizer `checkpoint`: explorer and trainer run as their own processes (placement/child-processes.ts).
    // Modes without a trainer (explore, bench) move no weights: they run here whatever the synchronizer.
    const placement: PlacementEntry =
      cfg.mode === 'explore' || cfg.mode === 'bench'
        ? executeWithoutTrainer
        : cfg.placement === 'checkpoint'
          ? // Mode serve too: its explorer process serves (placement/serve-process.ts).
            executeProcesses
          : cfg.mode === 'serve'
            ? executeServe
            : executeInProcess;
    const summary = await placement({
      opts,
      cfg,
      runId,
      runDir,
      dbPath: record.dbPath,
      registry,
      metrics,
      t0,
      resumed: !!opts.resume,
      resumeFrom,
    });
    // A run that stopped by itself (e.g. no trainable rollout) is stopped, with its reason: never completed.
    if (opts.signal?.aborted) await registry.setStatus(runId, endedStatus(opts.signal));
    else if (summary.stop_reason) await registry.setStatus(runId, 'stopped', summary.stop_reason);
    else await registry.setStatus(runId, 'completed');
    return summary;
  } catch (e) {
    // A full disk is one line naming where (not a raw ENOSPC stack); the run is failed and resumable.
    const err = asDiskFull(e, runDir) as Error;
    try {
      // The error's kind: a refusal ('input') is met again by a resume with the same config (resume-state.ts).
      await registry.setStatus(
        runId,
        opts.signal?.aborted ? endedStatus(opts.signal) : 'failed',
        err.message,
        errorKind(err) ?? 'internal',
      );
    } catch (se) {
      // The registry is on the same disk: its failure must not hide why the run stopped.
      logger('run').error(`could not record run ${runId} as failed: ${(se as Error).message.split('\n')[0]}`);
    }
    throw err;
  } finally {
    rmSync(pidFile, { force: true });
  }
}
