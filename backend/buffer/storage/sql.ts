// SQL shared by the SQLite and PostgreSQL stores: filters, sort orders and the sampling predicates.
// `ph(i)` renders the i-th (1-based) placeholder: '?' for SQLite, '$i' for PostgreSQL.
import { InputError } from '../../core/errors.js';
import type { ExperienceFilter, ListOptions, SortKey } from './types.js';

export type Placeholder = (i: number) => string;

export interface Where {
  sql: string;
  params: unknown[];
}

/** Appends conditions to `params` and returns the WHERE clause ('' when no filter). */
export function filterWhere(f: ExperienceFilter, ph: Placeholder, params: unknown[] = []): Where {
  const conds: string[] = [];
  const add = (cond: (p: string) => string, value: unknown) => {
    params.push(value);
    conds.push(cond(ph(params.length)));
  };
  if (f.runId !== undefined) add((p) => `run_id = ${p}`, f.runId);
  if (f.taskId !== undefined) add((p) => `task_id = ${p}`, f.taskId);
  if (f.groupId !== undefined) add((p) => `group_id = ${p}`, f.groupId);
  if (f.source !== undefined) add((p) => `source = ${p}`, f.source);
  if (f.status !== undefined) add((p) => `status = ${p}`, f.status);
  if (f.split !== undefined)
    add((p) => (f.split === 'train' ? `(split IS NULL OR split = ${p})` : `split = ${p}`), f.split);
  if (f.minReward !== undefined) add((p) => `reward >= ${p}`, f.minReward);
  if (f.maxReward !== undefined) add((p) => `reward <= ${p}`, f.maxReward);
  if (f.minVersion !== undefined) add((p) => `model_version >= ${p}`, f.minVersion);
  if (f.maxVersion !== undefined) add((p) => `model_version <= ${p}`, f.maxVersion);
  if (f.rejected !== undefined) add((p) => `rejected = ${p}`, f.rejected ? 1 : 0);
  if (f.text !== undefined && f.text !== '') {
    const pattern = '%' + f.text.toLowerCase().replace(/[\\%_]/g, (c) => '\\' + c) + '%';
    params.push(pattern);
    const p = ph(params.length);
    conds.push(`(lower(prompt_text) LIKE ${p} ESCAPE '\\' OR lower(response_text) LIKE ${p} ESCAPE '\\')`);
  }
  return { sql: conds.length ? 'WHERE ' + conds.join(' AND ') : '', params };
}

const SORT: Record<SortKey, string> = {
  seq: 'seq',
  createdAt: 'created_at',
  reward: 'reward',
  modelVersion: 'model_version',
  useCount: 'use_count',
};

export function orderLimit(o: ListOptions, ph: Placeholder, params: unknown[]): string {
  const key = o.sort ?? 'seq';
  const col = SORT[key];
  if (!col) throw new InputError(`unknown sort key '${String(key)}'; known: ${Object.keys(SORT).join(', ')}`);
  const dir = o.desc ? 'DESC' : 'ASC';
  const limit = Math.max(0, Math.min(10_000, Math.floor(o.limit ?? 100)));
  const offset = Math.max(0, Math.floor(o.offset ?? 0));
  params.push(limit, offset);
  return `ORDER BY ${col} ${dir}, seq ${dir} LIMIT ${ph(params.length - 1)} OFFSET ${ph(params.length)}`;
}

/** The sampling predicate; `kind` picks the use-count rule. */
export function takeWhere(
  kind: 'fifo' | 'priority' | 'cycle',
  o: { source: string; minVersion?: number; maxUses?: number; runId?: string },
  ph: Placeholder,
  params: unknown[],
  stale = false,
): string {
  const conds: string[] = [];
  // Run first: it leads the experiences_take_run index.
  if (o.runId !== undefined) {
    params.push(o.runId);
    conds.push(`run_id = ${ph(params.length)}`);
  }
  params.push(o.source);
  conds.push('trainable = 1', `source = ${ph(params.length)}`);
  if (kind === 'fifo') conds.push('use_count = 0');
  else if (o.maxUses !== undefined) {
    params.push(o.maxUses);
    conds.push(`use_count < ${ph(params.length)}`);
  }
  if (o.minVersion !== undefined && kind !== 'cycle') {
    params.push(o.minVersion);
    conds.push(`model_version ${stale ? '<' : '>='} ${ph(params.length)}`);
  } else if (stale) conds.push('1 = 0');
  return conds.join(' AND ');
}

/** Log of the replay score, so ordering needs no overflow-prone powers:
 *  ln(priority) + use_count * ln(useDecay) - ln2 * age / halfLife. */
export function priorityScoreSql(
  o: { useDecay: number; halfLifeMs: number; now: number },
  ph: Placeholder,
  params: unknown[],
): string {
  params.push(Math.log(Math.max(o.useDecay, 1e-300)), Math.LN2 / Math.max(o.halfLifeMs, 1e-9), o.now);
  // The casts keep PostgreSQL from inferring integer parameters from `use_count * $n`.
  const [a, b, c] = [ph(params.length - 2), ph(params.length - 1), ph(params.length)].map(
    (p) => `CAST(${p} AS DOUBLE PRECISION)`,
  );
  return `(ln(priority) + use_count * ${a} - ${b} * (${c} - created_at))`;
}

export function checkN(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new InputError(`sample size must be a positive integer, got ${n}`);
}
