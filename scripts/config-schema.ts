// The JSON schema of run configs (`*.rft.yaml`), generated from the zod schema the backend
// validates with, so completion and hover (the YAML extension through contributes.yamlValidation,
// and the extension's own provider) never drift from what a run accepts. Descriptions come from
// the /** */ comments on the zod fields. Run: npx tsx scripts/config-schema.ts (writes the file);
// test/extension/config-schema.test.ts fails while the committed file is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { zodToJsonSchema } from 'zod-to-json-schema';
import { RunConfigSchema } from '../backend/core/config.js';
import { RENAMED_KEYS } from '../backend/core/config-aliases.js';
import { algorithms } from '../backend/trainer/algorithms/bundles.js';
import { workflows } from '../backend/explorer/workflows/index.js';
import { rewardFns } from '../backend/explorer/rewards/registry.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SCHEMA_FILE = join(ROOT, 'media', 'schemas', 'rft-config.schema.json');
/** Sources whose z.object({...}) field comments become descriptions. */
const SOURCES = [
  'backend/core/config.ts',
  'backend/core/config-model.ts',
  'backend/core/config-taskset.ts',
  'backend/core/config-explorer.ts',
  'backend/core/config-buffer.ts',
  'backend/core/config-trainer.ts',
  'backend/core/lora-config.ts',
  'backend/core/config-serve.ts',
];

/** Top-level sections the zod source leaves without a doc comment. */
const SECTION_DOCS: Record<string, string> = {
  name: 'Name of the run (shown in the Runs view and the dashboard).',
  mode: 'both: explore and train; explore: rollouts only; train: from recorded experiences only; bench: measure the explorer; serve: serve the policy as an OpenAI-compatible endpoint and train on rewarded calls (docs/serve.md).',
  seed: 'Seed of sampling, shuffling and initialisation.',
  model: 'The policy model: a built-in size or a checkpoint (an imported Hugging Face folder or a run checkpoint).',
  tokenizer: 'Tokenizer of a built-in model size (a checkpoint brings its own).',
  taskset: 'The tasks to train on: a built-in generator or a file of the workspace.',
  eval: 'Held-out tasks for eval_accuracy (default: the taskset with split eval).',
  workflow: 'How a task becomes experiences (single_turn, multi_turn, vision, ...) and the default reward.',
  algorithm: 'The RL algorithm (mix, grpo, ppo, sft, dpo, ...) and its parameters.',
  buffer: 'Where experiences are stored and how the trainer samples them.',
  explorer: 'Rollout generation: workers, tasks per step, repeats, sampling.',
  trainer: 'Optimisation: batch size, learning rate and its schedule, steps.',
  synchronizer: 'When new weights reach the explorer: sync, one_step_off or async; sync_interval and sync_offset.',
  stages: 'Successive stages (e.g. SFT then MIX), each with its own algorithm and steps.',
  monitor: 'Evaluation every N steps and the HTML report.',
};

type Json = {
  [k: string]: unknown;
  properties?: Record<string, Json>;
  items?: Json;
  anyOf?: Json[];
  description?: string;
};

/** Each z.object({...}) literal: its keys and the doc comment of each key that has one. */
export function objectDocs(source: string): { keys: string[]; docs: Map<string, string> }[] {
  const sf = ts.createSourceFile('x.ts', source, ts.ScriptTarget.ES2022, true);
  const out: { keys: string[]; docs: Map<string, string> }[] = [];
  const visit = (n: ts.Node): void => {
    if (
      ts.isCallExpression(n) &&
      ts.isPropertyAccessExpression(n.expression) &&
      n.expression.name.text === 'object' &&
      n.arguments[0] &&
      ts.isObjectLiteralExpression(n.arguments[0])
    ) {
      const keys: string[] = [];
      const docs = new Map<string, string>();
      for (const p of n.arguments[0].properties) {
        const name = p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : undefined;
        if (!name) continue;
        keys.push(name);
        const text = source.slice(p.getFullStart(), p.getStart());
        const doc = [...text.matchAll(/\/\*\*([\s\S]*?)\*\//g)].at(-1)?.[1];
        if (doc)
          docs.set(
            name,
            doc
              .split('\n')
              .map((l) => l.replace(/^\s*\*?\s?/, '').trim())
              .filter(Boolean)
              .join(' '),
          );
      }
      out.push({ keys, docs });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** Attach descriptions to every object node whose key set is that of a documented z.object. */
function describe(node: Json, objects: ReturnType<typeof objectDocs>): void {
  if (node.properties) {
    const keys = Object.keys(node.properties).sort().join(',');
    // An extended object (eval = the taskset's fields + holdout) takes the docs of the object it extends.
    const match =
      objects.find((o) => [...o.keys].sort().join(',') === keys) ??
      objects.find((o) => o.keys.length >= 5 && o.keys.every((k) => k in node.properties!));
    for (const [k, v] of Object.entries(node.properties)) {
      const d = match?.docs.get(k);
      if (d && !v.description) v.description = d;
      describe(v, objects);
    }
  }
  if (node.items) describe(node.items, objects);
  for (const a of node.anyOf ?? []) describe(a, objects);
}

export function configJsonSchema(): Json {
  const schema = zodToJsonSchema(RunConfigSchema, { $refStrategy: 'none', target: 'jsonSchema7' }) as Json;
  const objects = SOURCES.flatMap((f) => objectDocs(readFileSync(join(ROOT, f), 'utf8')));
  describe(schema, objects);
  for (const [k, d] of Object.entries(SECTION_DOCS)) {
    const p = schema.properties?.[k];
    if (p && !p.description) p.description = d;
  }
  // A renamed key's old spelling still loads (core/config-aliases.ts): allowed, marked deprecated, so
  // the YAML extension strikes it through instead of calling it unknown.
  for (const r of RENAMED_KEYS) {
    const [parent, key] = r.old.split('.') as [string, string];
    const at = (path: string): Json | undefined =>
      path.split('.').reduce<Json | undefined>((n, k) => n?.properties?.[k], schema);
    const now = at(r.now);
    const obj = schema.properties?.[parent];
    if (!now || !obj?.properties || !key) throw new Error(`config-schema: renamed key ${r.old} -> ${r.now} not found`);
    const { default: _, ...type } = now;
    obj.properties[key] = {
      ...type,
      deprecated: true,
      description: `Renamed ${r.now}: ${r.why}.`,
      deprecationMessage: `Renamed '${r.now}'; the old spelling still works.`,
    };
  }
  // Registered names as `examples` (completion offers them; a name registered by workspace code stays
  // valid, so they are no enum): algorithm.name, also in each stage, workflow.name, workflow.reward.
  const named = (node: Json | undefined, names: string[]) => {
    if (node) node.examples = names;
  };
  const prop = (n: Json | undefined, ...keys: string[]) =>
    keys.reduce<Json | undefined>((x, k) => x?.properties?.[k], n);
  named(prop(schema, 'algorithm', 'name'), algorithms.names());
  named(prop(schema.properties?.stages?.items, 'algorithm', 'name'), algorithms.names());
  named(prop(schema, 'workflow', 'name'), workflows.names());
  named(prop(schema, 'workflow', 'reward'), rewardFns.names());
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://rft-studio.dev/schemas/rft-config.schema.json',
    title: 'RFT Studio run config (*.rft.yaml)',
    description:
      'A training run: model, tasksets, algorithm, explorer, trainer, synchronizer and stages. Generated from backend/core/config.ts.',
    ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$schema')),
  };
}

export function schemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(SCHEMA_FILE, schemaText());
  console.log(`wrote ${SCHEMA_FILE}`);
}
