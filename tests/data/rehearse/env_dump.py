"""Rehearsal fixture: write the env and arguments this process sees to $DUMP_DIR/rank<RANK>.json."""

import json
import os
import sys
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

env = {k: v for k, v in os.environ.items() if k in NAMES or k.startswith(("PET_", "USER_"))}
record = {"env": env, "argv": sys.argv[1:], "cwd": os.getcwd(), "script": __file__}
out = Path(os.environ["DUMP_DIR"]) / f"rank{os.environ['RANK']}.json"
out.write_text(json.dumps(record, indent=1), encoding="utf-8")
print(f"dumped the env of rank {os.environ['RANK']}")
