"""PyTorch CPU baseline for `npm run bench -- model`: the same Llama-style model and shapes as
backend/model/transformer.ts, timed the same way. Prints one JSON object on stdout."""
import json, sys, time
import torch
import torch.nn.functional as F
from torch_llama import Model, median

cfg = json.loads(sys.argv[1])
torch.manual_seed(0)


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
