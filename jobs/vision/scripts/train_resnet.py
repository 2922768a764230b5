"""Distributed data-parallel training of a small ResNet (seed 000 style).

Runs under ``torchrun`` as the PyTorchJob's container command: NCCL on GPUs,
gloo on CPU (``trainkit rehearse``). The data are synthetic MNIST-shaped
images (1x28x28, 10 classes) so the script needs no download; each rank
trains on its own shard (``DistributedSampler``) and DDP keeps the replicas
identical. At the end every rank prints

    checksum=<sum of its parameters, 6 decimals> rank=<rank> world=<world size>

and rank 0 checks with an all-reduce that every rank holds the same model.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=1, help="passes over the data set")
    p.add_argument("--steps-per-epoch", type=int, default=4, help="optimizer steps per epoch")
    p.add_argument("--batch-size", type=int, default=16, help="images per rank and step")
    p.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    p.add_argument("--seed", type=int, default=0, help="seed of the model and the data")
    return p.parse_args()


def setup() -> tuple[int, int, int, torch.device]:
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
    print(f"rank {rank}/{world} (local rank {local_rank}) on {device} with {backend}", flush=True)
    return rank, world, local_rank, device


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut, as in ResNet-18/34."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class SmallResNet(nn.Module):
    """A ResNet for 28x28 single-channel images: stem, three stages, pooled classifier."""

    def __init__(self, classes: int = 10, width: int = 8) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU()
        )
        self.layers = nn.Sequential(
            BasicBlock(width, width),
            BasicBlock(width, 2 * width, stride=2),
            BasicBlock(2 * width, 4 * width, stride=2),
        )
        self.fc = nn.Linear(4 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def synthetic_mnist(samples: int, seed: int) -> TensorDataset:
    """MNIST-shaped images whose class is a blob position, so the loss can fall."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (samples,), generator=g)
    images = 0.3 * torch.randn(samples, 1, 28, 28, generator=g)
    for i, label in enumerate(labels.tolist()):
        row, col = 4 + 7 * (label // 4), 4 + 7 * (label % 4)
        images[i, 0, row : row + 5, col : col + 5] += 1.0
    return TensorDataset(images, labels)


def checksum(model: nn.Module) -> float:
    return float(sum(p.detach().double().sum().item() for p in model.parameters()))


def train(
    args: argparse.Namespace, rank: int, world: int, local_rank: int, device: torch.device
) -> int:
    """Train and report; every object holding the process group lives in here."""
    torch.manual_seed(args.seed)  # same initial weights on every rank
    model = SmallResNet().to(device)
    ddp = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    data = synthetic_mnist(args.steps_per_epoch * args.batch_size * world, args.seed)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, seed=args.seed)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)

    start = time.monotonic()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        ddp.train()
        total, seen = 0.0, 0
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(ddp(images), labels)
            loss.backward()
            opt.step()
            total += loss.item() * len(labels)
            seen += len(labels)
        stats = torch.tensor([total, float(seen)], dtype=torch.float64, device=device)
        dist.all_reduce(stats)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs} loss={stats[0] / stats[1]:.4f}", flush=True)

    local = checksum(model)
    print(f"checksum={local:.6f} rank={rank} world={world}", flush=True)
    lo = torch.tensor([local], dtype=torch.float64, device=device)
    hi = lo.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    if rank == 0:
        spread = (hi - lo).item()
        print(
            f"all-reduced checksum: min={lo.item():.6f} max={hi.item():.6f} "
            f"({args.epochs * args.steps_per_epoch} steps in "
            f"{time.monotonic() - start:.1f}s)",
            flush=True,
        )
        if spread > 1e-6:
            print(f"ranks disagree on the model (spread {spread:g})", file=sys.stderr)
            return 1
    return 0


def main() -> int:
    args = parse_args()
    rank, world, local_rank, device = setup()
    try:
        return train(args, rank, world, local_rank, device)
    finally:
        # DDP and FSDP hold the process group: once train() returned they are
        # garbage, so collect them now and destroy_process_group() tears gloo down
        # while Python still runs. Left to interpreter exit, gloo's threads can abort
        # the process ("terminate called without an active exception", SIGABRT).
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
