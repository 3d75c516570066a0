// An AdamW optimiser's state (step count, first and second moments) as a safetensors file, keyed by
// the model's HF parameter names (tfjs variable names carry a per-instance prefix that a reloaded
// model does not share). The PPO critic's is saved beside it in a checkpoint's critic/ folder, so a
// resumed run or the next PPO stage continues the critic's updates where they were, not from zero
// moments with a fresh bias correction.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { InputError } from '../core/errors.js';
import type { AdamW } from './optim.js';
import { readSafetensors, writeSafetensors } from './safetensors.js';
import type { Transformer } from './transformer.js';

export const OPTIMIZER_FILE = 'optimizer.safetensors';

export async function saveOptimizerState(opt: AdamW, model: Transformer, file: string): Promise<void> {
  const s = await opt.state();
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const v of model.variables()) {
    const name = model.paramName(v.name);
    if (s.m[v.name]) tensors.set(`m.${name}`, { shape: v.shape, data: s.m[v.name]! });
    if (s.v[v.name]) tensors.set(`v.${name}`, { shape: v.shape, data: s.v[v.name]! });
  }
  writeFileSync(file, writeSafetensors(tensors, { format: 'rft-adamw', step: String(s.t) }));
}

/**
 * Loads the state saved for `model` into `opt`; false when there is no file. A file that does not
 * fit the model (a moment missing or of another shape, no step count) is refused by file and field.
 */
export function loadOptimizerState(file: string, model: Transformer, opt: AdamW): boolean {
  if (!existsSync(file)) return false;
  const { tensors, metadata } = readSafetensors(readFileSync(file), file);
  const t = Number(metadata.step);
  if (!(Number.isInteger(t) && t >= 0))
    throw new InputError(`expected the optimiser's step count, a whole number, got ${JSON.stringify(metadata.step)}`, {
      file,
      field: '__metadata__.step',
    });
  const m: Record<string, Float32Array> = {};
  const v: Record<string, Float32Array> = {};
  for (const x of model.variables()) {
    const name = model.paramName(x.name);
    for (const [kind, into] of [
      ['m', m],
      ['v', v],
    ] as const) {
      const e = tensors.get(`${kind}.${name}`);
      if (!e) throw new InputError('moment missing for a parameter of the model', { file, field: `${kind}.${name}` });
      if (e.shape.length !== x.shape.length || e.shape.some((d, i) => d !== x.shape[i]))
        throw new InputError(`shape [${e.shape}] does not match the parameter's [${x.shape}]`, {
          file,
          field: `${kind}.${name}`,
        });
      into[x.name] = e.data;
    }
  }
  opt.loadState({ t, m, v });
  return true;
}
