// `workflow.file`: rewards and workflows from a file of the user's workspace (explorer/custom.ts),
// loaded into this process's registries before the run's parts are built. It is the user's own code
// and runs with the backend's rights, so only a run started with trust loads it: `rft run
// --trust-workspace-code`, or RFT_TRUST_WORKSPACE_CODE=1 in the environment (the extension sets it
// for its backend in a trusted workspace; a run passes it to its explorer / trainer processes).
import type { RunConfig } from '../core/config.js';
import { InputError } from '../core/errors.js';
import { loadCustomFile } from '../explorer/custom.js';
import { DEFAULT_CODE_TIMEOUT_MS } from '../explorer/user-code/host.js';
import { workflows } from '../explorer/workflows/index.js';
import { rewardFns } from '../explorer/rewards/index.js';

export const TRUST_ENV = 'RFT_TRUST_WORKSPACE_CODE';
export const TRUST_FLAG = '--trust-workspace-code';

export function trustedFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[TRUST_ENV] === '1';
}

/** Files loaded in this process (a run's parts are built several times: evals, workers, resume). */
const loaded = new Set<string>();

/**
 * Loads `workflow.file` when the config has one; refuses it without trust. Afterwards the names
 * the config uses (workflow.name, workflow.reward) must exist: an error names the file otherwise.
 */
export async function loadWorkspaceCode(cfg: RunConfig, trusted = trustedFromEnv()): Promise<void> {
  const file = cfg.workflow.file;
  if (!file) return;
  if (!trusted)
    throw new InputError(
      `'${file}' is code from the workspace and runs with your rights: it is loaded only in a trusted run (rft run ${TRUST_FLAG}, or ${TRUST_ENV}=1; the extension trusts runs of a trusted workspace)`,
      { field: 'workflow.file' },
    );
  if (!loaded.has(file)) {
    await loadCustomFile(file, {
      timeoutMs: (cfg.workflow.code_timeout_seconds ?? DEFAULT_CODE_TIMEOUT_MS / 1000) * 1000,
    });
    loaded.add(file);
  }
  if (!workflows.has(cfg.workflow.name))
    throw new InputError(
      `unknown workflow '${cfg.workflow.name}' (not built in, and ${file} does not register it); known: ${workflows.names().join(', ')}`,
      { field: 'workflow.name' },
    );
  const reward = cfg.workflow.reward;
  if (reward !== undefined && reward !== 'environment' && !reward.includes(':') && !rewardFns.has(reward))
    throw new InputError(
      `unknown reward function '${reward}' (not built in, and ${file} does not register it); known: ${rewardFns.names().join(', ')}`,
      { field: 'workflow.reward' },
    );
}

/** Guard for the synchronous setup: a config with workflow.file is built only after loadWorkspaceCode. */
export function assertWorkspaceCodeLoaded(cfg: RunConfig): void {
  const file = cfg.workflow.file;
  if (file && !loaded.has(file))
    throw new InputError(`'${file}' was not loaded in this process (a run loads it first, with trust)`, {
      field: 'workflow.file',
    });
}

/** What a run passes to its child processes so they load the file it was trusted with. */
export function trustEnv(cfg: RunConfig): Record<string, string> {
  return cfg.workflow.file ? { [TRUST_ENV]: '1' } : {};
}
