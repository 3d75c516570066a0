// Shared by the task and experience pipelines: operators are small registered units, each with a zod
// schema for its parameters; a pipeline is a list `[{name, ...params}]` (plain objects from YAML).
// Every problem is reported with its path, e.g. `task_pipeline[2].max_chars: expected number, got string`.
import { InputError } from '../../../core/errors.js';
import type { z } from 'zod';
import type { Registry } from '../../../core/registry.js';

export interface OperatorSpec<Op, Deps> {
  summary: string;
  /** Parameters (everything but `name`); use `.strict()` so misspelt keys are errors. */
  params: z.ZodTypeAny;
  /** May throw when a dependency is missing (e.g. a tokenizer); the message is reported at the step's path. */
  // biome-ignore lint/suspicious/noExplicitAny: each operator narrows its own params with `params` (zod)
  create(params: any, deps: Deps): Op;
}

export interface PipelineIssue {
  path: string;
  message: string;
}

export class PipelineConfigError extends InputError {
  constructor(readonly issues: PipelineIssue[]) {
    super(issues.map((i) => `${i.path}: ${i.message}`).join('\n'));
    this.name = 'PipelineConfigError';
  }
}

export interface BuiltStep<Op> {
  name: string;
  op: Op;
}

function issueText(i: z.ZodIssue): { path: (string | number)[]; message: string }[] {
  if (i.code === 'invalid_type')
    return [
      {
        path: i.path,
        message:
          i.received === 'undefined' ? 'required parameter is missing' : `expected ${i.expected}, got ${i.received}`,
      },
    ];
  if (i.code === 'unrecognized_keys')
    return i.keys.map((k) => ({ path: [...i.path, k], message: 'unknown parameter' }));
  return [{ path: i.path, message: i.message }];
}

const joinPath = (base: string, path: (string | number)[]): string =>
  path.reduce<string>((s, p) => (typeof p === 'number' ? `${s}[${p}]` : `${s}.${p}`), base);

/** Validate a pipeline config and create its operators; throws PipelineConfigError listing every problem. */
export function buildSteps<Op, Deps>(
  registry: Registry<OperatorSpec<Op, Deps>>,
  raw: unknown,
  deps: Deps,
  base: string,
): BuiltStep<Op>[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw))
    throw new PipelineConfigError([{ path: base, message: `expected a list of operators, got ${typeof raw}` }]);
  const issues: PipelineIssue[] = [];
  const steps: BuiltStep<Op>[] = [];
  raw.forEach((item: unknown, k) => {
    const at = `${base}[${k}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      issues.push({
        path: at,
        message: `expected an object like {name: ...}, got ${Array.isArray(item) ? 'array' : typeof item}`,
      });
      return;
    }
    const { name, ...params } = item as Record<string, unknown>;
    if (typeof name !== 'string') {
      issues.push({
        path: `${at}.name`,
        message: name === undefined ? 'required: the operator name' : `expected string, got ${typeof name}`,
      });
      return;
    }
    if (!registry.has(name)) {
      issues.push({ path: `${at}.name`, message: `unknown operator '${name}'; known: ${registry.names().join(', ')}` });
      return;
    }
    const spec = registry.get(name);
    const r = spec.params.safeParse(params);
    if (!r.success) {
      for (const i of r.error.issues)
        for (const t of issueText(i)) issues.push({ path: joinPath(at, t.path), message: t.message });
      return;
    }
    try {
      steps.push({ name, op: spec.create(r.data, deps) });
    } catch (e) {
      issues.push({ path: at, message: (e as Error).message });
    }
  });
  if (issues.length > 0) throw new PipelineConfigError(issues);
  return steps;
}
