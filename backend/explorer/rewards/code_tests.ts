// code_tests: the model writes a JavaScript function `task.entryPoint` (a ```js fenced block, or a
// definition in prose); it runs in the sandbox against task.tests, each call compared (deep
// equality, in the host, on the safely decoded value) with the expected value.
// reward = passed / total. The code's own failures (syntax error, throw, timeout, memory, output
// limit, crash) are status ok with the tests they failed; a sandbox failure is infra_failure.
import type { Task } from '../../core/types.js';
import { deepEqualResult, extractFunction, sharedSandbox, type SandboxPool } from '../sandbox/index.js';
import type { RewardResult } from '../workflow.js';
import { badTask } from './bad-task.js';

/** Code longer than this is not run (status ok, reward 0): the model wrote a novel, not a function. */
export const MAX_CODE_CHARS = 100_000;

export async function runCodeTests(
  task: Task,
  response: string,
  pool: SandboxPool,
  signal?: AbortSignal,
): Promise<RewardResult> {
  const name = task.entryPoint;
  const tests = task.tests;
  if (typeof name !== 'string' || !/^[A-Za-z_$][\w$]*$/.test(name))
    return badTask('code_tests needs task.entryPoint (a function name)');
  if (!Array.isArray(tests) || tests.length === 0) return badTask('code_tests needs task.tests');
  const total = tests.length;
  const { code, source } = extractFunction(response, name);
  if (code.length > MAX_CODE_CHARS)
    return { reward: 0, status: 'ok', details: { passed: 0, total, kind: 'too_long', source } };
  const r = await pool.run({ code, entryPoint: name, args: tests.map((t) => t.args) }, signal);
  if (r.status === 'infra_failure') return { reward: 0, status: 'infra_failure', reason: `sandbox: ${r.reason}` };
  let passed = 0;
  let firstError = r.error;
  // Only the first `total` results count: a worker can never report more passes than there are tests.
  for (let i = 0; i < total; i++) {
    const c = r.calls[i];
    if (c?.ok && deepEqualResult(c.value, tests[i]!.expected)) passed++;
    else if (!firstError)
      firstError = c ? (c.ok ? `test ${i}: wrong result` : `test ${i}: ${c.kind}: ${c.error}`) : `test ${i}: not run`;
  }
  return {
    reward: passed / total,
    status: 'ok',
    details: {
      passed,
      total,
      kind: r.kind,
      source,
      ms: Math.round(r.ms),
      ...(firstError ? { error: firstError.slice(0, 300) } : {}),
    },
  };
}

export async function codeTests(task: Task, response: string, ctx?: { signal?: AbortSignal }): Promise<RewardResult> {
  return runCodeTests(task, response, sharedSandbox(), ctx?.signal);
}
