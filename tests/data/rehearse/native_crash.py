"""Dies as a native crash does: the reason first, then a backtrace longer than any tail."""

import os
import sys

print("terminate called after throwing an instance of 'gloo::IoException'", flush=True)
print("  what():  [gloo/transport/tcp/pair.cc:534] Connection closed by peer", flush=True)
for frame in range(30):
    print(f"[vm:1] [{frame}] libtorch_cpu.so(+0x{frame:x})", flush=True)
sys.stdout.flush()
os.abort()
