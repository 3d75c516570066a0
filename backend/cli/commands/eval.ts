// `rft eval CHECKPOINT --taskset FILE|builtin:NAME [--reward NAME]`: held-out accuracy of a checkpoint.
import { command, flagNumber, flagString } from '../command.js';
import { initEngine } from '../../model/engine.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { resolveReward } from '../../explorer/reward-resolve.js';
import { workflows } from '../../explorer/workflow.js';
import '../../explorer/workflows/index.js';
import { builtinTasksets } from '../../explorer/tasksets/index.js';
import { loadTaskset, formatTaskError } from '../../buffer/taskset/index.js';
import { evaluate } from '../../coordinator/evaluate.js';
import type { Task } from '../../core/types.js';

command({
  name: 'eval',
  usage: 'eval CHECKPOINT --taskset FILE|builtin:NAME [--reward NAME] [--size N] [--workflow NAME]',
  summary: 'evaluate a checkpoint on a taskset (greedy answers, accuracy = full reward)',
  flags: ['taskset', 'reward', 'size', 'seed', 'workflow', 'max-new-tokens'],
  run: async (args) => {
    const dir = args.positional[0];
    const ts = flagString(args, 'taskset');
    if (!dir || !ts) {
      console.error('usage: rft eval CHECKPOINT --taskset FILE|builtin:NAME [--reward NAME]');
      return 2;
    }
    await initEngine();
    let tasks: Task[];
    let reward = flagString(args, 'reward');
    if (ts.startsWith('builtin:')) {
      const gen = builtinTasksets.get(ts.slice('builtin:'.length));
      tasks = gen.generate(flagNumber(args, 'size', 200), flagNumber(args, 'seed', 0), 'eval');
      reward ??= gen.reward;
    } else {
      const r = await loadTaskset(ts);
      for (const e of r.errors) console.error(formatTaskError(e));
      tasks = r.tasks;
    }
    if (tasks.length === 0) {
      // An accuracy over no task would read as 0: say there is nothing to evaluate instead.
      console.error(`${ts}: no valid task to evaluate${ts.startsWith('builtin:') ? '' : ' (each problem is listed above)'}`);
      return 1;
    }
    if (!reward) {
      console.error('--reward NAME is required for a taskset file (e.g. exact_match, math_answer, k12)');
      return 2;
    }
    const ck = loadCheckpoint(dir);
    if (!ck.tokenizer) {
      console.error(`${dir}: checkpoint has no tokenizer.json`);
      return 1;
    }
    // Image tasks go through the vision workflow (the image prefix), environment tasks through multi_turn.
    const workflow = flagString(args, 'workflow') ?? (tasks.some((t) => t.image) ? 'vision' : tasks.some((t) => typeof t.metadata?.environment === 'string') ? 'multi_turn' : 'single_turn');
    const res = await evaluate(new LocalRolloutModel(ck.model, ck.tokenizer, ck.meta.version), tasks, resolveReward(reward), { maxNewTokens: flagNumber(args, 'max-new-tokens', 32), workflow: workflows.get(workflow) });
    console.log(JSON.stringify({ checkpoint: dir, version: ck.meta.version, taskset: ts, ...res }));
    return 0;
  },
});
