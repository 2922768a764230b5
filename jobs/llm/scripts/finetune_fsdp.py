"""Fully sharded (FSDP) fine-tune of a small causal transformer language model (seed 002 style).

Runs under ``torchrun`` as the PyTorchJob's container command: NCCL on GPUs,
gloo on CPU (``trainkit rehearse``). Sharding uses FSDP2 (``fully_shard``)
when this torch has it, else FSDP1 (``FullyShardedDataParallel``); if neither
can wrap the model here the script says why and trains with DDP instead.

Data: every ``*.txt`` file under ``TRAIN_DATA_PATH`` (a file or a directory),
read as bytes; when the variable is unset or the path does not exist, synthetic
token sequences are used. When ``OUTPUT_PATH`` is an existing directory the
full fine-tuned state dict is saved there as ``finetuned.pt`` by rank 0.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

VOCAB = 256  # byte-level tokens


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=1, help="passes over the data")
    p.add_argument("--steps-per-epoch", type=int, default=4, help="optimizer steps per epoch")
    p.add_argument("--batch-size", type=int, default=8, help="sequences per rank and step")
    p.add_argument("--seq-len", type=int, default=32, help="tokens per sequence")
    p.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    p.add_argument("--seed", type=int, default=0, help="seed of the model and the data")
    p.add_argument(
        "--strategy",
        choices=["auto", "fsdp2", "fsdp1", "ddp"],
        default="auto",
        help="auto tries fsdp2, then fsdp1, then falls back to ddp",
    )
    return p.parse_args()


def setup() -> tuple[int, int, torch.device]:
    """Join the process group: NCCL when CUDA is available, gloo on CPU."""
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device(f"cuda:{local_rank}")
    else:
        device = torch.device("cpu")
    print(f"rank {rank}/{world} on {device} with {backend}", flush=True)
    return rank, world, device


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and an MLP."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    """A GPT-style decoder small enough to train on a CPU in seconds."""

    def __init__(self, seq_len: int, dim: int = 64, heads: int = 4, depth: int = 2) -> None:
        super().__init__()
        self.tok = nn.Embedding(VOCAB, dim)
        self.pos = nn.Embedding(seq_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Mean next-token cross-entropy of ``tokens`` (batch, seq_len + 1)."""
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        t = inputs.shape[1]
        pos = torch.arange(t, device=inputs.device)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=inputs.device), diagonal=1)
        x = self.tok(inputs) + self.pos(pos)
        for block in self.blocks:
            x = block(x, mask)
        logits = self.head(self.norm(x))
        # Returning the loss (not the logits, a view) keeps FSDP2's backward hooks intact.
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def load_tokens(samples: int, seq_len: int, seed: int, rank: int) -> torch.Tensor:
    """``samples`` sequences of ``seq_len + 1`` tokens from TRAIN_DATA_PATH or synthetic."""
    g = torch.Generator().manual_seed(seed)
    raw = os.environ.get("TRAIN_DATA_PATH")
    data = b""
    if raw:
        path = Path(raw)
        files = sorted(path.rglob("*.txt")) if path.is_dir() else [path] if path.exists() else []
        data = b"".join(f.read_bytes() for f in files)
        if rank == 0:
            if data:
                print(f"TRAIN_DATA_PATH={raw}: {len(files)} file(s), {len(data)} bytes", flush=True)
            else:
                print(f"TRAIN_DATA_PATH={raw}: no *.txt data there; using synthetic tokens")
    if len(data) > seq_len + 1:
        stream = torch.tensor(list(data), dtype=torch.long)
        starts = torch.randint(0, len(stream) - seq_len - 1, (samples,), generator=g)
        return torch.stack([stream[s : s + seq_len + 1] for s in starts.tolist()])
    # Synthetic: arithmetic sequences modulo the vocabulary, learnable from context.
    start = torch.randint(0, VOCAB, (samples, 1), generator=g)
    step = torch.randint(1, 8, (samples, 1), generator=g)
    return (start + step * torch.arange(seq_len + 1)) % VOCAB


