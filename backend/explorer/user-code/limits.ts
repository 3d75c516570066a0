// Bounds on what a `workflow.file` hands back to the explorer and prints, and when it is given up on
// (user-code/host.ts, user-code/worker.ts). Values are checked in the user code's thread, before they
// are posted: a value the explorer cannot hold (a 5e6-element `details` exhausted the explorer's heap
// while it was being received) or cannot write (a BigInt crashed the buffer's JSON) never reaches it.

/** Largest reward result (its `details` included), as JSON would count it. */
export const MAX_REWARD_RESULT_BYTES = 1 << 20;
/** Largest workflow result (its experiences with their tokens), as JSON would count it. */
export const MAX_WORKFLOW_RESULT_BYTES = 64 << 20;
/** Largest request of a workflow to the explorer (ctx.model.generate's prompts, ctx.reward's response). */
export const MAX_REQUEST_BYTES = 64 << 20;
/** Output (stdout and stderr together) of one file's code passed on to the run's own; the rest is dropped and counted. */
export const OUTPUT_CAP_BYTES = 1 << 20;
/** Calls in a row that pass their time limit before the file is given up on for the rest of the run. */
export const BREAKER_TIMEOUTS = 3;
/** Heap of the user code's thread: running out of it ends that thread (its calls fail), never the run. */
export const USER_CODE_HEAP_MB = 2048;

const mib = (n: number): string => `${(n / (1 << 20)).toFixed(n < 1 << 20 ? 2 : 0)} MiB`;

/**
 * Why VALUE cannot be passed back as plain data within LIMIT bytes, naming the field (`details.x`,
 * `[3].logprobs`), or undefined when it can: a BigInt, function or symbol, a cycle, a Map / Set
 * (JSON would lose them), or a size past LIMIT. The walk stops at the limit (a huge value costs
 * what the limit allows, not its size).
 */
export function plainDataProblem(value: unknown, limit: number, root = 'the value'): string | undefined {
  let bytes = 0;
  const path: string[] = [];
  const open = new Set<object>();
  const where = () => (path.length ? `field '${path.join('').replace(/^\./, '')}'` : root);
  const visit = (v: unknown): string | undefined => {
    if (bytes > limit) return undefined;
    switch (typeof v) {
      case 'string':
        bytes += v.length + 2;
        break;
      case 'number':
        bytes += 8;
        break;
      case 'boolean':
      case 'undefined':
        bytes += 5;
        break;
      case 'bigint':
        return `${where()} is a BigInt, which is not plain data (JSON has no BigInt): return a number or a string`;
      case 'function':
        return `${where()} is a function, which is not plain data`;
      case 'symbol':
        return `${where()} is a symbol, which is not plain data`;
      case 'object': {
        if (v === null) {
          bytes += 4;
          break;
        }
        if (open.has(v))
          return `${where()} refers back to an object that contains it (a cycle), which is not plain data`;
        if (v instanceof Map || v instanceof Set)
          return `${where()} is a ${v instanceof Map ? 'Map' : 'Set'}, which JSON would lose: use an object or an array`;
        if (ArrayBuffer.isView(v)) {
          bytes += v.byteLength;
          break;
        }
        open.add(v);
        if (Array.isArray(v)) {
          for (let i = 0; i < v.length && bytes <= limit; i++) {
            path.push(`[${i}]`);
            const p = visit(v[i]);
            path.pop();
            if (p) return p;
          }
        } else {
          for (const k of Object.keys(v)) {
            if (bytes > limit) break;
            bytes += k.length + 3;
            path.push(`.${k}`);
            const p = visit((v as Record<string, unknown>)[k]);
            path.pop();
            if (p) return p;
          }
        }
        open.delete(v);
        break;
      }
    }
    if (bytes > limit) return `${where()} takes ${root} past ${mib(limit)}, the most it may be`;
    return undefined;
  };
  return visit(value);
}
