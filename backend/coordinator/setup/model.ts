// Run setup, the model: the run's tokenizer (a checkpoint's, a given one, or trained on the tasks)
// and the weights it starts from (a checkpoint, with LoRA, or a fresh preset). Nothing in setup/
// imports run.ts or a placement.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import type { Task } from '../../core/types.js';
import { logger } from '../../core/log.js';
import { InputError } from '../../core/errors.js';
import { presetConfig } from '../../model/config.js';
import { Transformer } from '../../model/transformer.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { withLora } from '../../model/lora.js';
import { frozenOutsideHeap, outsideHeapNote } from '../../model/external-weights.js';
import { modelSourceName, resolveModelDir } from '../../model/hf/folder.js';
import { ADAPTER_CONFIG_FILE } from '../../model/lora-files.js';
import { CharTokenizer, loadTokenizer, trainTokenizer, type Tokenizer } from '../../model/tokenizer/index.js';
import { checkModelTakesImages, runVisionConfig } from '../model-vision.js';
import type { TaskPools } from './tasks.js';
import { readRegularFile } from '../../core/regular-file.js';

const log = logger('setup');

export function makeTokenizer(cfg: RunConfig, texts: string[]): Tokenizer {
  // The chosen chat template is saved with the run's tokenizer (as chat_template.jinja), so every
  // process, worker and checkpoint of the run reads it from there without the config.
  const chatTemplate = cfg.model.chat_template;
  if (cfg.tokenizer.path) return loadTokenizer(cfg.tokenizer.path, { chatTemplate });
  // A run that starts from a checkpoint speaks its tokenizer (the ids must mean what they meant).
  // (An HF-cache entry `models--org--name` holds its files in a snapshot folder: look there.)
  if (
    cfg.model.checkpoint &&
    existsSync(cfg.model.checkpoint) &&
    existsSync(join(resolveModelDir(cfg.model.checkpoint), 'tokenizer.json'))
  )
    return loadTokenizer(cfg.model.checkpoint, { chatTemplate });
  if (chatTemplate !== undefined)
    throw new InputError(
      'a chat template is only for a Hugging Face model (model.checkpoint with its tokenizer); this run trains its own tokenizer, whose chat layout is fixed',
      { field: 'model.chat_template' },
    );
  if (cfg.tokenizer.kind === 'char') return CharTokenizer.train(texts);
  return trainTokenizer('bpe', texts, { vocabSize: cfg.tokenizer.vocab_size });
}

/** Texts a new tokenizer is trained on: prompts (system prompts included) and solutions of every pool. */
export function tokenizerTexts(pools: TaskPools): string[] {
  return [...pools.train, ...pools.eval, ...pools.experts].flatMap((t) => [
    t.prompt ?? '',
    ...(t.messages ?? []).map((m) => m.content),
    pools.solve(t),
  ]);
}

/**
 * The weights a new run starts from: `model.checkpoint` when set (checked against the tokenizer),
 * else a fresh model of `model.size` initialised from the seed. `tasks` (the run's train and eval
 * tasks) size the vision input of workflow `vision` runs.
 */
export function initialModel(cfg: RunConfig, tok: Tokenizer, tasks: Task[] = []): Transformer {
  if (!cfg.model.checkpoint) {
    const vision = runVisionConfig(cfg, tasks);
    return withLora(
      new Transformer(
        presetConfig(cfg.model.size, tok.vocabSize, {
          ...(cfg.model.max_seq_len ? { maxSeqLen: cfg.model.max_seq_len } : {}),
          ...(vision ? { vision } : {}),
        }),
        cfg.seed,
      ),
      cfg.model.lora,
      cfg.seed,
    );
  }
  const dir = cfg.model.checkpoint;
  if (!existsSync(dir) || !existsSync(join(resolveModelDir(dir), 'config.json')))
    throw new InputError(`no checkpoint at '${dir}' (config.json missing)`, { field: 'model.checkpoint' });
  let model: Transformer;
  try {
    // Under LoRA the frozen base stays outside the 4 GiB wasm heap (1B-class models fit).
    model = loadCheckpoint(dir, { external: frozenOutsideHeap(cfg.model.lora) }).model;
    // The run's checkpoints (and their PEFT exports) name the model the run started from, not
    // their own folder: config.json's _name_or_path rides along through every save and resume.
    if (model.config.hfConfig) model.config.hfConfig._name_or_path = runBaseModel(dir);
    const note = outsideHeapNote(model);
    if (note) log.info(`model: frozen base, ${note}`);
  } catch (e) {
    throw new InputError(`checkpoint '${dir}' cannot be loaded: ${(e as Error).message}`, {
      field: 'model.checkpoint',
    });
  }
  if (model.config.vocabSize < tok.vocabSize) {
    model.dispose();
    throw new InputError(
      `checkpoint '${dir}' has a vocabulary of ${model.config.vocabSize}, the tokenizer ${tok.vocabSize}: give the checkpoint's tokenizer (tokenizer.path)`,
      { field: 'model.checkpoint' },
    );
  }
  try {
    checkModelTakesImages(cfg, model.config, tasks, `checkpoint '${dir}'`);
    return withLora(model, cfg.model.lora, cfg.seed);
  } catch (e) {
    model.dispose();
    throw e;
  }
}

/**
 * The base a run from `model.checkpoint` names (PEFT's base_model_name_or_path): a LoRA checkpoint
 * of an earlier run keeps the base its adapters were trained on; any other folder names itself
 * (`org/name` for a Hugging Face cache entry, else its absolute path: `hf/folder.ts modelSourceName`).
 */
export function runBaseModel(dir: string): string {
  const adapter = join(resolveModelDir(dir), ADAPTER_CONFIG_FILE);
  if (existsSync(adapter)) {
    try {
      const base = (JSON.parse(readRegularFile(adapter, 'utf8')) as { base_model_name_or_path?: unknown })
        .base_model_name_or_path;
      if (typeof base === 'string' && base) return base;
    } catch {
      // an unreadable adapter_config.json: the folder names itself (loading reports the file)
    }
  }
  return modelSourceName(dir);
}