def shard(model: TinyLM, strategy: str, device: torch.device, rank: int) -> tuple[nn.Module, str]:
    """Wrap ``model`` for data-parallel training; returns the module and the strategy used."""
    reasons = []
    if strategy in ("auto", "fsdp2"):
        try:
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import fully_shard

            mesh = init_device_mesh(device.type, (dist.get_world_size(),))
            for block in model.blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(model, mesh=mesh)
            return model, "fsdp2"
        except (ImportError, RuntimeError, NotImplementedError, ValueError) as e:
            reasons.append(f"FSDP2 (fully_shard): {type(e).__name__}: {e}")
            if strategy == "fsdp2":
                raise
    if strategy in ("auto", "fsdp1"):
        try:
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            from torch.distributed.fsdp.wrap import ModuleWrapPolicy

            wrapped = FSDP(
                model,
                auto_wrap_policy=ModuleWrapPolicy({Block}),
                device_id=device if device.type == "cuda" else None,
                use_orig_params=True,
            )
            return wrapped, "fsdp1"
        except (ImportError, RuntimeError, NotImplementedError, ValueError) as e:
            reasons.append(f"FSDP1 (FullyShardedDataParallel): {type(e).__name__}: {e}")
            if strategy == "fsdp1":
                raise
    if rank == 0 and reasons:
        print(
            "FSDP cannot run here, falling back to DDP (every rank holds the full model): "
            + "; ".join(reasons),
            flush=True,
        )
    from torch.nn.parallel import DistributedDataParallel as DDP

    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None), "ddp"


def local_params(module: nn.Module) -> int:
    """Parameters stored on this rank: a shard under FSDP, everything under DDP."""
    total = 0
    for p in module.parameters():
        to_local = getattr(p, "to_local", None)  # FSDP2 parameters are DTensors
        total += (to_local() if callable(to_local) else p).numel()
    return total


def full_state_dict(module: nn.Module) -> dict[str, Any]:
    """The unsharded state dict on every rank (a collective: all ranks must call it)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(
        module, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
    )


def train(args: argparse.Namespace, rank: int, world: int, device: torch.device) -> int:
    """Train and report; every object holding the process group lives in here."""
    torch.manual_seed(args.seed)  # same initial weights on every rank
    model, strategy = shard(TinyLM(args.seq_len).to(device), args.strategy, device, rank)
    print(f"rank {rank}: {strategy}, {local_params(model)} parameters held locally", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)

    tokens = load_tokens(
        args.steps_per_epoch * args.batch_size * world, args.seq_len, args.seed, rank
    )
    mine = tokens[rank::world]  # this rank's shard
    start, step, loss_avg = time.monotonic(), 0, float("nan")
    for epoch in range(args.epochs):
        order = torch.randperm(len(mine), generator=torch.Generator().manual_seed(epoch))
        for i in range(args.steps_per_epoch):
            batch = mine[order[i * args.batch_size : (i + 1) * args.batch_size]].to(device)
            loss = model(batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            loss_avg = avg.item() / world
            if not math.isfinite(loss_avg):
                print(f"loss is {loss_avg} at step {step}", file=sys.stderr, flush=True)
                return 1
            if rank == 0:
                print(f"epoch {epoch + 1} step {step} loss={loss_avg:.6f}", flush=True)

    output = os.environ.get("OUTPUT_PATH")
    state = full_state_dict(model) if output and Path(output).is_dir() else None
    if rank == 0 and output:
        if state is not None:
            target = Path(output) / "finetuned.pt"
            torch.save(state, target)
            print(f"saved {len(state)} tensors to {target}", flush=True)
        else:
            print(f"OUTPUT_PATH={output} is not a directory here; not saving", flush=True)
    print(
        f"done strategy={strategy} steps={step} loss={loss_avg:.4f} rank={rank} "
        f"world={world} seconds={time.monotonic() - start:.1f}",
        flush=True,
    )
    return 0


def main() -> int:
    args = parse_args()
    rank, world, device = setup()
    try:
        return train(args, rank, world, device)
    finally:
        # DDP and FSDP hold the process group: once train() returned they are
        # garbage, so collect them now and destroy_process_group() tears gloo down
        # while Python still runs. Left to interpreter exit, gloo's threads can abort
        # the process ("terminate called without an active exception", SIGABRT).
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
