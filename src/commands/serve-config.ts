// A run config turned into a `mode: serve` one (Serve Policy for an Agent…): the same model, taskset
// (its eval set gives the base / final accuracy), algorithm and trainer, with what a serve run does
// not read taken out (backend/core/config-serve.ts refuses it) and the reply length moved to
// serve.limits.max_tokens. The user's comments and layout stay; the result is written under a new name.
import { isMap, parseDocument } from 'yaml';

/** Sections a serve run refuses, with why (said in the header comment of the written file). */
const DROPPED: [path: string[], why: string][] = [
  [['explorer', 'tasks_per_step'], 'the callers are the tasks'],
  [['explorer', 'workers'], 'the callers are the tasks'],
  [['explorer', 'partial_rollout'], 'the callers are the tasks'],
  [['explorer', 'sampling', 'top_k'], 'each request gives its own sampling'],
  [['explorer', 'sampling', 'top_p'], 'each request gives its own sampling'],
  [['taskset', 'selector'], 'no task is picked'],
  [['experts'], 'a serve run trains on served episodes'],
  [['stages'], 'one stage: the top-level algorithm and trainer.steps'],
];

export interface ServeConfigText {
  text: string;
  /** The run name in the new file. */
  name: string;
  /** Dotted paths taken out. */
  dropped: string[];
  /** The file already was a serve config (nothing changed). */
  already: boolean;
}

/** The serve form of a config's YAML text; `source` names the file in its header comment. */
export function toServeConfig(yaml: string, source: string): ServeConfigText {
  const doc = parseDocument(yaml);
  if (doc.errors.length) throw new Error(`${source}: not valid YAML: ${doc.errors[0]!.message}`);
  if (!isMap(doc.contents)) throw new Error(`${source}: expected a run config (a YAML mapping)`);
  const name = String(doc.get('name') ?? 'agent');
  if (doc.get('mode') === 'serve') return { text: yaml, name, dropped: [], already: true };
  const dropped: string[] = [];
  for (const [path] of DROPPED)
    if (doc.hasIn(path)) {
      doc.deleteIn(path);
      dropped.push(path.join('.'));
    }
  const maxNew = doc.getIn(['explorer', 'sampling', 'max_new_tokens']);
  if (maxNew !== undefined) {
    doc.deleteIn(['explorer', 'sampling', 'max_new_tokens']);
    dropped.push('explorer.sampling.max_new_tokens');
  }
  // An emptied sampling section would be an empty mapping: taken out with it.
  const sampling = doc.getIn(['explorer', 'sampling']);
  if (isMap(sampling) && sampling.items.length === 0) doc.deleteIn(['explorer', 'sampling']);
  const serveName = `${name}-serve`;
  doc.set('name', serveName);
  doc.set('mode', 'serve');
  doc.set('placement', 'memory');
  if (!doc.has('serve'))
    doc.set(
      'serve',
      doc.createNode({
        host: '127.0.0.1',
        port: 0,
        limits: { max_tokens: typeof maxNew === 'number' ? Math.max(maxNew, 64) : 256 },
        reward_timeout_seconds: 600,
      }),
    );
  const why = DROPPED.filter(([p]) => dropped.includes(p.join('.'))).map(([p, w]) => `${p.join('.')} (${w})`);
  if (dropped.includes('explorer.sampling.max_new_tokens'))
    why.push('explorer.sampling.max_new_tokens (serve.limits.max_tokens bounds a reply)');
  doc.commentBefore = [
    ` Serve ${name} for an agent (mode serve, docs/serve.md), made from ${source}.`,
    ' Point an OpenAI client at the base URL the run prints, with the bearer token from its token file.',
    ...(why.length ? [` Taken out (a serve run does not read them): ${why.join(', ')}.`] : []),
  ].join('\n');
  return { text: doc.toString(), name: serveName, dropped, already: false };
}
