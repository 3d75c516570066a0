// Checks that a value is a well-formed Experience before it is stored (append, JSONL import).
// Errors name the field (and file/line when the caller passes them) so bad data can be fixed.
import { InputError, type InputLocation } from '../../core/errors.js';
import type { Experience } from '../../core/types.js';

const SOURCES = ['usual', 'expert'];
const STATUSES = ['ok', 'invalid', 'infra_failure', 'partial'];
const I32_MIN = -(2 ** 31);
const I32_MAX = 2 ** 31 - 1;

export function parseExperience(v: unknown, loc: InputLocation = {}): Experience {
  const fail = (field: string, msg: string): never => {
    throw new InputError(msg, { ...loc, field: loc.field ? `${loc.field}.${field}` : field });
  };
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new InputError('expected an experience object', loc);
  const o = v as Record<string, unknown>;
  const str = (f: string, nonEmpty = true): string => {
    const x = o[f];
    if (typeof x !== 'string' || (nonEmpty && x.length === 0))
      fail(f, nonEmpty ? 'must be a non-empty string' : 'must be a string');
    return x as string;
  };
  const num = (f: string): number => {
    const x = o[f];
    if (typeof x !== 'number' || !Number.isFinite(x)) fail(f, 'must be a finite number');
    return x as number;
  };
  const ints = (f: string): number[] => {
    const x = o[f];
    if (!Array.isArray(x)) return fail(f, 'must be an array of integers');
    for (let i = 0; i < x.length; i++) {
      const t = x[i];
      if (typeof t !== 'number' || !Number.isInteger(t) || t < I32_MIN || t > I32_MAX)
        fail(`${f}[${i}]`, `must be a 32-bit integer, got ${JSON.stringify(t)}`);
    }
    return x as number[];
  };
  const floats = (f: string, len: number): number[] => {
    const x = o[f];
    if (!Array.isArray(x)) return fail(f, 'must be an array of numbers');
    if (x.length !== len) fail(f, `has ${x.length} values, expected ${len} (one per response token)`);
    for (let i = 0; i < x.length; i++)
      if (typeof x[i] !== 'number' || !Number.isFinite(x[i]))
        fail(`${f}[${i}]`, `must be a finite number, got ${JSON.stringify(x[i])}`);
    return x as number[];
  };
  const obj = (f: string): Record<string, unknown> | undefined => {
    const x = o[f];
    if (x === undefined) return undefined;
    if (!x || typeof x !== 'object' || Array.isArray(x)) fail(f, 'must be an object');
    return x as Record<string, unknown>;
  };

  const e: Experience = {
    id: str('id'),
    taskId: str('taskId'),
    groupId: str('groupId'),
    runId: str('runId'),
    source: str('source') as Experience['source'],
    promptTokens: ints('promptTokens'),
    promptText: str('promptText', false),
    responseTokens: ints('responseTokens'),
    responseText: str('responseText', false),
    actionMask: [],
    logprobs: [],
    modelVersion: num('modelVersion'),
    reward: num('reward'),
    status: str('status') as Experience['status'],
    useCount: o.useCount === undefined ? 0 : num('useCount'),
    createdAt: num('createdAt'),
  };
  if (!SOURCES.includes(e.source)) fail('source', `must be one of ${SOURCES.join(', ')}, got '${e.source}'`);
  if (!STATUSES.includes(e.status)) fail('status', `must be one of ${STATUSES.join(', ')}, got '${e.status}'`);
  if (!Number.isInteger(e.modelVersion) || e.modelVersion < -1)
    fail('modelVersion', 'must be an integer >= -1 (-1 for human-written data)');
  if (!Number.isInteger(e.useCount) || e.useCount < 0) fail('useCount', 'must be an integer >= 0');
  const n = e.responseTokens.length;
  e.actionMask = ints('actionMask');
  if (e.actionMask.length !== n)
    fail('actionMask', `has ${e.actionMask.length} values, expected ${n} (one per response token)`);
  e.actionMask.forEach((m, i) => (m === 0 || m === 1 ? 0 : fail(`actionMask[${i}]`, `must be 0 or 1, got ${m}`)));
  // Model-generated data must carry its behaviour log-probs; only human-written data (version -1) may omit them.
  const lp = o.logprobs;
  if (Array.isArray(lp) && lp.length === 0 && e.modelVersion === -1) e.logprobs = [];
  else e.logprobs = floats('logprobs', n);
  if (o.advantages !== undefined) e.advantages = floats('advantages', n);
  if (o.returns !== undefined) e.returns = floats('returns', n);
  if (o.split !== undefined) {
    if (o.split !== 'train' && o.split !== 'eval')
      fail('split', `must be 'train' or 'eval', got ${JSON.stringify(o.split)}`);
    e.split = o.split as 'train' | 'eval';
  }
  if (o.statusReason !== undefined) e.statusReason = str('statusReason', false);
  const rd = obj('rewardDetails');
  if (rd) {
    for (const [k, x] of Object.entries(rd))
      if (!['number', 'string', 'boolean'].includes(typeof x))
        fail(`rewardDetails.${k}`, 'must be a number, string or boolean');
    e.rewardDetails = rd as Experience['rewardDetails'];
  }
  const fb = obj('feedback');
  if (fb) {
    if (fb.rating !== undefined && (typeof fb.rating !== 'number' || !Number.isFinite(fb.rating)))
      fail('feedback.rating', 'must be a finite number');
    if (fb.rejected !== undefined && typeof fb.rejected !== 'boolean') fail('feedback.rejected', 'must be a boolean');
    e.feedback = fb as Experience['feedback'];
  }
  const md = obj('metadata');
  if (md) e.metadata = md;
  if (o.segments !== undefined) e.segments = parseSegments(o.segments, n, fail);
  return e;
}

/** Segments must be in order, contiguous and cover the response exactly (what the trainer masks by). */
function parseSegments(v: unknown, n: number, fail: (field: string, msg: string) => never): Experience['segments'] {
  if (!Array.isArray(v)) return fail('segments', 'must be an array of {version, start, end}');
  let at = 0;
  v.forEach((s: unknown, i) => {
    const o = (s && typeof s === 'object' ? s : {}) as Record<string, unknown>;
    for (const k of ['version', 'start', 'end'] as const)
      if (typeof o[k] !== 'number' || !Number.isInteger(o[k])) fail(`segments[${i}].${k}`, 'must be an integer');
    if ((o.version as number) < -1) fail(`segments[${i}].version`, 'must be >= -1');
    if (o.start !== at) fail(`segments[${i}].start`, `must be ${at} (segments are contiguous from 0)`);
    if ((o.end as number) <= at) fail(`segments[${i}].end`, `must be > start ${at}`);
    at = o.end as number;
  });
  if (at !== n) fail('segments', `cover ${at} tokens, the response has ${n}`);
  return v as Experience['segments'];
}
