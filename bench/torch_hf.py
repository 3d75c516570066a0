"""A Hugging Face model folder (config.json + model.safetensors, Llama or Qwen2 layout, float32) read
into the PyTorch model of torch_llama.py, for the reference runs (torch_grpo.py). safetensors is read
by hand (8-byte header length, JSON header, raw little-endian data): Debian's python3-torch has no
safetensors package."""
import json, os, struct
import numpy as np
import torch
from torch_llama import Model

DTYPES = {'F32': np.float32, 'F16': np.float16, 'BF16': None}


def read_safetensors(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == '__metadata__':
            continue
        a, b = t['data_offsets']
        if t['dtype'] == 'BF16':
            raw = np.frombuffer(data[a:b], dtype=np.uint16).astype(np.uint32) << 16
            arr = raw.view(np.float32)
        elif t['dtype'] in DTYPES:
            arr = np.frombuffer(data[a:b], dtype=DTYPES[t['dtype']]).astype(np.float32)
        else:
            raise ValueError(f'{path}: tensor {name}: dtype {t["dtype"]} is not read here')
        out[name] = torch.from_numpy(arr.reshape(t['shape']).copy())
    return out


def model_config(hf):
    if hf.get('rope_scaling'):
        raise ValueError('config.json: rope_scaling is not read by the reference model')
    c = {
        'vocabSize': hf['vocab_size'], 'dModel': hf['hidden_size'], 'nLayers': hf['num_hidden_layers'],
        'nHeads': hf['num_attention_heads'], 'nKvHeads': hf.get('num_key_value_heads', hf['num_attention_heads']),
        'dFF': hf['intermediate_size'], 'rmsEps': hf.get('rms_norm_eps', 1e-6), 'ropeTheta': hf.get('rope_theta', 10000),
        'tieEmbeddings': bool(hf.get('tie_word_embeddings', True)),
        'qkvBias': hf.get('model_type') == 'qwen2' or bool(hf.get('attention_bias')),
    }
    if hf.get('head_dim'):
        c['headDim'] = hf['head_dim']
    return c


def load_hf(folder):
    with open(os.path.join(folder, 'config.json')) as f:
        hf = json.load(f)
    c = model_config(hf)
    m = Model(c)
    w = read_safetensors(os.path.join(folder, 'model.safetensors'))
    names = {'emb.weight': 'model.embed_tokens.weight', 'norm.w': 'model.norm.weight'}
    if m.head is not None:
        names['head.weight'] = 'lm_head.weight'
    parts = {'n1.w': 'input_layernorm.weight', 'n2.w': 'post_attention_layernorm.weight',
             'q.weight': 'self_attn.q_proj.weight', 'k.weight': 'self_attn.k_proj.weight',
             'v.weight': 'self_attn.v_proj.weight', 'o.weight': 'self_attn.o_proj.weight',
             'g.weight': 'mlp.gate_proj.weight', 'u.weight': 'mlp.up_proj.weight', 'dn.weight': 'mlp.down_proj.weight'}
    if c['qkvBias']:
        parts.update({'qb': 'self_attn.q_proj.bias', 'kb': 'self_attn.k_proj.bias', 'vb': 'self_attn.v_proj.bias'})
    for i in range(c['nLayers']):
        for ours, theirs in parts.items():
            names[f'blocks.{i}.{ours}'] = f'model.layers.{i}.{theirs}'
    state = {}
    for ours, theirs in names.items():
        if theirs not in w:
            raise ValueError(f'{folder}/model.safetensors: no tensor {theirs}')
        state[ours] = w[theirs]
    m.load_state_dict(state, strict=True)
    return m, c
