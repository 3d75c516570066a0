"""PyTorch CPU baseline for `npm run bench -- model-hf`: a LoRA training step (frozen base, adapters
on the seven projections, AdamW on the adapters only) on the same Llama-shaped model and batch as
the TypeScript side. Prints one JSON object on stdout."""
import json, math, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

cfg = json.loads(sys.argv[1])
c = cfg['model']
torch.manual_seed(0)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__(); self.w = nn.Parameter(torch.ones(d)); self.eps = eps
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


class LoraLinear(nn.Module):
    """y = x W^T + (alpha / r) (x A^T) B^T, as PEFT's LoRA Linear with dropout 0."""
    def __init__(self, i, o, r, alpha):
        super().__init__()
        self.base = nn.Linear(i, o, bias=False)
        self.A = nn.Parameter(torch.empty(r, i).uniform_(-1 / math.sqrt(i), 1 / math.sqrt(i)))
        self.B = nn.Parameter(torch.zeros(o, r))
        self.scale = alpha / r
    def forward(self, x):
        return self.base(x) + (x @ self.A.t() @ self.B.t()) * self.scale


def rope(T, hd, theta):
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2).float() / hd))
    f = torch.outer(torch.arange(T).float(), inv)
    emb = torch.cat([f, f], -1)
    return emb.cos(), emb.sin()


def rot_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


class Block(nn.Module):
    def __init__(s, r, alpha):
        super().__init__()
        d, H, KV = c['dModel'], c['nHeads'], c['nKvHeads']; hd = c.get('headDim') or d // H
        s.H, s.KV, s.hd = H, KV, hd
        L = lambda i, o: LoraLinear(i, o, r, alpha)
        s.n1 = RMSNorm(d, c['rmsEps']); s.n2 = RMSNorm(d, c['rmsEps'])
        s.q = L(d, H * hd); s.k = L(d, KV * hd); s.v = L(d, KV * hd); s.o = L(H * hd, d)
        s.g = L(d, c['dFF']); s.u = L(d, c['dFF']); s.dn = L(c['dFF'], d)
    def forward(s, x, cos, sin):
        B, T, _ = x.shape
        h = s.n1(x)
        q = s.q(h).view(B, T, s.H, s.hd).transpose(1, 2)
        k = s.k(h).view(B, T, s.KV, s.hd).transpose(1, 2)
        v = s.v(h).view(B, T, s.KV, s.hd).transpose(1, 2)
        q = q * cos + rot_half(q) * sin; k = k * cos + rot_half(k) * sin
        rep = s.H // s.KV
        if rep > 1: k = k.repeat_interleave(rep, 1); v = v.repeat_interleave(rep, 1)
        # torch 1.13 (Debian) has no scaled_dot_product_attention: plain causal attention.
        att = (q @ k.transpose(-2, -1)) / math.sqrt(s.hd)
        att = att.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float('-inf'))
        a = att.softmax(-1) @ v
        x = x + s.o(a.transpose(1, 2).reshape(B, T, -1))
        h2 = s.n2(x)
        return x + s.dn(F.silu(s.g(h2)) * s.u(h2))


class Model(nn.Module):
    def __init__(s, r, alpha):
        super().__init__()
        s.emb = nn.Embedding(c['vocabSize'], c['dModel'])
        s.blocks = nn.ModuleList([Block(r, alpha) for _ in range(c['nLayers'])])
        s.norm = RMSNorm(c['dModel'], c['rmsEps'])
    def forward(s, ids):
        x = s.emb(ids); T = ids.shape[1]
        cos, sin = rope(T, s.blocks[0].hd, c['ropeTheta'])
        for b in s.blocks:
            x = b(x, cos, sin)
        return s.norm(x) @ s.emb.weight.t()  # tied head


def median(xs):
    xs = sorted(xs); n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


out = {}
B, T = cfg['batch'], cfg['seq']
for threads in (1, 2):
    torch.set_num_threads(threads)
    m = Model(cfg['rank'], cfg['alpha'])
    lora = [p for n, p in m.named_parameters() if n.endswith('.A') or n.endswith('.B')]
    for n, p in m.named_parameters():
        p.requires_grad_(n.endswith('.A') or n.endswith('.B'))
    opt = torch.optim.AdamW(lora, lr=1e-3, weight_decay=0.0)
    ids = torch.randint(0, c['vocabSize'], (B, T + 1))
    times = []
    for i in range(cfg['warmup'] + cfg['reps']):
        t0 = time.perf_counter()
        logits = m(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        if i >= cfg['warmup']: times.append(time.perf_counter() - t0)
    out[f'train_{threads}'] = B * T / median(times)
    out['adapter_params'] = sum(p.numel() for p in lora)
    out['params'] = sum(p.numel() for p in m.parameters()) - out['adapter_params']
out['torch'] = torch.__version__
print(json.dumps(out))
