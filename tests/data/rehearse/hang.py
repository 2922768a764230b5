"""Rehearsal fixture: every rank hangs and starts a child that hangs too.

Each rank writes "<own pid> <launcher pid> <child pid>" to $PID_DIR/rank<RANK>.pid.
The rank named by $IGNORE_SIGTERM_RANK ignores SIGTERM (so does its child,
which inherits that), so only SIGKILL stops them.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

rank = os.environ["RANK"]
if rank == os.environ.get("IGNORE_SIGTERM_RANK"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
pids = f"{os.getpid()} {os.getppid()} {child.pid}\n"
(Path(os.environ["PID_DIR"]) / f"rank{rank}.pid").write_text(pids, encoding="utf-8")
print(f"rank {rank} waiting forever", flush=True)
time.sleep(600)
