// definePolicyLoss: a policy-loss unit with its own parameter type, wrapped so its compute checks the
// required inputs and de-aliases metric tensors (the map of units by name is ./registry.ts).
import { distinctMetrics } from '../masked.js';
import type { PolicyInputName, PolicyLossFn, PolicyLossInputs } from '../types.js';

/** A policy-loss unit whose compute checks the required inputs and de-aliases metric tensors. */
export function definePolicyLoss<P extends object>(fn: PolicyLossFn<P>): PolicyLossFn<P> {
  const wrapped: PolicyLossFn<P> = {
    ...fn,
    compute(inputs, params) {
      requirePolicyInputs(fn.name, inputs, fn.requires);
      const out = fn.compute(inputs, params);
      return { ...out, metrics: distinctMetrics(out.loss, out.metrics) };
    },
  };
  return wrapped;
}

export function requirePolicyInputs(name: string, inputs: PolicyLossInputs, names: readonly PolicyInputName[]): void {
  const [B, T] = inputs.logprob.shape;
  const check = (key: string, shape: number[], want: number[]) => {
    if (shape.length !== want.length || shape.some((d, i) => d !== want[i])) {
      throw new Error(`policy loss '${name}': input '${key}' has shape [${shape}], expected [${want}]`);
    }
  };
  check('actionMask', inputs.actionMask.shape, [B, T]);
  for (const n of names) {
    const t = inputs[n];
    if (!t) throw new Error(`policy loss '${name}': missing input '${n}'`);
    check(n, t.shape, n === 'expertMask' ? [B] : [B, T]);
  }
}
