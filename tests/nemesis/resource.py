#!/usr/bin/env python3
"""The fencing resource: takes writes (JSON datagrams: client, sec, lock,
token) on the unix socket SOCKET, accepts one only if its token is not
older than the newest it accepted for that lock, and logs each to LOG
(checker.py's "write" events).   resource.py SOCKET LOG"""

import json
import socket
import sys
import time

path, logpath = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
newest = {}
with open(logpath, "a") as log:
    while True:
        data = s.recv(4096)
        try:
            w = json.loads(data)
        except ValueError:
            continue
        tok = tuple(w["token"])
        ok = tok >= newest.get(w["lock"], ())
        if ok:
            newest[w["lock"]] = tok
        log.write(json.dumps(dict(ev="write", t=time.monotonic(), client=w["client"],
                                  sec=w["sec"], lock=w["lock"], token=list(tok), ok=ok))
                  + "\n")
        log.flush()
