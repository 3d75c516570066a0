// `rft buffer stats|ls|show|export|import RUN_OR_DB ...`: browse and move a run's buffer.
// RUN_OR_DB is a run folder (its buffer.db), a SQLite file, a postgres:// URL, or a run id of the
// workspace's registry (as `rft status` lists it: the run's own buffer).
import { InputError } from '../../core/errors.js';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Experience } from '../../core/types.js';
import { command, existingWorkspace, WORKSPACE_FLAG, type ParsedArgs } from '../command.js';
import type { FlagValues } from '../flags.js';
import { openStore, resolveBufferUrl, schemeOf } from '../../buffer/storage/registry.js';
import { RunRegistry } from '../../buffer/runs.js';
import { exportJsonl, importJsonl } from '../../buffer/storage/jsonl.js';
import type { ExperienceStore, ListOptions, SortKey } from '../../buffer/storage/types.js';
import { RunTokenizers } from '../../server/adapters/run-tokenizers.js';
import { tokenPieces } from '../../model/tokenizer/pieces.js';

/**
 * The buffer a RUN_OR_DB argument names. A path that exists (or a URL) is used as given; otherwise a
 * run id of the workspace's registry means that run's buffer. Anything else is an error: opening a
 * missing name as SQLite would create an empty file and report 0 experiences (import may create one).
 */
export async function bufferTarget(
  target: string,
  workspace: string | undefined,
  create: boolean,
): Promise<{ url: string; runId?: string }> {
  if (schemeOf(target) !== 'sqlite' || existsSync(target)) return { url: resolveBufferUrl(target) };
  const ws = existingWorkspace(workspace);
  // Look the id up without creating `.rft/` in a folder that has no runs.
  if (existsSync(join(ws, '.rft', 'runs.json'))) {
    const reg = await RunRegistry.open(ws);
    const run = await reg.get(target);
    if (run) return { url: run.dbPath, runId: run.id };
  }
  if (create) return { url: target };
  throw new InputError(
    `'${target}': no such buffer file or run folder (${resolve(target)}), and no run of that id in ${join(ws, '.rft', 'runs.json')} (rft status lists them; --workspace DIR names another workspace)`,
  );
}

/** The flags every buffer command takes. */
const BUFFER_FLAGS = { workspace: WORKSPACE_FLAG } as const;

async function withStore<T>(
  args: ParsedArgs<typeof BUFFER_FLAGS>,
  fn: (s: ExperienceStore, runId: string | undefined, url: string) => Promise<T>,
  create = false,
): Promise<T> {
  const target = args.positional[0];
  if (!target) throw new InputError(`usage: ${args.usage}`);
  const t = await bufferTarget(target, args.flags.workspace, create);
  const s = await openStore(t.url);
  try {
    return await fn(s, t.runId, t.url);
  } finally {
    await s.close();
  }
}

const num = (description: string) => ({ type: 'number', value: 'N', description }) as const;
const LS_FLAGS = {
  ...BUFFER_FLAGS,
  run: { type: 'string', value: 'ID', description: "only this run's experiences" },
  task: { type: 'string', value: 'ID', description: "only this task's" },
  group: { type: 'string', value: 'ID', description: "only this group's" },
  source: {
    type: 'string',
    choices: ['usual', 'expert'],
    description: 'only rollouts (usual) or demonstrations (expert)',
  },
  status: { type: 'string', choices: ['ok', 'invalid', 'infra_failure'], description: 'only this status' },
  split: { type: 'string', choices: ['train', 'eval'], description: 'only this split' },
  'min-reward': num('reward at least N'),
  'max-reward': num('reward at most N'),
  'min-version': num('model version at least N'),
  'max-version': num('model version at most N'),
  text: { type: 'string', value: 'T', description: 'prompt or response contains T (any case)' },
  rejected: { type: 'boolean', description: 'only rejected experiences' },
  'not-rejected': { type: 'boolean', description: 'only experiences not rejected' },
  sort: {
    type: 'string',
    choices: ['seq', 'createdAt', 'reward', 'modelVersion', 'useCount'],
    default: 'seq',
    description: 'the order',
  },
  desc: { type: 'boolean', description: 'highest first' },
  offset: { type: 'number', value: 'N', default: 0, description: 'skip the first N' },
  limit: { type: 'number', value: 'N', default: 50, description: 'show at most N' },
  json: { type: 'boolean', description: 'one experience per line as JSON' },
} as const;

