"""An MPI rank that fails at once (without importing torch, so the test stays quick)."""

import os
import sys

print("rank", os.environ["OMPI_COMM_WORLD_RANK"], "fails", flush=True)
sys.exit(3)
