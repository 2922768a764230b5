"""Rehearsal fixture: what one rank sees and may write; then rank 2 fails with code 3.

Each rank records in $DUMP_DIR/rank<RANK>.json its env (PET_*, torchrun's,
USER_*), argv, working directory, script path, and how two writes went: a new
file ./out-rank<RANK>.txt (relative, as a script saving a checkpoint does) and
its own script file ("ok", or the errno's name). Rank 2 then waits until every
rank has written its record, so no rank is stopped before it did, and exits
with code 3; the others wait, as if blocked in a collective rank 2 never joins.
"""

import errno
import json
import os
import sys
import time
from pathlib import Path

NAMES = [
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "PYTHONUNBUFFERED",
    "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
]


def attempt(path: str) -> str:
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("# written by a rank\n")
    except OSError as e:
        return errno.errorcode.get(e.errno or 0, str(e.errno))
    return "ok"


rank = os.environ["RANK"]
dump = Path(os.environ["DUMP_DIR"])
record = {
    "env": {k: v for k, v in os.environ.items() if k in NAMES or k.startswith(("PET_", "USER_"))},
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "script": __file__,
    "relative_write": attempt(f"out-rank{rank}.txt"),
    "own_file_write": attempt(__file__),
}
partial = dump / f"rank{rank}.part"
partial.write_text(json.dumps(record, indent=1), encoding="utf-8")
partial.replace(dump / f"rank{rank}.json")  # complete once it exists
print(f"dumped the env of rank {rank}", flush=True)
if rank == "2":
    world = int(os.environ["WORLD_SIZE"])
    while len(list(dump.glob("rank*.json"))) < world:
        time.sleep(0.05)
    print("rank 2 loading batch 17", flush=True)
    print("loss is nan at step 17; giving up", file=sys.stderr, flush=True)
    sys.exit(3)
time.sleep(600)
