// Checkpoints in Hugging Face's layout: model.safetensors + config.json (the model's architecture:
// Llama, or an imported Qwen2 / Qwen3 / Mistral) + its tokenizer files, plus rft.json (version, step).
// The loader also reads Hugging Face model folders (hf/folder.ts). Written to a temp folder and renamed,
// so a process killed mid-save never leaves a half-written checkpoint behind.
import { asDiskFull } from '../core/disk-full.js';
import { closeSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tf } from './engine.js';
import type { ModelConfig } from './config.js';
import { parameterSpecs, type ParameterSpec } from './parameter-specs.js';
import { Transformer } from './transformer.js';
import { readTensorEntry, writeSafetensors, type TensorEntry } from './safetensors.js';
import { InputError } from '../core/errors.js';
import type { Tokenizer } from './tokenizer/types.js';
import { loadTokenizer, saveTokenizer } from './tokenizer/io.js';
import { parseHfConfig, writeHfConfig } from './hf/config.js';
import { indexWeights, resolveModelDir } from './hf/folder.js';
import { ADAPTER_WEIGHTS_FILE, hasAdapter, loadAdapterFiles, writeAdapterFiles } from './lora-files.js';
import { checkConfigAgainstHeaders } from './header-check.js';
import { loraA, loraB, loraScale } from './lora.js';
import { mergedHf } from './external-weights.js';
import { readCheckpointMeta, sha256, sha256File, verifyWeights } from './checkpoint-meta.js';
import { openRegularFile, readRegularFile } from '../core/regular-file.js';
import { OPTIMIZER_FILE, saveOptimizerState } from './optimizer-state.js';
import type { AdamW } from './optim.js';

export interface CheckpointMeta {
  version: number;
  step?: number;
  createdAt?: number;
  [k: string]: unknown;
}

/** Names stored as [out, in] in Hugging Face files but [in, out] in memory. */
export function isLinearWeight(name: string): boolean {
  return /(_proj|lm_head|value_head|patch_embed)\.weight$/.test(name);
}

/** config.json of a checkpoint: the model's HF config plus `rft` (value head, vision, init) for this project. */
export function hfConfig(c: ModelConfig, tok?: Tokenizer): Record<string, unknown> {
  return {
    ...writeHfConfig(c, c.hfConfig, tok ? { bos: tok.bosId, eos: tok.eosId, pad: tok.padId } : undefined),
    rft: { valueHead: c.valueHead, vision: c.vision ?? null, initStd: c.initStd },
  };
}

/**
 * The model's tensors in Hugging Face's layout (linear weights [out, in]), keyed by HF name; LoRA
 * adapters merged into their weights (W + alpha/r A B) unless `base` asks for the frozen base alone.
 * A weight outside the heap may come back as the model's own array (no copy): read it, never write it.
 */
export async function hfTensors(
  model: Transformer,
  opts: { base?: boolean } = {},
): Promise<Map<string, { shape: number[]; data: Float32Array }>> {
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [name, v] of model.params) {
    const w = opts.base ? v : model.effectiveWeight(name);
    const t = isLinearWeight(name) ? tf.transpose(w) : w;
    tensors.set(name, { shape: t.shape, data: (await t.data()) as Float32Array });
    if (t !== v && t !== w) t.dispose();
    if (w !== v) w.dispose();
  }
  // Weights outside the heap are already in HF's layout; adapters are merged outside the heap too.
  for (const [name, w] of model.external) {
    const module = name.slice(0, -'.weight'.length);
    const a = model.adapters.get(loraA(module));
    const data =
      opts.base || !a || !model.lora
        ? w.data
        : mergedHf(w, a, model.adapters.get(loraB(module))!, loraScale(model.lora));
    tensors.set(name, { shape: [w.rows, w.cols], data });
  }
  return tensors;
}

/**
 * Where a LoRA checkpoint's base came from (adapter_config.json's base_model_name_or_path): rft.json's
 * base_model, else config.json's _name_or_path (a run sets it to the model it started from,
 * `setup/model.ts initialModel`), else the checkpoint folder itself.
 */
export function baseModelOf(meta: CheckpointMeta, config: ModelConfig, dir: string): string {
  if (typeof meta.base_model === 'string' && meta.base_model) return meta.base_model;
  const n = config.hfConfig?._name_or_path;
  return typeof n === 'string' && n ? n : dir;
}

/**
 * The PPO critic's folder inside a run's checkpoint: a checkpoint of its own (value head, no tokenizer).
 * A subfolder, so the policy's files (what loadCheckpoint, HF / PEFT / GGUF exports and the distributed
 * weights checksum read: the top-level files only) stay exactly as without a critic.
 */
export const CRITIC_DIR = 'critic';

