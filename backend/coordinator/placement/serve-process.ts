// Mode serve, placement checkpoint: the explorer process serves (explorer-process.ts hands a serve
// run here) while the trainer process trains on the rewarded episodes it writes into the run's
// buffer. The served weights are the newest checkpoint the trainer published: each new one is loaded
// beside the served one, then switched to between requests (PolicyGate.switchTo: requests in flight
// finish on the old version, new ones wait and get the new one), so no request mixes versions.
import { logger } from '../../core/log.js';
import type { CheckpointMeta } from '../../model/checkpoint.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { inferenceOutsideHeap } from '../../model/external-weights.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { PolicyGate, type ServedPolicy } from '../../explorer/openai-server/policy.js';
import type { ProcessContext } from '../process-context.js';
import { openServeEndpoint } from './serve-endpoint.js';

const log = logger('serve-process');
/** How often the buffer is looked at for a newer checkpoint. */
const POLL_MS = 200;

/** The served policy of checkpoint PATH: plain (LoRA merged) weights for sampling only. */
function servedFrom(path: string, ctx: ProcessContext): { policy: ServedPolicy; meta: CheckpointMeta } {
  const { model, meta } = loadCheckpoint(path, { external: inferenceOutsideHeap() });
  model.mergeAdapters();
  return { policy: { model: new LocalRolloutModel(model, ctx.tok, meta.version), transformer: model }, meta };
}

/** Serves until SIGNAL (the coordinator stops the explorer when the stage is done, or on rft stop). */
export async function serveProcess(ctx: ProcessContext, signal: AbortSignal): Promise<number> {
  const { cfg, db, runId, metrics } = ctx;
  const stage = ctx.stages[ctx.stage]!;
  const latest = await db.latestCheckpoint(runId);
  if (!latest) throw new Error(`run ${runId}: no checkpoint in ${db.location} to serve`);
  let current = servedFrom(latest.path, ctx);
  const gate = new PolicyGate(current.policy, cfg.name);
  const endpoint = await openServeEndpoint({
    cfg,
    runId,
    runDir: ctx.runDir,
    store: db,
    metrics,
    gate,
    algorithm: () => stage.algorithm,
  });
  ctx.setState('explorer', 'generating', `serving v${gate.version}`);
  try {
    while (!signal.aborted) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      const ck = await db.latestCheckpoint(runId);
      if (!ck || ck.version <= gate.version || signal.aborted) continue;
      // Loaded before the switch, so requests wait only for the swap itself.
      const next = servedFrom(ck.path, ctx);
      const old = current;
      await gate.switchTo(() => next.policy);
      current = next;
      old.policy.transformer?.dispose();
      log.info(`serving v${ck.version}`);
      metrics.write({ kind: 'serve', version: ck.version, ...endpoint.book.stats });
      ctx.setState('explorer', 'generating', `serving v${ck.version}`);
    }
  } finally {
    await endpoint.close();
    // What the summary counts as explore steps: the episodes rewarded in the run.
    await db.setState(runId, 'explorer_target', endpoint.book.stats.rewarded);
    current.policy.transformer?.dispose();
  }
  return 0;
}
