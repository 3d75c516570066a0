"""PyTorch CUDA baseline for `npm run bench -- gpu`: the same Llama-style model as
backend/model/transformer.ts (bench/torch_llama.py) on the GPU, f32 and bf16 autocast, timed with the
queue drained (torch.cuda.synchronize). Prints one JSON object on stdout; {"skipped": why} without CUDA."""
import json, sys, time
import torch
import torch.nn.functional as F
from torch_llama import Model, median

cfg = json.loads(sys.argv[1])
if not torch.cuda.is_available():
    print(json.dumps({'skipped': f'torch {torch.__version__} has no CUDA device'}))
    sys.exit(0)
dev = torch.device('cuda')
# bench/torch_llama.py makes its RoPE tables and masks with the default device.
torch.set_default_device(dev)
torch.manual_seed(0)


def bench_train(m, B, T, reps, warm, bf16):
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0)
    ids = torch.randint(0, m.c['vocabSize'], (B, T + 1), device=dev)
    times = []
    for i in range(warm + reps):
        torch.cuda.synchronize(); t0 = time.perf_counter()
        with torch.autocast('cuda', dtype=torch.bfloat16, enabled=bf16):
            logits = m(ids[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        torch.cuda.synchronize()
        if i >= warm: times.append(time.perf_counter() - t0)
    return B * T / median(times)


@torch.no_grad()
def bench_gen(m, B, P, N, reps, warm, bf16):
    times = []
    for i in range(warm + reps):
        ids = torch.randint(0, m.c['vocabSize'], (B, P), device=dev)
        torch.cuda.synchronize(); t0 = time.perf_counter()
        with torch.autocast('cuda', dtype=torch.bfloat16, enabled=bf16):
            caches = [dict() for _ in m.blocks]
            logits = m(ids, caches, 0)[:, -1]
            for step in range(N):
                lp = F.log_softmax(logits.float(), -1)
                tok = torch.multinomial(lp.exp(), 1)
                _ = lp.gather(1, tok)
                if step == N - 1: break
                logits = m(tok, caches, P + step)[:, -1]
        torch.cuda.synchronize()
        if i >= warm: times.append(time.perf_counter() - t0)
    return B * N / median(times)


out = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__}
m = Model(cfg['model']).to(dev)
for name, bf16 in (('f32', False), ('bf16', True)):
    out[f'train_{name}'] = bench_train(m, cfg['batch'], cfg['seq'], cfg['reps'], cfg['warmup'], bf16)
    out[f'gen_{name}'] = bench_gen(m, cfg['genBatch'], cfg['promptLen'], cfg['newTokens'], cfg['reps'], cfg['warmup'], bf16)
print(json.dumps(out))
