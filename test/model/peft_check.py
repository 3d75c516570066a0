"""Independent check of a PEFT adapter folder, without the `peft` package: reads the base model's
safetensors and the adapter's adapter_model.safetensors by hand (8-byte little-endian header length,
JSON header, raw data), applies PEFT's LoRA formula W' = W + (lora_alpha / r) * B @ A under PEFT's
tensor names (base_model.model.<module>.lora_A.weight / lora_B.weight), runs the Hugging Face
Llama / Qwen2 / Qwen3 / Mistral forward pass in PyTorch and prints, as its last line,
{"logprobs": [...]}: log p(ids[i+1] | ids[..i]) for the ids given as a JSON list.

usage: python3 peft_check.py BASE_DIR ADAPTER_DIR IDS_JSON
Nothing here imports this project's code: it is the reference the test compares against.
Everything runs in float64 (PEFT_CHECK_DTYPE=float32 for float32): the exact answer the project's
float32 computation is held to."""
import json
import math
import os
import struct
import sys

import torch

DTYPES = {'F32': torch.float32, 'F16': torch.float16, 'BF16': torch.bfloat16}


def read_safetensors(path):
    with open(path, 'rb') as f:
        raw = f.read()
    (n,) = struct.unpack('<Q', raw[:8])
    header = json.loads(raw[8:8 + n].decode('utf8'))
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        b, e = info['data_offsets']
        t = torch.frombuffer(bytearray(data[b:e]), dtype=DTYPES[info['dtype']]) if e > b else torch.zeros(0)
        out[name] = t.reshape(info['shape']).to(torch.float64)
    return out


def base_weights(d):
    index = os.path.join(d, 'model.safetensors.index.json')
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)['weight_map'].values()))
        w = {}
        for s in shards:
            w.update(read_safetensors(os.path.join(d, s)))
        return w
    return read_safetensors(os.path.join(d, 'model.safetensors'))


def apply_peft(w, adapter_dir):
    with open(os.path.join(adapter_dir, 'adapter_config.json')) as f:
        cfg = json.load(f)
    assert cfg['peft_type'] == 'LORA' and not cfg.get('use_rslora') and not cfg.get('use_dora') and not cfg.get('fan_in_fan_out')
    scale = cfg['lora_alpha'] / cfg['r']
    ad = read_safetensors(os.path.join(adapter_dir, 'adapter_model.safetensors'))
    prefix = 'base_model.model.'
    done = 0
    for name, a in ad.items():
        if not name.endswith('.lora_A.weight'):
            continue
        assert name.startswith(prefix), name
        module = name[len(prefix):-len('.lora_A.weight')]
        assert module.split('.')[-1] in cfg['target_modules'], module
        b = ad[prefix + module + '.lora_B.weight']
        assert a.shape[0] == cfg['r'] and b.shape[1] == cfg['r'], (module, a.shape, b.shape)
        w[module + '.weight'] = w[module + '.weight'] + scale * (b @ a)
        done += 1
    assert done > 0 and 2 * done == len(ad), 'every lora_A has its lora_B'
    return w


def inv_freq(c, hd):
    theta = c.get('rope_theta', 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    rs = c.get('rope_scaling')
    if rs and rs.get('rope_type', rs.get('type')) == 'llama3':
        factor, lo, hi, old = rs['factor'], rs['low_freq_factor'], rs['high_freq_factor'], rs['original_max_position_embeddings']
        out = []
        for f in inv.tolist():
            wavelen = 2 * math.pi / f
            if wavelen < old / hi:
                out.append(f)
            elif wavelen > old / lo:
                out.append(f / factor)
            else:
                s = (old / wavelen - lo) / (hi - lo)
                out.append((1 - s) * f / factor + s * f)
        inv = torch.tensor(out, dtype=torch.float64)
    elif rs:
        raise SystemExit('unsupported rope_scaling %r' % rs)
    return inv


def rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rot_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def forward(c, w, ids):
    D, H, KV = c['hidden_size'], c['num_attention_heads'], c.get('num_key_value_heads', c['num_attention_heads'])
    hd = c.get('head_dim') or D // H
    eps = c['rms_norm_eps']
    T = len(ids)
    x = w['model.embed_tokens.weight'][torch.tensor(ids)]
    f = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq(c, hd))
    emb = torch.cat([f, f], -1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    lin = lambda h, name: h @ w[name + '.weight'].t() + (w[name + '.bias'] if name + '.bias' in w else 0)
    for i in range(c['num_hidden_layers']):
        p = 'model.layers.%d.' % i
        h = rms(x, w[p + 'input_layernorm.weight'], eps)
        q = lin(h, p + 'self_attn.q_proj').view(T, H, hd)
        k = lin(h, p + 'self_attn.k_proj').view(T, KV, hd)
        v = lin(h, p + 'self_attn.v_proj').view(T, KV, hd)
        if p + 'self_attn.q_norm.weight' in w:
            q = rms(q, w[p + 'self_attn.q_norm.weight'], eps)
            k = rms(k, w[p + 'self_attn.k_norm.weight'], eps)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        q = q * cos + rot_half(q) * sin
        k = k * cos + rot_half(k) * sin
        k = k.repeat_interleave(H // KV, 0)
        v = v.repeat_interleave(H // KV, 0)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = att.masked_fill(~mask, float('-inf')).softmax(-1)
        x = x + lin((att @ v).transpose(0, 1).reshape(T, H * hd), p + 'self_attn.o_proj')
        h2 = rms(x, w[p + 'post_attention_layernorm.weight'], eps)
        g = lin(h2, p + 'mlp.gate_proj')
        x = x + lin(g * torch.sigmoid(g) * lin(h2, p + 'mlp.up_proj'), p + 'mlp.down_proj')
    h = rms(x, w['model.norm.weight'], eps)
    head = w['model.embed_tokens.weight'] if c.get('tie_word_embeddings', False) else w['lm_head.weight']
    return h @ head.t()


def main():
    base_dir, adapter_dir, ids = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with open(os.path.join(base_dir, 'config.json')) as f:
        c = json.load(f)
    dt = getattr(torch, os.environ.get('PEFT_CHECK_DTYPE', 'float64'))
    w = {k: v.to(dt) for k, v in apply_peft(base_weights(base_dir), adapter_dir).items()}
    with torch.no_grad():
        lp = forward(c, w, ids).log_softmax(-1)
    print(json.dumps({'logprobs': [lp[i, ids[i + 1]].item() for i in range(len(ids) - 1)]}))


if __name__ == '__main__':
    main()
