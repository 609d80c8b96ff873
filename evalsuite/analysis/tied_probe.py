"""The earlier trained capacity probe (``variant="tied"``, ``capacity.trained_probe``): random
unit values, MSE, the query through the key projection; trained per S until it retrieves the
target or its steps run out. Schlag et al.'s protocol is ``capacity.schlag_probe``."""
from __future__ import annotations

import math
import time

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from .probe_common import build, check, retrieval, row


class TrainedProbe(nn.Module):
    """Schlag et al. 6.1: learned key embeddings and key/query projections into one memory."""

    def __init__(self, memory: str, d_key: int, n_keys: int, d_value: int, feature_map=None, feature_map_options=None,
                 tie_query: bool = True):
        super().__init__()
        self.memory = memory
        self.embed = nn.Embedding(n_keys, d_key)
        self.key_proj = nn.Linear(d_key, d_key, bias=False)
        # The read asks for a key that was written: by default through the same projection, so the
        # probe measures what the memory holds, not how well two projections learn to agree.
        self.query_proj = self.key_proj if tie_query else nn.Linear(d_key, d_key, bias=False)
        self.beta = nn.Linear(d_key, 1) if memory == "delta" else None
        self.log_scale = nn.Parameter(torch.tensor(math.log(d_key ** 0.5))) if memory == "softmax" else None
        self.mem = build(memory, d_key, feature_map, feature_map_options)

    def forward(self, key_ids, values, query_ids):
        e_k, e_q = self.embed(key_ids), self.embed(query_ids)
        k, q = self.key_proj(e_k), self.query_proj(e_q)
        beta = None
        if self.memory == "delta":  # unit keys keep the triangular solve bounded
            k, q = F.normalize(k, dim=-1), F.normalize(q, dim=-1)
            beta = torch.sigmoid(self.beta(e_k)).squeeze(-1)
        scale = self.log_scale.exp() if self.log_scale is not None else None
        return self.mem(k, values, q, beta=beta, scale=scale)


def _probe_batch(n, S, n_keys, d_value, setting, gen, device):
    """Setting 1: S distinct keys each written once. Setting 2: 2S writes of keys drawn from S
    (keys recur); the answer is the latest value written for the queried key."""
    if setting == 1:
        key_ids = torch.argsort(torch.rand(n, n_keys, generator=gen), dim=1)[:, :S]
    else:
        key_ids = torch.randint(0, S, (n, 2 * S), generator=gen)
    values = F.normalize(torch.randn(n, key_ids.shape[1], d_value, generator=gen), dim=-1)
    pick = torch.randint(0, key_ids.shape[1], (n, 1), generator=gen)
    query_ids = key_ids.gather(1, pick)
    # the latest write of the queried key holds the answer
    positions = torch.arange(key_ids.shape[1]).expand_as(key_ids)
    latest = torch.where(key_ids == query_ids, positions, -1).amax(1, keepdim=True)
    answer = values.gather(1, latest[..., None].expand(-1, 1, d_value))
    # candidates: the distinct values alive at read time (the latest one of every key)
    return key_ids.to(device), values.to(device), query_ids.to(device), answer.to(device)


def tied_probe(memory: str, d_key: int, pairs, *, feature_map=None, feature_map_options=None,
               d_value: int | None = None, setting: int = 1, steps: int = 4000, batch_size: int = 128,
               lr: float = 1e-2, target: float = 0.999, tie_query: bool = True, seed: int = 0,
               device: str = "cpu", echo=None) -> pd.DataFrame:
    """The earlier probe: random unit values, MSE, the query through the key projection; trained
    per S until it retrieves >= ``target`` or ``steps`` run out."""
    pairs = check(memory, d_key, pairs)
    d_value = d_value or d_key
    dev = torch.device(device)
    rows = []
    for S in pairs:
        start = time.perf_counter()
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        n_keys = S
        probe = TrainedProbe(memory, d_key, n_keys, d_value, feature_map, feature_map_options, tie_query).to(dev)
        opt = torch.optim.Adam(probe.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        val = _probe_batch(1024, S, n_keys, d_value, setting, torch.Generator().manual_seed(10_000 + seed), dev)
        best, step = (0.0, math.inf), 0
        for step in range(1, steps + 1):
            key_ids, values, query_ids, answer = _probe_batch(batch_size, S, n_keys, d_value, setting, gen, dev)
            loss = F.mse_loss(probe(key_ids, values, query_ids), answer)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            if step % 100 == 0 or step == steps:
                acc, val_loss = _evaluate_probe(probe, val)
                best = max(best, (acc, -val_loss))
                if acc >= target:
                    break
        acc, loss_value = best[0], -best[1]
        rows.append(row(memory, feature_map, feature_map_options, d_key, S, acc, loss_value, True, setting,
                        probe.mem.state_floats(S, d_value), variant="tied", seed=seed, steps=step, max_steps=steps,
                         lr=lr, batch_size=batch_size, seconds=time.perf_counter() - start))
        if echo:
            echo(f"  {rows[-1]['memory']:>20}  S={S:>4}  accuracy {acc:.3f}  loss {loss_value:.4f}  "
                 f"({step} steps, {rows[-1]['seconds']:.1f} s)")
    return pd.DataFrame(rows)


@torch.no_grad()
def _evaluate_probe(probe, batch):
    key_ids, values, query_ids, answer = batch
    read = probe(key_ids, values, query_ids)
    # nearest among the values written in this sequence (in setting 2 an overwritten value is a wrong answer)
    return retrieval(read, answer, values)