function listOptions(f: FlagValues<typeof LS_FLAGS>): ListOptions {
  const o: ListOptions = {
    runId: f.run,
    taskId: f.task,
    groupId: f.group,
    source: f.source,
    status: f.status,
    split: f.split,
    minReward: f['min-reward'],
    maxReward: f['max-reward'],
    minVersion: f['min-version'],
    maxVersion: f['max-version'],
    text: f.text,
    rejected: f.rejected ? true : f['not-rejected'] ? false : undefined,
    sort: f.sort satisfies SortKey,
    desc: f.desc,
    offset: f.offset,
    limit: f.limit,
  };
  for (const k of Object.keys(o) as (keyof ListOptions)[]) if (o[k] === undefined) delete o[k];
  return o;
}

const preview = (s: string, n: number) => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? one.slice(0, n - 1) + '…' : one;
};

export const bufferStatsCommand = command({
  name: 'buffer stats',
  args: 'RUN_OR_DB',
  summary: 'counts of a buffer: sources, statuses, versions, feedback',
  flags: {
    ...BUFFER_FLAGS,
    run: { type: 'string', value: 'ID', description: "only this run's rows (a PostgreSQL buffer holds many runs)" },
    json: { type: 'boolean', description: 'the counts as JSON' },
  },
  run: (a) =>
    withStore(a, async (s, runId) => {
      // A run id names its rows too (a PostgreSQL buffer holds many runs).
      const st = await s.stats(a.flags.run ?? runId);
      if (a.flags.json) console.log(JSON.stringify({ location: s.location, ...st }));
      else {
        console.log(`buffer ${s.location} (${s.kind}, schema v${await s.schemaVersion()})`);
        console.log(`  experiences  ${st.total}  (unused ${st.unused}, rejected ${st.rejected})`);
        console.log(
          `  by source    ${
            Object.entries(st.bySource)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ') || '-'
          }`,
        );
        console.log(
          `  by status    ${
            Object.entries(st.byStatus)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ') || '-'
          }`,
        );
        console.log(`  versions     ${st.minVersion ?? '-'} .. ${st.maxVersion ?? '-'}`);
        console.log(`  mean reward  ${st.meanReward === null ? '-' : st.meanReward.toFixed(4)}`);
        console.log(`  tasks ${st.tasks}, checkpoints ${st.checkpoints}, feedback changes ${st.feedback}`);
      }
      return 0;
    }),
});

export const bufferLsCommand = command({
  name: 'buffer ls',
  args: 'RUN_OR_DB',
  summary: 'list experiences with filters',
  flags: LS_FLAGS,
  run: (a) =>
    withStore(a, async (s, runId) => {
      const o = listOptions(a.flags);
      if (runId && o.runId === undefined) o.runId = runId;
      const rows = await s.list(o);
      if (a.flags.json) {
        for (const e of rows) console.log(JSON.stringify(e));
        return 0;
      }
      const total = await s.count(o);
      console.log(
        [
          'id'.padEnd(28),
          'source',
          'status'.padEnd(13),
          'ver'.padStart(4),
          'reward'.padStart(8),
          'uses'.padStart(4),
          ' response',
        ].join(' '),
      );
      for (const e of rows) {
        console.log(
          [
            preview(e.id, 28).padEnd(28),
            e.source.padEnd(6),
            e.status.padEnd(13),
            String(e.modelVersion).padStart(4),
            e.reward.toFixed(3).padStart(8),
            String(e.useCount).padStart(4),
            ' ' + preview(e.responseText, 50),
          ].join(' '),
        );
      }
      console.log(`${rows.length} of ${total} shown (offset ${o.offset ?? 0})`);
      return 0;
    }),
});

