#!/usr/bin/env python3
"""pipereader.py -- stream a tracefs instance's trace_pipe text to a file.

usage: pipereader.py INSTANCE_DIR OUTFILE STOPFILE [PERIOD_S]

Reads INSTANCE_DIR/trace_pipe without blocking every PERIOD_S seconds
(default 0.1) until STOPFILE exists, then drains it and exits.  A blocking
reader (`cat trace_pipe`) is woken by every event it consumes, and its own
wake-ups and context switches are traced events that wake it again: it ends up
tracing itself at tens of thousands of events per second.  Polling keeps the
reader's own footprint to a few events per period.
"""

import errno
import os
import sys
import time

inst, outfile, stopfile = sys.argv[1:4]
period = float(sys.argv[4]) if len(sys.argv) > 4 else 0.1
fd = os.open(os.path.join(inst, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
with open(outfile, "wb") as out:

    def drain():
        while True:
            try:
                b = os.read(fd, 1 << 16)
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    return
                raise
            if not b:
                return
            out.write(b)

    while not os.path.exists(stopfile):
        drain()
        time.sleep(period)
    drain()
os.close(fd)
