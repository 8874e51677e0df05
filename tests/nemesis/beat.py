#!/usr/bin/env python3
"""A critical section's command: beats every 5 ms for SECONDS, appended to
LOG (see checker.py).   beat.py LOG CLIENT SEC LOCK MODE CLS HOST SECONDS"""

import json
import sys
import time

log, client, sec, lock, mode, cls, host, seconds = sys.argv[1:9]
until = time.monotonic() + float(seconds)
with open(log, "a") as f:
    while True:
        t = time.monotonic()
        f.write(json.dumps(dict(ev="beat", t=t, client=client, sec=int(sec), lock=lock,
                                mode=mode, cls=cls, host=host)) + "\n")
        f.flush()
        if t >= until:
            break
        time.sleep(0.005)
