"""Evaluation suite driver, run as a RayJob's entrypoint from its working directory.

Ray starts the driver and every task in a copy of this directory (``runtime_env``
``working_dir``), so ``suite`` imports the same way on the head and on the workers.
"""

from __future__ import annotations

import argparse

import ray

from suite.tasks import score, tasks


@ray.remote(num_cpus=1)
def run_task(name: str) -> tuple[str, float]:
    # On the worker, in its copy of the working directory: the prompts are found there.
    return name, score(name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default=",".join(tasks()))
    args = parser.parse_args()
    ray.init()
    names = [n for n in args.tasks.split(",") if n]
    for name, value in sorted(ray.get([run_task.remote(n) for n in names])):
        print(f"eval {name}: {value:.3f}")


if __name__ == "__main__":
    main()