/** Trainer state a checkpoint keeps besides the weights (a resumed stage continues it). */
export interface TrainerState {
  critic?: Transformer;
  criticOptimizer?: AdamW;
  /** `trainer.lr: auto`'s state (the lr it reached), saved in rft.json as `lr_auto`. */
  lrState?(): { lr: number; ramping: boolean } | undefined;
}

/**
 * `opts.critic`: the run's critic, saved in `critic/` so a resume and the next PPO stage continue it;
 * `opts.criticOptimizer`: its AdamW state, saved beside it (`critic/optimizer.safetensors`).
 */
export async function saveCheckpoint(
  model: Transformer,
  dir: string,
  meta: CheckpointMeta,
  tokenizer?: Tokenizer,
  opts: TrainerState = {},
): Promise<string> {
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    await writeCheckpointFiles(model, tmp, dir, meta, tokenizer, opts);
  } catch (e) {
    // A failed save (a full disk) leaves no half-written folder behind; the previous checkpoints stay.
    rmSync(tmp, { recursive: true, force: true });
    throw asDiskFull(e, tmp);
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

async function writeCheckpointFiles(
  model: Transformer,
  tmp: string,
  dir: string,
  meta: CheckpointMeta,
  tokenizer: Tokenizer | undefined,
  opts: TrainerState,
): Promise<void> {
  mkdirSync(tmp, { recursive: true });
  // Inside the temp folder: the rename below publishes policy and critic together.
  if (opts.critic) {
    await saveCheckpoint(opts.critic, join(tmp, CRITIC_DIR), {
      version: meta.version,
      step: meta.step,
      role: 'critic',
    });
    if (opts.criticOptimizer)
      await saveOptimizerState(opts.criticOptimizer, opts.critic, join(tmp, CRITIC_DIR, OPTIMIZER_FILE));
  }
  // A LoRA model: the frozen base as model.safetensors, the adapters in PEFT's files beside it.
  const tensors = await hfTensors(model, { base: true });
  const weights = writeSafetensors(tensors, { format: 'pt', rft_version: String(meta.version) });
  writeFileSync(join(tmp, 'model.safetensors'), weights);
  if (model.lora) await writeAdapterFiles(model, tmp, baseModelOf(meta, model.config, dir));
  writeFileSync(join(tmp, 'config.json'), JSON.stringify(hfConfig(model.config, tokenizer), null, 2));
  if (tokenizer) saveTokenizer(tokenizer, tmp);
  // The weights' sha256, checked at load (checkpoint-meta.ts).
  const adapter = model.lora ? { adapter_sha256: sha256File(join(tmp, ADAPTER_WEIGHTS_FILE)) } : {};
  const lrAuto = opts.lrState?.();
  writeFileSync(
    join(tmp, 'rft.json'),
    JSON.stringify(
      {
        ...meta,
        ...(lrAuto ? { lr_auto: lrAuto } : {}),
        createdAt: meta.createdAt ?? Date.now(),
        weights_sha256: sha256(weights),
        ...adapter,
      },
      null,
      2,
    ),
  );
}

/**
 * The critic saved in checkpoint `dir` (`critic/`), or undefined when it has none. `like`: the policy
 * config the critic must match (a value head on the same architecture), else it is refused by path.
 */
export function loadCritic(dir: string, like: ModelConfig): Transformer | undefined {
  const cdir = join(dir, CRITIC_DIR);
  if (!existsSync(join(cdir, 'config.json'))) return undefined;
  const { model } = loadCheckpoint(cdir);
  const c = model.config;
  if (!c.valueHead || c.vocabSize !== like.vocabSize || c.dModel !== like.dModel || c.nLayers !== like.nLayers) {
    model.dispose();
    throw new InputError(
      `the critic is not a value head on the policy's architecture (vocab ${c.vocabSize}, d_model ${c.dModel}, ${c.nLayers} layers)`,
      { file: join(cdir, 'config.json') },
    );
  }
  return model;
}

/**
 * The tensors the config's model needs, each checked against the file headers (present, same shape in
 * HF's [out, in] layout, a float dtype); tensors the model does not use are refused by name.
 */
export function checkWeights(config: ModelConfig, entries: Map<string, TensorEntry>): ParameterSpec[] {
  const specs = parameterSpecs(config);
  const wanted = new Set(specs.map((s) => s.name));
  for (const spec of specs) {
    const e = entries.get(spec.name);
    const file = e?.file ?? [...entries.values()][0]?.file;
    if (!e) throw new InputError(`tensor missing (the config expects it)`, { file, field: spec.name });
    const want = isLinearWeight(spec.name) ? [...spec.shape].reverse() : spec.shape;
    if (e.shape.length !== want.length || e.shape.some((d, i) => d !== want[i]))
      throw new InputError(`shape [${e.shape}] does not match the config's [${want}]`, {
        file: e.file,
        field: spec.name,
      });
    if (e.dtype !== 'F32' && e.dtype !== 'F16' && e.dtype !== 'BF16')
      throw new InputError(`dtype ${e.dtype}: weights must be F32, F16 or BF16`, { file: e.file, field: spec.name });
  }
  // A tied head may still be stored; rotary inverse frequencies are recomputed from the config.
  const extra = [...entries.keys()].filter(
    (n) => !wanted.has(n) && !(n === 'lm_head.weight' && config.tieEmbeddings) && !n.endsWith('.rotary_emb.inv_freq'),
  );
  if (extra.length)
    throw new InputError(
      `tensors not in the config's model: ${extra.slice(0, 5).join(', ')}${extra.length > 5 ? ', ...' : ''}`,
      { file: entries.get(extra[0]!)!.file, field: extra[0] },
    );
  return specs;
}

export interface LoadedCheckpoint {
  model: Transformer;
  /** The checkpoint's tokenizer.json, when it has one. */
  tokenizer?: Tokenizer;
  meta: CheckpointMeta;
  dir: string;
}

/**
 * A checkpoint folder checked without reading its weights: config.json, the safetensors headers
 * against it, rft.json (`rft run --check`, and the first half of loadCheckpoint). Every file is opened
 * as a regular file (core/regular-file.ts); every problem names the file and the tensor or field.
 */
export function inspectCheckpoint(dirIn: string): {
  dir: string;
  config: ModelConfig;
  entries: Map<string, TensorEntry>;
  specs: ParameterSpec[];
  meta: CheckpointMeta;
} {
  const dir = resolveModelDir(dirIn);
  const cfgFile = join(dir, 'config.json');
  if (!existsSync(cfgFile)) throw new InputError('checkpoint has no config.json', { file: cfgFile });
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readRegularFile(cfgFile, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`not valid JSON (${(e as Error).message})`, { file: cfgFile });
  }
  const { config } = parseHfConfig(raw, cfgFile);
  const { entries } = indexWeights(dir);
  // The config's sizes against the headers (in config.json's names) and rft.json: all before any allocation.
  checkConfigAgainstHeaders(config, entries, cfgFile);
  const meta = readCheckpointMeta(dir);
  const specs = checkWeights(config, entries);
  return { dir, config, entries, specs, meta };
}

