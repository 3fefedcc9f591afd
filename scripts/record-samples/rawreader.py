#!/usr/bin/env python3
"""rawreader.py -- a deliberately slow streaming reader of a tracefs instance.

usage: rawreader.py INSTANCE_DIR OUTDIR STOPFILE [PERIOD_S]

Every PERIOD_S seconds (default 0.05) reads, without blocking, whatever is in
each CPU's per_cpu/cpuN/trace_pipe_raw (whole ring-buffer pages, the same
bytes `trace-cmd extract` reads) and appends it to OUTDIR/cpuN.raw.  When
STOPFILE exists it drains the buffers one last time and exits.  With a small
ring buffer the writer laps this reader between two polls, so pages carry the
kernel's "missed events" flag and `trace-cmd report` prints
"CPU:N [n EVENTS DROPPED]" lines in the middle of the trace (this is how a
real recorder that falls behind loses events).
"""

import errno
import glob
import os
import sys
import time

inst, outdir, stopfile = sys.argv[1:4]
period = float(sys.argv[4]) if len(sys.argv) > 4 else 0.05
cpus = sorted(int(p.rsplit("cpu", 1)[1]) for p in glob.glob(os.path.join(inst, "per_cpu", "cpu*")))
fds = {
    c: os.open(
        os.path.join(inst, "per_cpu", f"cpu{c}", "trace_pipe_raw"), os.O_RDONLY | os.O_NONBLOCK
    )
    for c in cpus
}
outs = {c: open(os.path.join(outdir, f"cpu{c}.raw"), "wb") for c in cpus}


def drain():
    for c in cpus:
        while True:
            try:
                b = os.read(fds[c], 4096)
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    break
                raise
            if not b:
                break
            outs[c].write(b)


while not os.path.exists(stopfile):
    drain()
    time.sleep(period)
drain()
for c in cpus:
    outs[c].close()
    os.close(fds[c])
