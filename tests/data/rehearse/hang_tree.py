"""Rehearsal fixture: a node that starts two ranks as torchrun does, each in a session of
its own, and hangs; each rank starts a child and hangs too.

Run as a command job's process (RANK is the node rank), it starts ranks 2·RANK
and 2·RANK+1; each writes "<own pid> <node pid> <child pid>" to
$PID_DIR/rank<R>.pid (complete once it exists) and prints "rank R waiting
forever". The rank named by $IGNORE_SIGTERM_RANK ignores SIGTERM (so does its
child, which inherits that), so only SIGKILL stops them.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

if len(sys.argv) > 1:  # a rank
    rank = sys.argv[1]
    if rank == os.environ.get("IGNORE_SIGTERM_RANK"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    record = Path(os.environ["PID_DIR"]) / f"rank{rank}.pid"
    partial = record.with_suffix(".part")
    partial.write_text(f"{os.getpid()} {os.getppid()} {child.pid}\n", encoding="utf-8")
    partial.replace(record)
    print(f"rank {rank} waiting forever", flush=True)
else:
    node = int(os.environ["RANK"])
    for local in range(2):
        subprocess.Popen([sys.executable, __file__, str(2 * node + local)], start_new_session=True)
time.sleep(600)
