"""The Llama-style model of backend/model/transformer.ts in PyTorch, shared by the CPU baselines
(torch_model.py: full training and generation; torch_lora.py: LoRA training; torch_grpo.py: GRPO on an
imported Hugging Face folder, so Qwen2's q/k/v biases and an untied head are read too). `linear(i, o)`
makes each projection, so the LoRA baseline swaps in adapters without a second copy of the model code."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__(); self.w = nn.Parameter(torch.ones(d)); self.eps = eps
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


def plain_linear(i, o):
    return nn.Linear(i, o, bias=False)


def head_dim(c):
    return c.get('headDim') or c['dModel'] // c['nHeads']


def rope(T, hd, theta, start=0):
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2).float() / hd))
    t = torch.arange(start, start + T).float()
    f = torch.outer(t, inv)
    emb = torch.cat([f, f], -1)
    return emb.cos(), emb.sin()


def rot_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


class Block(nn.Module):
    def __init__(s, c, linear):
        super().__init__()
        d, H, KV = c['dModel'], c['nHeads'], c['nKvHeads']; hd = head_dim(c)
        s.H, s.KV, s.hd = H, KV, hd
        s.n1 = RMSNorm(d, c['rmsEps']); s.n2 = RMSNorm(d, c['rmsEps'])
        s.q = linear(d, H * hd); s.k = linear(d, KV * hd); s.v = linear(d, KV * hd); s.o = linear(H * hd, d)
        s.g = linear(d, c['dFF']); s.u = linear(d, c['dFF']); s.dn = linear(c['dFF'], d)
        # Qwen2 layout: biases on q, k and v (zero-initialised; an imported folder sets them).
        s.bias = bool(c.get('qkvBias'))
        if s.bias:
            s.qb = nn.Parameter(torch.zeros(H * hd)); s.kb = nn.Parameter(torch.zeros(KV * hd))
            s.vb = nn.Parameter(torch.zeros(KV * hd))
    def forward(s, x, cos, sin, cache=None):
        B, T, _ = x.shape
        h = s.n1(x)
        q, k, v = s.q(h), s.k(h), s.v(h)
        if s.bias: q, k, v = q + s.qb, k + s.kb, v + s.vb
        q = q.view(B, T, s.H, s.hd).transpose(1, 2)
        k = k.view(B, T, s.KV, s.hd).transpose(1, 2)
        v = v.view(B, T, s.KV, s.hd).transpose(1, 2)
        q = q * cos + rot_half(q) * sin; k = k * cos + rot_half(k) * sin
        if cache is not None:
            if 'k' in cache: k = torch.cat([cache['k'], k], 2); v = torch.cat([cache['v'], v], 2)
            cache['k'], cache['v'] = k, v
        rep = s.H // s.KV
        if rep > 1: k = k.repeat_interleave(rep, 1); v = v.repeat_interleave(rep, 1)
        # torch 1.13 (Debian) has no scaled_dot_product_attention: plain causal attention.
        Tk = k.shape[2]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(s.hd)
        if T > 1:
            mask = torch.ones(T, Tk, dtype=torch.bool).tril(Tk - T)
            att = att.masked_fill(~mask, float('-inf'))
        a = att.softmax(-1) @ v
        x = x + s.o(a.transpose(1, 2).reshape(B, T, -1))
        h2 = s.n2(x)
        return x + s.dn(F.silu(s.g(h2)) * s.u(h2))


class Model(nn.Module):
    def __init__(s, c, linear=plain_linear):
        super().__init__(); s.c = c
        s.emb = nn.Embedding(c['vocabSize'], c['dModel'])
        s.blocks = nn.ModuleList([Block(c, linear) for _ in range(c['nLayers'])])
        s.norm = RMSNorm(c['dModel'], c['rmsEps'])
        # An untied output head where the config says so (tieEmbeddings false).
        s.head = None if c.get('tieEmbeddings', True) else nn.Linear(c['dModel'], c['vocabSize'], bias=False)
    def forward(s, ids, caches=None, start=0):
        x = s.emb(ids); T = ids.shape[1]
        cos, sin = rope(T, head_dim(s.c), s.c['ropeTheta'], start)
        for i, b in enumerate(s.blocks):
            x = b(x, cos, sin, None if caches is None else caches[i])
        h = s.norm(x)
        return h @ s.emb.weight.t() if s.head is None else s.head(h)


def median(xs):
    xs = sorted(xs); n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
