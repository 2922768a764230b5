"""A wide & deep click-through model trained with parameter servers (Paddle fleet, static graph).

Each pod runs this file itself: fleet's PaddleCloudRoleMaker reads the role, the servers'
endpoints and the trainer index that paddle-operator sets (TRAINING_ROLE,
PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_PORT, POD_IP, PADDLE_TRAINER_ID). Servers hold the
embedding tables and serve until every trainer has stopped. Data: synthetic clicks.
"""

from __future__ import annotations

import argparse

import numpy as np
import paddle
from paddle.distributed import fleet

SPARSE_SLOTS, SPARSE_DIM, DENSE_DIM = 8, 100_000, 13


def build() -> tuple[list[paddle.static.Variable], paddle.static.Variable]:
    dense = paddle.static.data("dense", [None, DENSE_DIM], "float32")
    sparse = [paddle.static.data(f"s{i}", [None, 1], "int64") for i in range(SPARSE_SLOTS)]
    label = paddle.static.data("label", [None, 1], "int64")
    embs = [
        paddle.static.nn.sparse_embedding(s, size=[SPARSE_DIM, 8]).reshape([-1, 8])
        for s in sparse
    ]
    deep = paddle.concat([*embs, dense], axis=1)
    for width in (256, 128):
        deep = paddle.static.nn.fc(deep, width, activation="relu")
    wide = paddle.static.nn.fc(dense, 1)
    logit = paddle.static.nn.fc(deep, 1) + wide
    loss = paddle.nn.functional.binary_cross_entropy_with_logits(
        logit, paddle.cast(label, "float32")
    )
    return [dense, *sparse, label], paddle.mean(loss)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=512)
    args = p.parse_args()

    paddle.enable_static()
    fleet.init()
    inputs, loss = build()
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = True  # trainers push gradients without waiting for each other
    optimizer = fleet.distributed_optimizer(paddle.optimizer.Adam(1e-3), strategy)
    optimizer.minimize(loss)
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        return
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    rng = np.random.default_rng(fleet.worker_index())
    for step in range(args.steps):
        n = args.batch_size
        feed = {"dense": rng.random((n, DENSE_DIM), dtype=np.float32)}
        feed |= {f"s{i}": rng.integers(0, SPARSE_DIM, (n, 1)) for i in range(SPARSE_SLOTS)}
        feed["label"] = rng.integers(0, 2, (n, 1))
        (value,) = exe.run(paddle.static.default_main_program(), feed=feed, fetch_list=[loss])
        if fleet.is_first_worker() and step % 100 == 0:
            print(f"step {step} loss {float(np.mean(value)):.4f}", flush=True)
    fleet.stop_worker()


if __name__ == "__main__":
    main()
