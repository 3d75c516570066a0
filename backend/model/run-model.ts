// What a run config trains, in words, without the tensor engine (the server answers with it): for
// `model.checkpoint` the folder's own config.json (architecture, parameter count), the LoRA rank and
// where the weights come from; else the `model.size` preset and the config's tokenizer. A config
// validated with defaults still carries `model.size: tiny-0.4m` and `tokenizer.kind: char` beside a
// checkpoint; neither is read then, so views show this instead.
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { RunModelInfo } from '../core/protocol.js';
import { countParams, MODEL_PRESETS, presetConfig } from './config.js';
import { parseHfConfig } from './hf/config.js';
import { modelSourceName, resolveModelDir } from './hf/folder.js';
import { readRegularFile } from '../core/regular-file.js';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

export function formatParams(n: number): string {
  const trim = (x: number) =>
    x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1).replace(/\.0$/, '') : x.toFixed(2).replace(/\.?0+$/, '');
  if (n >= 1e9) return `${trim(n / 1e9)}B`;
  if (n >= 1e6) return `${trim(n / 1e6)}M`;
  if (n >= 1e3) return `${trim(n / 1e3)}k`;
  return String(n);
}

/** The model of a run config (validated or raw); undefined when it names none. */
export function describeRunModel(config: unknown): RunModelInfo | undefined {
  const model = obj(obj(config).model);
  const tok = obj(obj(config).tokenizer);
  const lora = obj(model.lora);
  const loraRank = typeof lora.rank === 'number' ? lora.rank : undefined;
  const training = model.lora ? (loraRank !== undefined ? `LoRA rank ${loraRank}` : 'LoRA') : 'full fine-tuning';
  const ownTokenizer = typeof tok.path === 'string' ? `tokenizer ${tok.path}` : undefined;
  const ck = model.checkpoint;
  if (typeof ck === 'string' && ck) {
    const from = modelSourceName(ck);
    try {
      const dir = resolveModelDir(ck);
      const file = join(dir, 'config.json');
      const info = parseHfConfig(JSON.parse(readRegularFile(file, 'utf8')), file);
      const parameters = countParams(info.config);
      const tokenizer =
        ownTokenizer ??
        (existsSync(join(dir, 'tokenizer.json'))
          ? "the model's own"
          : `${String(tok.kind ?? 'char')} (no tokenizer.json in the folder)`);
      return {
        source: 'checkpoint',
        architecture: info.architecture,
        parameters,
        hidden: info.config.dModel,
        ...(loraRank !== undefined ? { loraRank } : {}),
        from,
        tokenizer,
        label: `${info.architecture} · ${formatParams(parameters)} parameters · ${training} · from ${from}`,
      };
    } catch (e) {
      return {
        source: 'checkpoint',
        architecture: 'unknown',
        from,
        tokenizer: ownTokenizer ?? "the model's own",
        ...(loraRank !== undefined ? { loraRank } : {}),
        problem: (e as Error).message,
        label: `checkpoint ${from} (cannot be read: ${(e as Error).message})`,
      };
    }
  }
  const size = typeof model.size === 'string' ? model.size : 'tiny-0.4m';
  const tokenizer = ownTokenizer ?? `${String(tok.kind ?? 'char')} (trained on the tasksets)`;
  return {
    source: 'preset',
    architecture: size,
    ...(loraRank !== undefined ? { loraRank } : {}),
    tokenizer,
    label: `preset ${size} · ${training} · ${tokenizer} tokenizer`,
  };
}

/**
 * The parameter count of a run config's model, cheaply (no weights read), for the engine's auto choice
 * (engine.ts autoWebgpu): a checkpoint's config.json, else the preset at the config's tokenizer.vocab_size
 * or 512 (the presets' nominal vocabulary; a char tokenizer's is smaller). `configFile` resolves a relative
 * model.checkpoint. Undefined when unknown (an unreadable checkpoint, an unknown preset).
 */
export function runModelParams(config: unknown, configFile?: string): number | undefined {
  const model = obj(obj(config).model);
  let cfg = config;
  const ck = model.checkpoint;
  if (typeof ck === 'string' && ck && configFile && !isAbsolute(ck))
    cfg = { ...obj(config), model: { ...model, checkpoint: resolve(dirname(resolve(configFile)), ck) } };
  const info = describeRunModel(cfg);
  if (!info || info.source === 'checkpoint') return info?.parameters;
  const size = typeof model.size === 'string' ? model.size : 'tiny-0.4m';
  if (!MODEL_PRESETS[size]) return undefined;
  const vocab = obj(obj(config).tokenizer).vocab_size;
  return countParams(presetConfig(size, typeof vocab === 'number' && vocab > 0 ? vocab : 512));
}

/** A model folder's parameter count from its config.json (auto's engine choice); undefined when unreadable. */
export function checkpointParams(dir: string): number | undefined {
  return runModelParams({ model: { checkpoint: resolve(dir) } });
}
