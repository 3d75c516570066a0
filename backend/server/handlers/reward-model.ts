// rewardModel/train: `rft reward-model train` for a run of the registry, as a child process (the
// tensor engine stays out of the server, as for models/*). Its progress lines on stderr go to the
// editor as `rewardModel/progress`; the result is the command's JSON report (held-out accuracy).
import type { RpcHost } from '../rpc.js';
import type { WorkspacePaths } from '../confine.js';
import type { RunRegistryPort } from '../ports.js';
import type { RewardModelReport } from '../../core/protocol.js';
import { InputError } from '../../core/errors.js';
import { NotAvailableError, NotFoundError } from '../errors.js';
import { runCliCommand } from '../adapters/model-cli.js';

const STEP = /^reward-model: step (\d+)\/(\d+) loss (\S+)$/;

export function registerRewardModel(rpc: RpcHost, paths: WorkspacePaths, runs: RunRegistryPort | undefined): void {
  rpc.on('rewardModel/train', async (p, token) => {
    if (!runs) throw new NotAvailableError('the run registry');
    if (typeof p.runId !== 'string' || !p.runId) throw new InputError('a run id is required', { field: 'runId' });
    const run = await runs.get(p.runId);
    if (!run) throw new NotFoundError(`no run '${p.runId}'`);
    if (!run.bufferPath) throw new InputError(`run '${p.runId}' has no buffer recorded`, { field: 'runId' });
    const out = paths.inside(p.out, 'out');
    if (p.steps !== undefined && !(Number.isInteger(p.steps) && p.steps > 0))
      throw new InputError(`must be a positive whole number, got ${JSON.stringify(p.steps)}`, { field: 'steps' });
    const args = [
      '--run',
      run.bufferPath,
      '--run-id',
      p.runId,
      '--out',
      out,
      ...(p.steps ? ['--steps', String(p.steps)] : []),
    ];
    const r = await runCliCommand('reward-model train', args, {
      cwd: paths.given,
      token,
      onLine: (l) => {
        if (!l.startsWith('reward-model: ')) return;
        const m = STEP.exec(l);
        rpc.notify('rewardModel/progress', {
          runId: p.runId,
          line: l.slice('reward-model: '.length),
          ...(m ? { step: Number(m[1]), steps: Number(m[2]), loss: Number(m[3]) } : {}),
        });
      },
    });
    return r as unknown as RewardModelReport;
  });
}
