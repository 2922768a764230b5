"""Learning-rate sweep of a tiny language model, one Ray task per trial.

Run as a RayJob's entrypoint: ``ray.init()`` joins the Ray cluster KubeRay started (it reads
RAY_ADDRESS). Each trial asks for one GPU when the cluster has GPUs, else for one CPU, so the
same script runs in a CPU rehearsal.

The driver only schedules the trials and prints their losses: torch is imported by the trial,
in the Ray worker that trains, not on the head (which has no GPUs; importing torch there would
cost seconds and memory for nothing).
"""

from __future__ import annotations

import argparse
import math

import ray

VOCAB = 64


def trial(lr: float, steps: int, seed: int) -> float:
    """Train a tiny GRU language model with ``lr``; the final loss (inf when training diverged)."""
    import torch
    import torch.nn.functional as F

    class TinyLM(torch.nn.Module):
        def __init__(self, dim: int = 64) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(VOCAB, dim)
            self.mix = torch.nn.GRU(dim, dim, batch_first=True)
            self.head = torch.nn.Linear(dim, VOCAB)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            hidden, _ = self.mix(self.embed(tokens))
            return self.head(hidden)

    def corpus(length: int) -> torch.Tensor:
        """A repeating pattern with noise: learnable, so a good rate shows."""
        gen = torch.Generator().manual_seed(seed)
        base = torch.arange(length) % 17
        noise = torch.randint(0, VOCAB, (length,), generator=gen)
        keep = torch.rand(length, generator=gen) < 0.9
        return torch.where(keep, base, noise)

    torch.manual_seed(seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = TinyLM().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    tokens = corpus(4096).to(device)
    loss = torch.tensor(math.inf)
    for _ in range(steps):
        starts = torch.randint(0, len(tokens) - 33, (16,))
        batch = torch.stack([tokens[s : s + 33] for s in starts])
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    value = float(loss.item())
    return value if math.isfinite(value) else math.inf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ray.init()
    gpus = ray.cluster_resources().get("GPU", 0)
    run = ray.remote(num_gpus=1)(trial) if gpus else ray.remote(num_cpus=1)(trial)
    rates = [10 ** (-4 + 3 * i / max(1, args.trials - 1)) for i in range(args.trials)]
    losses = ray.get([run.remote(lr, args.steps, args.seed) for lr in rates])
    for lr, loss in sorted(zip(rates, losses), key=lambda p: p[1]):
        print(f"lr {lr:.2e} loss {loss:.4f}", flush=True)
    best_lr, best = min(zip(rates, losses), key=lambda p: p[1])
    print(f"best: lr {best_lr:.2e} loss {best:.4f} of {args.trials} trials", flush=True)


if __name__ == "__main__":
    main()
