"""Rehearsal fixture: rank 2 fails with exit code 3; the other ranks wait for it."""

import os
import sys
import time

rank = int(os.environ["RANK"])
print(f"rank {rank} starting", flush=True)
if rank == 2:
    print("rank 2 loading batch 17", flush=True)
    print("loss is nan at step 17; giving up", file=sys.stderr, flush=True)
    sys.exit(3)
time.sleep(120)  # as if blocked in a collective that rank 2 never joins