/**
 * Load a checkpoint folder: this project's own, or a Hugging Face model folder (also an HF-cache
 * entry or snapshot). config.json is checked against the safetensors headers (every tensor's name,
 * shape and dtype) before any weight is allocated; every problem names the file and the tensor or field.
 * `external`: the projections, embedding table and head go outside the wasm heap (frozen: for LoRA
 * training or inference), each streamed from its file into its own buffer, never through the heap.
 * `chatTemplate`: the chat template by name or file (tokenizer/io.ts `loadTokenizer`).
 */
export function loadCheckpoint(
  dirIn: string,
  opts: { external?: boolean; chatTemplate?: string } = {},
): LoadedCheckpoint {
  const { dir, config, entries, specs, meta } = inspectCheckpoint(dirIn);
  verifyWeights(dir, meta);
  const model = new Transformer(config, 0, { init: false, external: opts.external === true });
  const fds = new Map<string, number>();
  try {
    for (const spec of specs) {
      const e = entries.get(spec.name)!;
      let fd = fds.get(e.file);
      if (fd === undefined) fds.set(e.file, (fd = openRegularFile(e.file)));
      const data = readTensorEntry(e, fd);
      for (let i = 0; i < data.length; i++) {
        if (!Number.isFinite(data[i]!))
          throw new InputError(`value ${data[i]} at index ${i} is not finite`, { file: e.file, field: spec.name });
      }
      const ext = model.external.get(spec.name);
      if (ext) {
        ext.adopt(data); // HF's [out, in] as read: no transpose, no heap
        continue;
      }
      const v = model.params.get(spec.name)!;
      tf.tidy(() => {
        const x = tf.tensor(data, e.shape);
        v.assign(isLinearWeight(spec.name) ? tf.transpose(x) : x);
      });
    }
    if (hasAdapter(dir)) loadAdapterFiles(model, dir);
  } catch (e) {
    model.dispose();
    throw e;
  } finally {
    for (const fd of fds.values()) closeSync(fd);
  }
  let tokenizer: Tokenizer | undefined;
  try {
    tokenizer = existsSync(join(dir, 'tokenizer.json'))
      ? loadTokenizer(dir, { chatTemplate: opts.chatTemplate })
      : undefined;
  } catch (e) {
    model.dispose();
    throw e;
  }
  if (tokenizer && tokenizer.vocabSize > config.vocabSize) {
    model.dispose();
    throw new InputError(
      `tokenizer has ${tokenizer.vocabSize} tokens but the model's vocab_size is ${config.vocabSize}`,
      { file: join(dir, 'tokenizer.json') },
    );
  }
  return { model, meta, dir, tokenizer };
}
