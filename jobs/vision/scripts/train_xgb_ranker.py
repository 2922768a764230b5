"""Distributed XGBoost on image-embedding features: is a photo good enough to label?

The Training Operator gives every pod MASTER_ADDR and MASTER_PORT (the Master's Service),
WORLD_SIZE and RANK; the job's env_refs give CPUS (the container's CPU limit) and NODE_NAME. The Master (rank 0) runs XGBoost's tracker there; every pod, the Master
included, joins the collective through it and trains on its own shard of the rows; the
histograms are all-reduced, so each pod ends with the same model. The Master saves it.

The operator starts the pods together, in no order: a Worker often reaches MASTER_ADDR before
the Master's tracker listens. XGBoost's own reconnect then sleeps 2 s, 4 s, ... between tries
(and its second try fails as well), so ``join`` tries every 0.1 s itself instead.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.core import XGBoostError
from xgboost.tracker import RabitTracker


def shard(rank: int, rows: int, features: int) -> tuple[np.ndarray, np.ndarray]:
    """This pod's rows (synthetic embeddings standing in for the feature store's shard)."""
    rng = np.random.default_rng(rank)
    x = rng.normal(size=(rows, features)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.float32)
    return x, y


class Rounds(xgb.callback.TrainingCallback):
    """Counts the rounds done into ``state`` for the status port."""

    def __init__(self, state: dict[str, int]) -> None:
        super().__init__()
        self.state = state

    def after_iteration(self, model: object, epoch: int, evals_log: object) -> bool:
        self.state["rounds"] = epoch + 1
        return False  # go on


def serve_status(port: int, state: dict[str, int]) -> None:
    """Answer GET on ``port`` with the rounds done so far (the job's ``status`` port, which its
    readiness probe reads). A rehearsal runs every pod on one machine: the first one serves."""

    class Status(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(state).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    try:
        server = ThreadingHTTPServer(("", port), Status)
    except OSError as e:
        print(f"status port {port} not served: {e}", flush=True)
        return
    threading.Thread(target=server.serve_forever, daemon=True).start()


def join(ctx: dict[str, str | int], patience: float) -> None:
    """Join the collective through the tracker in ``ctx``, one connection try at a time
    (``dmlc_retry=1``: no sleep inside XGBoost), every 0.1 s until it listens or ``patience``
    seconds have passed. A refused try never reaches the tracker, so it sees one connection
    per pod."""
    deadline = time.monotonic() + patience
    while True:
        try:
            with warnings.catch_warnings():
                # XGBoost warns of each refused try; the last error is raised below.
                warnings.filterwarnings("ignore", r".*Failed to connect to", UserWarning)
                collective.init(**ctx, dmlc_retry=1)
            return
        except XGBoostError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--rows", type=int, default=2000, help="per pod")
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--output", default="model.ubj")
    p.add_argument("--status-port", type=int, default=0, help="0: none")
    p.add_argument(
        "--join-timeout", type=float, default=300, help="seconds to wait for the tracker"
    )
    args = p.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    state = {"rank": rank, "rounds": 0}
    if args.status_port:
        serve_status(args.status_port, state)
    threads = int(os.environ.get("CPUS") or 0)  # 0: XGBoost's default, every core it sees
    print(f"rank {rank} of {world} on {os.environ.get('NODE_NAME', 'this machine')}", flush=True)
    tracker = None
    if rank == 0:
        # The Master's Service resolves to the Master pod itself: listen on every address.
        tracker = RabitTracker(host_ip="0.0.0.0", n_workers=world, port=port, sortby="task")
        tracker.start()
    ctx: dict[str, str | int] = {
        "dmlc_tracker_uri": host,
        "dmlc_tracker_port": port,
        "dmlc_task_id": str(rank),
    }
    join(ctx, args.join_timeout)
    try:
        x, y = shard(rank, args.rows, args.features)
        booster = xgb.train(
            {
                "objective": "binary:logistic",
                "tree_method": "hist",
                "eval_metric": "logloss",
                **({"nthread": threads} if threads else {}),
            },
            xgb.DMatrix(x, y),
            num_boost_round=args.rounds,
            evals=[(xgb.DMatrix(x, y), f"rank{rank}")],
            verbose_eval=5,
            callbacks=[Rounds(state)],
        )
        if collective.get_rank() == 0:
            os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
            booster.save_model(args.output)
            print(f"saved {args.output} after {booster.num_boosted_rounds()} rounds", flush=True)
    finally:
        collective.finalize()
    if tracker is not None:
        tracker.wait_for()


if __name__ == "__main__":
    main()