function showText(e: Experience, pieces?: string[]): string {
  const lines = [
    `id           ${e.id}`,
    `run / task   ${e.runId} / ${e.taskId} (group ${e.groupId})`,
    `source       ${e.source}   status ${e.status}${e.statusReason ? ` (${e.statusReason})` : ''}${e.split ? `   split ${e.split}` : ''}`,
    `model ver    ${e.modelVersion}   reward ${e.reward}   uses ${e.useCount}   created ${new Date(e.createdAt).toISOString()}`,
  ];
  if (e.rewardDetails) lines.push(`reward parts ${JSON.stringify(e.rewardDetails)}`);
  if (e.feedback) lines.push(`feedback     ${JSON.stringify(e.feedback)}`);
  if (e.metadata) lines.push(`metadata     ${JSON.stringify(e.metadata)}`);
  lines.push(
    '',
    `--- prompt (${e.promptTokens.length} tokens)`,
    e.promptText,
    '',
    `--- response (${e.responseTokens.length} tokens)`,
    e.responseText,
    '',
  );
  lines.push(`--- tokens: id  mask  logprob  advantage${pieces ? '  text' : ''}`);
  const n = Math.min(e.responseTokens.length, 64);
  for (let i = 0; i < n; i++) {
    const text = pieces ? `  ${JSON.stringify(pieces[i])}` : '';
    lines.push(
      `${String(i).padStart(4)} ${String(e.responseTokens[i]).padStart(7)} ${e.actionMask[i]} ${e.logprobs[i] === undefined ? '       -' : e.logprobs[i]!.toFixed(4).padStart(8)} ${e.advantages ? e.advantages[i]!.toFixed(4).padStart(9) : ''.padStart(9)}${text}`,
    );
  }
  if (e.responseTokens.length > n) lines.push(`  ... ${e.responseTokens.length - n} more (use --json)`);
  return lines.join('\n');
}

export const bufferShowCommand = command({
  name: 'buffer show',
  args: 'RUN_OR_DB ID',
  summary: 'one experience: text, reward, per-token log-probs, feedback history',
  flags: { ...BUFFER_FLAGS, json: { type: 'boolean', description: 'the experience as JSON' } },
  run: (a) =>
    withStore(a, async (s, _runId, url) => {
      const id = a.positional[1];
      if (!id) throw new InputError(`usage: ${a.usage}`);
      const e = await s.get(id);
      if (!e) {
        console.error(`rft: no experience '${id}' in ${s.location}`);
        return 1;
      }
      if (a.flags.json) console.log(JSON.stringify(e));
      else {
        // Per-token text from the run's tokenizer (as the editor's token view); ids only without one.
        const tok = await new RunTokenizers(s, url).forRun(e.runId).catch(() => null);
        console.log(showText(e, tok ? tokenPieces(tok, e.responseTokens) : undefined));
        const hist = await s.feedbackLog({ experienceId: id });
        if (hist.length) {
          console.log('--- feedback history');
          for (const h of hist)
            console.log(
              `  #${h.id} ${new Date(h.at).toISOString()} ${h.who} ${h.action}${h.undoneBy ? ` (undone by #${h.undoneBy})` : ''}`,
            );
        }
      }
      return 0;
    }),
});

export const bufferExportCommand = command({
  name: 'buffer export',
  args: 'RUN_OR_DB',
  summary: 'write every experience as JSONL',
  flags: {
    ...BUFFER_FLAGS,
    out: { type: 'string', value: 'FILE.jsonl', required: true, description: 'the file written' },
  },
  run: (a) =>
    withStore(a, async (s, runId) => {
      const out = a.flags.out;
      const n = await exportJsonl(s, out, runId ? (e) => e.runId === runId : undefined);
      console.log(`exported ${n} experiences to ${out}`);
      return 0;
    }),
});

export const bufferImportCommand = command({
  name: 'buffer import',
  args: 'RUN_OR_DB FILE.jsonl',
  summary: 'append experiences from JSONL (bad lines reported, good ones kept)',
  flags: BUFFER_FLAGS,
  run: (a) =>
    withStore(
      a,
      async (s) => {
        const file = a.positional[1];
        if (!file) throw new InputError(`usage: ${a.usage}`);
        const r = await importJsonl(s, file);
        for (const e of r.errors) console.error(e.message);
        console.log(
          `imported ${r.imported} experiences into ${s.location}` +
            (r.duplicates ? `, ${r.duplicates} already present` : '') +
            (r.errors.length ? `, ${r.errors.length} bad lines skipped` : ''),
        );
        return r.errors.length ? 1 : 0;
      },
      true,
    ),
});
