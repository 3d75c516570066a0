// What a run config trains, in words, without the tensor engine (the server answers with it): for
// `model.checkpoint` the folder's own config.json (architecture, parameter count), the LoRA rank and
// where the weights come from; else the `model.size` preset and the config's tokenizer. A config
// validated with defaults still carries `model.size: tiny-0.4m` and `tokenizer.kind: char` beside a
// checkpoint; neither is read then, so views show this instead.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { RunModelInfo } from '../core/protocol.js';
import { countParams } from './config.js';
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
