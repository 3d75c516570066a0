"""PyTorch CPU baseline for `npm run bench -- model-hf`: a LoRA training step (frozen base, adapters
on the seven projections, AdamW on the adapters only) on the same Llama-shaped model and batch as
the TypeScript side. Prints one JSON object on stdout."""
import json, math, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_llama import Model, median

cfg = json.loads(sys.argv[1])
c = cfg['model']
torch.manual_seed(0)


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


out = {}
B, T = cfg['batch'], cfg['seq']
for threads in (1, 2):
    torch.set_num_threads(threads)
    m = Model(c, lambda i, o: LoraLinear(i, o, cfg['rank'], cfg['alpha']))
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
