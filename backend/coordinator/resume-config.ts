// The config a resume runs with (runJob): the one the run stored at its start, or, when asked
// (`rft resume --use-new-config`, the editor's "Use New Config"), its config file as it is now,
// checked whole like a new run's and stored in its place. A changed file without a choice, or a run
// whose failure the same config would meet again (resume-state.ts), is refused naming the fix.
import type { RunConfig } from '../core/config.js';
import { InputError } from '../core/errors.js';
import type { RunRecord, RunRegistry } from '../buffer/runs.js';
import { assertRunnableConfig } from './config-check.js';
import { loadRunConfig, storedRunConfig } from './load-config.js';
import { fileDigest, resumeState } from './resume-state.js';

/** 'new': the config file as it is now; 'kept': the config the run started with; undefined: the stored one unless the file changed. */
export type ResumeConfigChoice = 'new' | 'kept' | undefined;

export async function configForResume(
  registry: RunRegistry,
  record: RunRecord,
  choice: ResumeConfigChoice,
): Promise<RunConfig> {
  if (choice === 'new') {
    const file = record.configPath;
    if (!file)
      throw new InputError(`run '${record.id}' was not started from a config file: resume it without --use-new-config`);
    const cfg = loadRunConfig(file);
    assertRunnableConfig(cfg, file, { local: true });
    await registry.setConfig(record.id, cfg, fileDigest(file));
    return cfg;
  }
  const st = resumeState(record);
  if (!st.resumable) throw new InputError(`run '${record.id}' cannot be resumed: ${st.why}`);
  if (st.configChanged && choice !== 'kept')
    throw new InputError(
      `run '${record.id}': its config ${st.configChanged} changed since the run started. Fix: rft resume ${record.id} --use-new-config (--keep-config resumes with the config it started with)`,
    );
  return storedRunConfig(record.config, `${registry.file} (run '${record.id}')`);
}
