// LoRA adapters on disk in PEFT's layout: adapter_config.json + adapter_model.safetensors with
// `base_model.model.<module>.lora_A.weight` [r, in] and `...lora_B.weight` [out, r]. A checkpoint of
// a LoRA run keeps its base weights in model.safetensors and its adapters in these two files.
import { closeSync, existsSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tf } from './engine.js';
import { InputError } from '../core/errors.js';
import {
  loraA,
  loraB,
  loraModules,
  parsePeftAdapterConfig,
  peftAdapterConfig,
  PEFT_PREFIX,
  type LoraConfig,
} from './lora.js';
import { readSafetensorsHeader, readTensorEntry, writeSafetensors } from './safetensors.js';
import type { Transformer } from './transformer.js';
import { readRegularFile } from '../core/regular-file.js';

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

export function hasAdapter(dir: string): boolean {
  return existsSync(join(dir, ADAPTER_CONFIG_FILE));
}

/** The model's adapters as PEFT stores them (A [r, in], B [out, r]), keyed by PEFT's tensor names. */
export async function peftTensors(model: Transformer): Promise<Map<string, { shape: number[]; data: Float32Array }>> {
  const out = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [name, v] of model.adapters) {
    const t = tf.transpose(v);
    out.set(PEFT_PREFIX + name, { shape: t.shape, data: (await t.data()) as Float32Array });
    t.dispose();
  }
  return out;
}

/** Writes adapter_config.json + adapter_model.safetensors into `dir` (which exists). */
export async function writeAdapterFiles(model: Transformer, dir: string, baseModel: string): Promise<void> {
  if (!model.lora) throw new Error('the model has no LoRA adapters');
  writeFileSync(join(dir, ADAPTER_WEIGHTS_FILE), writeSafetensors(await peftTensors(model), { format: 'pt' }));
  writeFileSync(
    join(dir, ADAPTER_CONFIG_FILE),
    JSON.stringify(peftAdapterConfig(model.lora, baseModel), null, 2) + '\n',
  );
}

export function readAdapterConfig(dir: string): LoraConfig {
  const file = join(dir, ADAPTER_CONFIG_FILE);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readRegularFile(file, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`not valid JSON (${(e as Error).message})`, { file });
  }
  return parsePeftAdapterConfig(raw, file);
}

/**
 * Adds the adapters of `dir` to `model` (which has none): every tensor checked by name and shape
 * against the config's modules first; a missing, extra, misshapen or non-finite tensor is refused by name.
 */
export function loadAdapterFiles(model: Transformer, dir: string): LoraConfig {
  const lora = readAdapterConfig(dir);
  const file = join(dir, ADAPTER_WEIGHTS_FILE);
  if (!existsSync(file)) throw new InputError(`no ${ADAPTER_WEIGHTS_FILE} next to ${ADAPTER_CONFIG_FILE}`, { file });
  const { entries } = readSafetensorsHeader(file);
  const wanted = new Map<string, number[]>();
  for (const m of loraModules(model.config, lora)) {
    wanted.set(loraA(m.module), [lora.rank, m.in]);
    wanted.set(loraB(m.module), [m.out, lora.rank]);
  }
  for (const [name, shape] of wanted) {
    const e = entries.get(PEFT_PREFIX + name);
    if (!e)
      throw new InputError('adapter tensor missing (adapter_config.json expects it)', {
        file,
        field: PEFT_PREFIX + name,
      });
    if (e.shape.length !== 2 || e.shape[0] !== shape[0] || e.shape[1] !== shape[1])
      throw new InputError(`shape [${e.shape}] does not match [${shape}]`, { file, field: PEFT_PREFIX + name });
  }
  const extra = [...entries.keys()].filter(
    (n) => !n.startsWith(PEFT_PREFIX) || !wanted.has(n.slice(PEFT_PREFIX.length)),
  );
  if (extra.length)
    throw new InputError(`tensors not in adapter_config.json's modules: ${extra.slice(0, 3).join(', ')}`, {
      file,
      field: extra[0],
    });
  model.addLora(lora);
  const fd = openSync(file, 'r');
  try {
    for (const name of wanted.keys()) {
      const e = entries.get(PEFT_PREFIX + name)!;
      const data = readTensorEntry(e, fd);
      for (let i = 0; i < data.length; i++)
        if (!Number.isFinite(data[i]!))
          throw new InputError(`value ${data[i]} at index ${i} is not finite`, { file, field: PEFT_PREFIX + name });
      tf.tidy(() => model.adapters.get(name)!.assign(tf.transpose(tf.tensor2d(data, e.shape as [number, number]))));
    }
  } finally {
    closeSync(fd);
  }
  return lora;
}
