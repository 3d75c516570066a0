"""PyTorch CPU baseline for `npm run bench -- model`: the same Llama-style model and shapes as
backend/model/transformer.ts, timed the same way. Prints one JSON object on stdout."""
import json, math, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

cfg = json.loads(sys.argv[1])
torch.manual_seed(0)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__(); self.w = nn.Parameter(torch.ones(d)); self.eps = eps
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


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
    def __init__(s, c):
        super().__init__()
        d, H, KV = c['dModel'], c['nHeads'], c['nKvHeads']; hd = d // H
        s.H, s.KV, s.hd = H, KV, hd
        s.n1 = RMSNorm(d, c['rmsEps']); s.n2 = RMSNorm(d, c['rmsEps'])
        s.q = nn.Linear(d, H * hd, bias=False); s.k = nn.Linear(d, KV * hd, bias=False)
        s.v = nn.Linear(d, KV * hd, bias=False); s.o = nn.Linear(H * hd, d, bias=False)
        s.g = nn.Linear(d, c['dFF'], bias=False); s.u = nn.Linear(d, c['dFF'], bias=False); s.dn = nn.Linear(c['dFF'], d, bias=False)
    def forward(s, x, cos, sin, cache=None):
        B, T, _ = x.shape
        h = s.n1(x)
        q = s.q(h).view(B, T, s.H, s.hd).transpose(1, 2)
        k = s.k(h).view(B, T, s.KV, s.hd).transpose(1, 2)
        v = s.v(h).view(B, T, s.KV, s.hd).transpose(1, 2)
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
    def __init__(s, c):
        super().__init__(); s.c = c
        s.emb = nn.Embedding(c['vocabSize'], c['dModel'])
        s.blocks = nn.ModuleList([Block(c) for _ in range(c['nLayers'])])
        s.norm = RMSNorm(c['dModel'], c['rmsEps'])
    def forward(s, ids, caches=None, start=0):
        x = s.emb(ids); T = ids.shape[1]
        cos, sin = rope(T, s.c['dModel'] // s.c['nHeads'], s.c['ropeTheta'], start)
        for i, b in enumerate(s.blocks):
            x = b(x, cos, sin, None if caches is None else caches[i])
        return s.norm(x) @ s.emb.weight.t()


def median(xs):
    xs = sorted(xs); n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def bench_train(m, B, T, reps, warm):
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0)
    ids = torch.randint(0, m.c['vocabSize'], (B, T + 1))
    times = []
    for i in range(warm + reps):
        t0 = time.perf_counter()
        logits = m(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        if i >= warm: times.append(time.perf_counter() - t0)
    return B * T / median(times)


@torch.no_grad()
def bench_gen(m, B, P, N, reps, warm):
    times = []
    for i in range(warm + reps):
        ids = torch.randint(0, m.c['vocabSize'], (B, P))
        t0 = time.perf_counter()
        caches = [dict() for _ in m.blocks]
        logits = m(ids, caches, 0)[:, -1]
        for step in range(N):
            lp = F.log_softmax(logits, -1)
            tok = torch.multinomial(lp.exp(), 1)
            _ = lp.gather(1, tok)
            if step == N - 1: break
            logits = m(tok, caches, P + step)[:, -1]
        if i >= warm: times.append(time.perf_counter() - t0)
    return B * N / median(times)


out = {}
for threads in (1, 2):
    torch.set_num_threads(threads)
    m = Model(cfg['model'])
    out[f'train_{threads}'] = bench_train(m, cfg['batch'], cfg['seq'], cfg['reps'], cfg['warmup'])
    out[f'gen_{threads}'] = bench_gen(m, cfg['genBatch'], cfg['promptLen'], cfg['newTokens'], cfg['reps'], cfg['warmup'])
out['params'] = sum(p.numel() for p in Model(cfg['model']).parameters())
out['torch'] = torch.__version__
print(json.dumps(out))
