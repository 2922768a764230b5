"""A small bigram language model trained data-parallel with JAX across processes.

One process per pod. As a JAXJob the Training Operator sets COORDINATOR_ADDRESS,
COORDINATOR_PORT, NUM_PROCESSES and PROCESS_ID; as a TrainJob on a jax runtime Kubeflow Trainer
sets JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID. ``jax.distributed.initialize``
meets the other processes at the first pod. Each process feeds its own shard of every batch; the jitted
step sees one global batch sharded over every device of every process, so XLA averages the
gradients across processes (NCCL on GPUs, gloo on CPU).
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

VOCAB = 64


def corpus(seed: int, size: int) -> np.ndarray:
    """Token ids of a synthetic text with a learnable next-token rule."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, VOCAB, size=size)
    nxt = (first * 7 + 3) % VOCAB
    return np.stack([first, nxt], axis=1).astype(np.int32)


def loss(params: jax.Array, batch: jax.Array) -> jax.Array:
    logits = jax.nn.one_hot(batch[:, 0], VOCAB) @ params
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.sum(jax.nn.one_hot(batch[:, 1], VOCAB) * logp, axis=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-per-process", type=int, default=64)
    p.add_argument("--lr", type=float, default=20.0)
    args = p.parse_args()

    if "COORDINATOR_ADDRESS" in os.environ:  # a JAXJob (Training Operator)
        env = os.environ
        coordinator = f"{env['COORDINATOR_ADDRESS']}:{env['COORDINATOR_PORT']}"
        count, me = int(env["NUM_PROCESSES"]), int(env["PROCESS_ID"])
    else:  # a TrainJob on a jax runtime (Kubeflow Trainer)
        coordinator = os.environ["JAX_COORDINATOR_ADDRESS"]
        count, me = int(os.environ["JAX_NUM_PROCESSES"]), int(os.environ["JAX_PROCESS_ID"])
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=count, process_id=me)
    me, n = jax.process_index(), jax.process_count()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    shard = NamedSharding(mesh, PartitionSpec("data"))
    replicated = NamedSharding(mesh, PartitionSpec())
    print(f"process {me} of {n}: {jax.local_device_count()} local of {jax.device_count()} devices")

    params = jax.device_put(jnp.zeros((VOCAB, VOCAB)), replicated)
    step = jax.jit(
        lambda w, b: w - args.lr * jax.grad(loss)(w, b),
        out_shardings=replicated,
    )
    data = corpus(seed=me, size=args.steps * args.batch_per_process)
    for i in range(args.steps):
        local = data[i * args.batch_per_process : (i + 1) * args.batch_per_process]
        batch = jax.make_array_from_process_local_data(shard, local)
        params = step(params, batch)
        if i % 100 == 0 or i == args.steps - 1:
            value = jax.jit(loss, out_shardings=replicated)(params, batch)
            if me == 0:
                print(f"step {i}: loss {float(value):.3f}", flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
