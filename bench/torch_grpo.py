"""GRPO in PyTorch the way TRL's GRPOTrainer computes it, the reference of `npm run bench -- rl-reference`
and of test/trainer/torch-grpo-parity.test.ts. On an imported Hugging Face folder (torch_hf.py):

  advantages   per group of `repeat` samples of one prompt: (r - mean) / (std + 1e-4), std unbiased
               (TRL scale_rewards="group")
  policy loss  -min(rho A, clamp(rho, 1-eps, 1+eps) A) per token, rho = exp(logp - old); one update per
               generation batch (TRL num_iterations=1), so old = logp.detach() and rho = 1 in value
  KL           + beta * (exp(ref - logp) - (ref - logp) - 1) per token (k3), ref = the starting weights
  aggregation  sum over every completion token of the batch / their count (TRL loss_type="dapo", its
               default: the global token mean)
  optimizer    AdamW (betas, eps, weight decay given), gradient clipped to a global norm, constant lr

The completion mask covers the sampled tokens up to and including the stop token, as TRL's does.
Modes (argv[1], JSON, or {"file": path} holding it):
  run    sample -> reward (exact match of the decoded answer) -> update, `steps` times; held-out greedy
         accuracy every `eval_every` steps; prints {"curve": [{step, samples, accuracy, wall_s}], ...},
         wall_s from the end of the starting eval (the later evals included)
  batch  one identical batch given as tokens, rewards (groups of `group_size` rows) and behaviour log-probs
         (`old`): the advantages, per-token log-probs, loss and gradients (test/trainer/torch-grpo-parity.test.ts)
Prints one JSON object on stdout."""
import json, random, sys, time
import torch
import torch.nn.functional as F
from torch_hf import load_hf

arg = json.loads(sys.argv[1])
if 'file' in arg:
    with open(arg['file']) as f:
        arg = json.load(f)
torch.set_num_threads(int(arg.get('threads', 1)))
torch.manual_seed(int(arg.get('seed', 0)))


@torch.no_grad()
def generate(m, prompts, max_new, stop, temperature, top_p, gen):
    """Sampled (temperature > 0) or greedy completions, prompts batched by length (no padding)."""
    out = [None] * len(prompts)
    by_len = {}
    for i, p in enumerate(prompts):
        by_len.setdefault(len(p), []).append(i)
    for L, idx in by_len.items():
        ids = torch.tensor([prompts[i] for i in idx])
        caches = [dict() for _ in m.blocks]
        logits = m(ids, caches, 0)[:, -1]
        toks = [[] for _ in idx]
        done = [False] * len(idx)
        for step in range(max_new):
            if temperature > 0:
                probs = F.softmax(logits / temperature, -1)
                if top_p < 1:
                    sp, si = probs.sort(-1, descending=True)
                    keep = sp.cumsum(-1) - sp < top_p  # the tokens before the mass passes top_p, and the one that passes it
                    sp = sp * keep
                    probs = torch.zeros_like(probs).scatter(-1, si, sp)
                nxt = torch.multinomial(probs, 1, generator=gen)
            else:
                nxt = logits.argmax(-1, keepdim=True)
            for b, t in enumerate(nxt[:, 0].tolist()):
                if done[b]:
                    continue
                toks[b].append(t)
                if t in stop:
                    done[b] = True
            if all(done) or step == max_new - 1:
                break
            logits = m(nxt, caches, L + step)[:, -1]
        for b, i in enumerate(idx):
            out[i] = toks[b]
    return out


def decode(tokens, table, stop):
    return ''.join(table[t] for t in tokens if t not in stop)


def token_logps(m, prompts, responses):
    """Log-probs of each response token [B, Tr] and the completion mask, one right-padded forward."""
    seqs = [p + r for p, r in zip(prompts, responses)]
    T = max(len(s) for s in seqs)
    Tr = max(len(r) for r in responses)
    ids = torch.tensor([s + [0] * (T - len(s)) for s in seqs])
    logp = F.log_softmax(m(ids[:, :-1]), -1)
    out = torch.zeros(len(seqs), Tr)
    mask = torch.zeros(len(seqs), Tr)
    rows, cols, pos, tgt = [], [], [], []
    for b, (p, r) in enumerate(zip(prompts, responses)):
        for j, t in enumerate(r):
            rows.append(b); cols.append(j); pos.append(len(p) + j - 1); tgt.append(t)
    lp = logp[torch.tensor(rows), torch.tensor(pos), torch.tensor(tgt)]
    out = out.index_put((torch.tensor(rows), torch.tensor(cols)), lp)
    mask[torch.tensor(rows), torch.tensor(cols)] = 1.0
    return out, mask


