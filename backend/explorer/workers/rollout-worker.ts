// A rollout worker thread: its own tfjs engine and its own copy of the weights (replaced when the
// pool sends a newer version), generating the prompts of one job at a time.
import { parentPort } from 'node:worker_threads';
import { countParams } from '../../model/config.js';
import { initEngine, tf } from '../../model/engine.js';
import { generate } from '../../model/generate.js';
import { Transformer } from '../../model/transformer.js';
import { tokenizerFromTransfer } from '../../model/tokenizer/transfer.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import { cutRepeats } from '../repeat.js';
import type { FromWorker, ToWorker, WorkerGeneration } from './protocol.js';

const port = parentPort;
if (!port) throw new Error('rollout-worker.ts runs as a worker thread');
let model: Transformer | undefined;
let tokenizer: Tokenizer | undefined;
let version = -1;
const send = (m: FromWorker) => port.postMessage(m);

// Jobs run one at a time, in arrival order (weights sent before a job are loaded before it runs).
let chain: Promise<void> = Promise.resolve();
port.on('message', (m: ToWorker) => {
  chain = chain
    .then(() => handle(m))
    .catch((e: Error) =>
      send({ type: 'error', job: m.type === 'generate' ? m.job : undefined, message: e.stack ?? e.message }),
    );
});

async function handle(m: ToWorker): Promise<void> {
  if (m.type === 'init') {
    // auto: the model's size decides webgpu like the explorer's own engine (engine.ts autoWebgpu)
    const info = await initEngine(m.backend ? { backend: m.backend } : { modelParams: countParams(m.config) });
    model = new Transformer(m.config, 0);
    tokenizer = tokenizerFromTransfer(m.tokenizer);
    send({ type: 'ready', backend: info.backend });
  } else if (m.type === 'weights') {
    const t0 = performance.now();
    if (!model) throw new Error('weights before init');
    for (const [name, v] of model.params) {
      const t = m.tensors[name];
      if (!t) throw new Error(`weights v${m.version}: missing tensor ${name}`);
      tf.tidy(() => v.assign(tf.tensor(t.data, t.shape)));
    }
    version = m.version;
    send({ type: 'weights_loaded', version, ms: performance.now() - t0 });
  } else if (m.type === 'generate') {
    if (!model || !tokenizer) throw new Error('generate before init');
    if (m.version !== version) throw new Error(`job wants weights v${m.version}, worker has v${version}`);
    // Fault injection for the pool's tests: a stuck or dying worker.
    if (m.fault === 'hang') for (;;);
    if (m.fault === 'crash') process.exit(3);
    const t0 = performance.now();
    const prefix = m.opts.prefix ? tf.tensor3d(m.opts.prefix.data, m.opts.prefix.shape) : undefined;
    let gens;
    try {
      gens = await generate(model, tokenizer, m.prompts, { ...m.opts, prefix });
    } finally {
      prefix?.dispose();
    }
    let repeats = 0;
    const out: WorkerGeneration[] = gens.map((g) => {
      const w: WorkerGeneration = {
        tokens: g.tokens,
        text: g.text,
        logprobs: g.logprobs,
        finishReason: g.finishReason,
      };
      if (m.repeat && cutRepeats(w, m.repeat)) {
        repeats++;
        w.text = tokenizer!.decode(w.tokens, { skipSpecial: true });
      }
      return w;
    });
    send({ type: 'result', job: m.job, version, generations: out, ms: performance.now() - t0, repeats });
  }
}
