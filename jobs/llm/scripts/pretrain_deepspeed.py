"""Pre-train a small byte-level causal transformer with DeepSpeed ZeRO.

Started on an MPIJob's launcher by ``deepspeed --hostfile /etc/mpi/hostfile --launcher
openmpi``, which runs ``mpirun``: every rank finds its rank, world size and the master
address from Open MPI (``deepspeed.init_distributed`` with MPI discovery). NCCL on GPUs,
gloo on CPU (``trainkit rehearse``). Data: every ``*.txt`` file under ``TRAIN_DATA_PATH``,
read as bytes; synthetic token sequences when the path is unset or missing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import deepspeed
import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 256  # byte-level tokens


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=4, help="optimizer steps")
    p.add_argument("--zero-stage", type=int, default=1, choices=[0, 1, 2, 3])
    p.add_argument("--batch-size", type=int, default=4, help="sequences per rank and step")
    p.add_argument("--seq-len", type=int, default=32, help="tokens per sequence")
    p.add_argument("--seed", type=int, default=0)
    args, _ = p.parse_known_args()  # the launcher may add --local_rank
    return args


class TinyLM(nn.Module):
    def __init__(self, dim: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        block = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=4 * dim, batch_first=True)
        self.blocks = nn.TransformerEncoder(block, layers)
        self.head = nn.Linear(dim, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        return self.head(self.blocks(self.embed(tokens), mask=mask, is_causal=True))


def corpus(seq_len: int, seed: int) -> torch.Tensor:
    root = Path(os.environ.get("TRAIN_DATA_PATH", ""))
    files = sorted(root.rglob("*.txt")) if root.is_dir() else [root] if root.is_file() else []
    data = b"".join(f.read_bytes() for f in files)
    if len(data) > seq_len + 1:
        return torch.tensor(list(data), dtype=torch.long)
    return torch.randint(0, VOCAB, (4096,), generator=torch.Generator().manual_seed(seed))


def main() -> None:
    args = parse_args()
    gpu = torch.cuda.is_available()
    # MPI discovery's rendezvous port: 29500 unless MASTER_PORT says otherwise (a rehearsal
    # gives a free one, so two can run on one machine).
    port = int(os.environ.get("MASTER_PORT", "29500"))
    deepspeed.init_distributed(dist_backend="nccl" if gpu else "gloo", distributed_port=port)
    rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    torch.manual_seed(args.seed)
    model = TinyLM()
    config: dict[str, object] = {
        "train_micro_batch_size_per_gpu": args.batch_size,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": args.zero_stage},
        "steps_per_print": 10**9,
    }
    optimizer = None
    if gpu:
        config["optimizer"] = {"type": "AdamW", "params": {"lr": 3e-3}}  # DeepSpeed's fused Adam
    else:
        # DeepSpeed compiles its CPU Adam on first use, minutes on a laptop: torch's instead.
        config["zero_allow_untested_optimizer"] = True
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    engine, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), optimizer=optimizer, config=config
    )
    tokens = corpus(args.seq_len, args.seed)
    gen = torch.Generator().manual_seed(args.seed + rank)
    for step in range(args.steps):
        starts = torch.randint(0, len(tokens) - args.seq_len - 1, (args.batch_size,), generator=gen)
        batch = torch.stack([tokens[s : s + args.seq_len + 1] for s in starts]).to(engine.device)
        logits = engine(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        engine.backward(loss)
        engine.step()
        mean = loss.detach().clone()
        torch.distributed.all_reduce(mean)
        if rank == 0:
            print(f"step {step + 1}/{args.steps} loss {mean.item() / world:.4f}", flush=True)
    if rank == 0:
        print(f"done: {world} ranks, ZeRO stage {args.zero_stage}", flush=True)
    # No rank leaves while another still talks to it.
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    # Then leave without the interpreter's shutdown: gloo's worker threads can still be
    # dropping their last reference to a tensor Python owned, which takes the GIL; once
    # finalization has begun, CPython ends such a thread in place, and unwinding through a C++
    # destructor aborts the process ("terminate called without an active exception", in
    # ProcessGroupGloo::runLoop, about 1 CPU rehearsal in 40). Nothing is left to flush but
    # the streams, and MPI when DeepSpeed found the ranks through mpi4py (mpirun counts a
    # rank that exits without MPI_Finalize as failed).
    sys.stdout.flush()
    sys.stderr.flush()
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()
    os._exit(0)


if __name__ == "__main__":
    main()