def grpo_loss(m, ref, prompts, responses, adv, a):
    logp, mask = token_logps(m, prompts, responses)
    old = logp.detach() if a.get('old') is None else a['old']
    rho = torch.exp(logp - old)
    A = adv.unsqueeze(1)
    eps = a['clip_eps']
    per_token = -torch.min(rho * A, torch.clamp(rho, 1 - eps, 1 + eps) * A)
    kl = None
    if a['beta'] > 0:
        with torch.no_grad():
            ref_logp, _ = token_logps(ref, prompts, responses)
        x = ref_logp - logp
        kl = torch.exp(x) - x - 1
        per_token = per_token + a['beta'] * kl
    loss = (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    return loss, logp, mask, kl


def group_advantages(rewards, G, eps):
    r = torch.tensor(rewards, dtype=torch.float32).view(-1, G)
    mean = r.mean(1, keepdim=True)
    std = r.std(1, keepdim=True) if G > 1 else torch.ones_like(mean)
    return ((r - mean) / (std + eps)).view(-1)


def accuracy(m, tasks, a):
    outs = generate(m, [t['prompt'] for t in tasks], a['eval_max_new_tokens'], set(a['stop']), 0.0, 1.0, None)
    right = sum(decode(o, a['decode'], set(a['stop'])).strip() == t['answer'].strip() for o, t in zip(outs, tasks))
    return right / len(tasks)


def run(a):
    m, _ = load_hf(a['model'])
    ref = None
    if a['beta'] > 0:
        ref, _ = load_hf(a['model'])
        ref.requires_grad_(False)
    opt = torch.optim.AdamW(m.parameters(), lr=a['lr'], betas=(a['beta1'], a['beta2']), eps=a['adam_eps'],
                            weight_decay=a['weight_decay'])
    gen = torch.Generator().manual_seed(int(a.get('seed', 0)))
    order_rng = random.Random(int(a.get('seed', 0)))
    stop = set(a['stop'])
    G, n = a['repeat'], a['tasks_per_step']
    queue = []
    curve = [{'step': 0, 'samples': 0, 'accuracy': accuracy(m, a['eval'], a), 'wall_s': 0.0}]
    start = time.perf_counter()  # from the end of the starting eval, the later evals included, as the bench counts ours
    rewards_seen = []
    prof = {'generate': 0.0, 'update': 0.0, 'eval': 0.0}
    for step in range(1, a['steps'] + 1):
        t0 = time.perf_counter()
        tasks = []
        while len(tasks) < n:  # epochs of the shuffled train set, as TRL's sampler
            if not queue:
                queue = list(range(len(a['train']))); order_rng.shuffle(queue)
            tasks.append(a['train'][queue.pop()])
        prompts = [t['prompt'] for t in tasks for _ in range(G)]
        m.eval()
        resp = generate(m, prompts, a['sampling']['max_new_tokens'], stop, a['sampling']['temperature'],
                        a['sampling']['top_p'], gen)
        rewards = [float(decode(o, a['decode'], stop).strip() == t['answer'].strip())
                   for o, t in zip(resp, [t for t in tasks for _ in range(G)])]
        rewards_seen.append(sum(rewards) / len(rewards))
        adv = group_advantages(rewards, G, a['adv_eps'])
        t1 = time.perf_counter(); prof['generate'] += t1 - t0
        keep = [i for i, r in enumerate(resp) if r]  # an empty completion has no token to train
        loss, _, _, _ = grpo_loss(m, ref, [prompts[i] for i in keep], [resp[i] for i in keep], adv[keep], a)
        opt.zero_grad()
        loss.backward()
        if a['grad_clip'] > 0:
            torch.nn.utils.clip_grad_norm_(m.parameters(), a['grad_clip'])
        opt.step()
        t2 = time.perf_counter(); prof['update'] += t2 - t1
        if step % a['eval_every'] == 0 or step == a['steps']:
            acc = accuracy(m, a['eval'], a)
            prof['eval'] += time.perf_counter() - t2
            curve.append({'step': step, 'samples': step * n * G, 'accuracy': acc,
                          'wall_s': round(time.perf_counter() - start, 3)})
    return {'curve': curve, 'batch_reward': rewards_seen, 'time_s': {k: round(v, 3) for k, v in prof.items()}, 'torch': torch.__version__,
            'threads': torch.get_num_threads()}


def batch(a):
    """The loss and gradients of one given batch (no sampling, no update)."""
    m, _ = load_hf(a['model'])
    ref = None
    if a['beta'] > 0:
        ref, _ = load_hf(a['ref_model'] if a.get('ref_model') else a['model'])
    prompts = [r['prompt'] for r in a['rows']]
    responses = [r['response'] for r in a['rows']]
    adv = group_advantages([r['reward'] for r in a['rows']], a['group_size'], a['adv_eps'])
    if a.get('old') is not None:
        Tr = max(len(r) for r in responses)
        a['old'] = torch.tensor([o + [0.0] * (Tr - len(o)) for o in a['old']])
    loss, logp, mask, kl = grpo_loss(m, ref, prompts, responses, adv, a)
    loss.backward()
    names = dict(m.named_parameters())
    grads = {k: names[k].grad.reshape(-1).tolist() for k in a.get('grads', [])}
    return {'loss': loss.item(), 'advantages': adv.tolist(), 'logp': [[v for v, k in zip(lr, mr) if k] for lr, mr in zip(logp.tolist(), mask.tolist())],
            'kl': None if kl is None else (kl * mask).sum().item() / mask.sum().item(),
            'grads': grads, 'grad_norm': torch.sqrt(sum((p.grad ** 2).sum() for p in m.parameters())).item()}


print(json.dumps(run(arg) if arg['mode'] == 'run' else batch(arg)))
