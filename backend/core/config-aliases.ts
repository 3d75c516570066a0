// Config keys renamed so that one concept has one name across code, config, CLI and docs. The old
// spelling still loads, moved to the new key, with a warning naming both (a config written before the
// rename keeps working); giving both is an error, since the two could disagree.
import type { ConfigIssue } from './config.js';

/** Old dotted path -> new dotted path (at most two levels). */
export const RENAMED_KEYS: ReadonlyArray<{ old: string; now: string; why: string }> = [
  {
    old: 'synchronizer.method',
    now: 'placement',
    why: 'it picks where the explorer and trainer run (memory: one process; checkpoint: their own processes)',
  },
  {
    old: 'synchronizer.mode',
    now: 'synchronizer.schedule',
    why: "'mode' is the run's and each stage's (both, train, explore, bench); this one says how far the explorer may run ahead (sync, one_step_off, async)",
  },
];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface Aliased {
  /** `raw` with each old key moved to its new name (the objects on the way copied, `raw` untouched). */
  value: unknown;
  /** One per old spelling used: loads, but say the new name. */
  warnings: ConfigIssue[];
  /** Old and new spelling both given. */
  issues: ConfigIssue[];
}

export function applyKeyAliases(raw: unknown): Aliased {
  const out: Aliased = { value: raw, warnings: [], issues: [] };
  if (!isObj(raw)) return out;
  let root: Obj = raw;
  for (const r of RENAMED_KEYS) {
    const [oParent, oKey] = split(r.old);
    const [nParent, nKey] = split(r.now);
    const from = oParent ? root[oParent] : root;
    if (!isObj(from) || from[oKey] === undefined) continue;
    const target = nParent ? root[nParent] : root;
    if (isObj(target) && target[nKey] !== undefined) {
      out.issues.push({ path: r.old, message: `renamed '${r.now}', which is given too; remove '${r.old}'` });
      continue;
    }
    const v = from[oKey];
    root = { ...root };
    if (oParent) {
      const { [oKey]: _, ...rest } = from;
      root[oParent] = rest;
    } else delete root[oKey];
    if (nParent) root[nParent] = { ...(isObj(root[nParent]) ? (root[nParent] as Obj) : {}), [nKey]: v };
    else root[nKey] = v;
    out.warnings.push({
      path: r.old,
      message: `renamed '${r.now}' (${r.why}); the old spelling still works: write '${r.now}: ${String(v)}' instead`,
    });
  }
  out.value = root;
  return out;
}

/** The dotted path where a key of the aliased config was written in the file (its old spelling, if used). */
export function writtenPath(path: string, warnings: ConfigIssue[]): string {
  for (const r of RENAMED_KEYS)
    if ((path === r.now || path.startsWith(`${r.now}.`)) && warnings.some((w) => w.path === r.old))
      return r.old + path.slice(r.now.length);
  return path;
}

function split(path: string): [string | undefined, string] {
  const i = path.indexOf('.');
  return i < 0 ? [undefined, path] : [path.slice(0, i), path.slice(i + 1)];
}
