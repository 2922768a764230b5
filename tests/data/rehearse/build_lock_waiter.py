"""A DeepSpeed rank on CPU as it joins the job while a build's lock is left over: it says where it
waits, then waits for the lock to go as torch's FileBaton.wait does (torch/utils/file_baton.py),
silently and without limit. Standard library only: importing DeepSpeed costs a rank 2 CPU-s."""

import os
import time

lock = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "deepspeed_shm_comm", "lock")
print(f"waiting for {lock}", flush=True)
while os.path.exists(lock):
    time.sleep(0.1)
