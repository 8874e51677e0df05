#!/usr/bin/env python3
"""A slow link: a TCP relay that holds every byte for a set delay.

    delayproxy.py CONTROL LISTEN_HOST:PORT=TARGET_HOST:PORT ...

It listens on each LISTEN address and relays each connection to its
TARGET, both ways, in order, each chunk delivered DELAY seconds after it
was read.  It prints "listening" once it is.  The file CONTROL holds
"DELAY [MODE]", read again at each SIGUSR1 (no file: 0, no mode):

  hold               deliver nothing until the mode goes: a partition
                     (both sockets stay open, nothing is closed or reset)
  hold-after-reply   as hold, from just after the first answer that a
                     connection made from now on delivers to its client
  refuse             close each new connection at once (a server down)

SIGUSR2 closes every connection (a FIN to both ends).  An end that
closes is closed on the other side once what it sent has been delivered.

A test runs it as a process of its own (DelayLink below), in a network
namespace when given the argv that enters one: the nemesis puts it in a
host's namespace because this kernel has no netem to delay packets
there; the host's daemons connect to it on 127.0.0.1, and it connects
out from the host's address, so the host's drop rules still cut it off
as they cut the host.
"""

import asyncio
import os
import signal
import subprocess
import sys
import time

DELAY = [0.0]
MODE = [""]
FLOWING = None          # asyncio.Event: set unless held
CONNS = set()           # the writers of every connection, both ends
EPOCH = [0]             # hold-after-reply: connections made since it was set


def read_control(path):
    try:
        with open(path) as f:
            words = f.read().split()
    except OSError:
        words = []
    try:
        DELAY[0] = float(words[0]) if words else 0.0
    except ValueError:
        DELAY[0] = 0.0
    mode = words[1] if len(words) > 1 else ""
    if mode != MODE[0]:
        EPOCH[0] += 1
    MODE[0] = mode
    if mode == "hold":
        FLOWING.clear()
    else:
        FLOWING.set()


def close_all():
    for w in list(CONNS):
        w.close()


async def pump(reader, writer, first_reply=None):
    """@reader to @writer, each chunk DELAY after it was read.  @first_reply:
    a callback after the first chunk delivered (hold-after-reply)."""
    q = asyncio.Queue()

    async def deliver():
        nonlocal first_reply
        while True:
            due, data = await q.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await FLOWING.wait()
            if data is None:
                break
            writer.write(data)
            await writer.drain()
            if first_reply is not None:
                first_reply()
                first_reply = None
        writer.close()

    task = asyncio.ensure_future(deliver())
    try:
        while True:
            data = await reader.read(65536)
            q.put_nowait((time.monotonic() + DELAY[0], data or None))
            if not data:
                break
    except OSError:
        q.put_nowait((time.monotonic(), None))
    try:
        await task
    except OSError:
        pass


async def relay(target, creader, cwriter):
    host, port = target
    epoch, mode = EPOCH[0], MODE[0]
    if mode == "refuse":
        cwriter.close()
        return
    try:
        ureader, uwriter = await asyncio.open_connection(host, port)
    except OSError:
        cwriter.close()
        return
    CONNS.update((cwriter, uwriter))

    def replied():
        if MODE[0] == mode == "hold-after-reply" and EPOCH[0] == epoch:
            FLOWING.clear()

    await asyncio.gather(pump(creader, uwriter), pump(ureader, cwriter, replied),
                         return_exceptions=True)
    CONNS.difference_update((cwriter, uwriter))


def hostport(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)


async def main(argv):
    global FLOWING
    FLOWING = asyncio.Event()
    control = argv[1]
    read_control(control)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, read_control, control)
    loop.add_signal_handler(signal.SIGUSR2, close_all)
    servers = []
    for spec in argv[2:]:
        listen, target = spec.split("=")
        lh, lp = hostport(listen)
        servers.append(await asyncio.start_server(
            lambda r, w, t=hostport(target): relay(t, r, w), lh, lp))
    print("listening", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


class DelayLink:
    """This proxy as a process of its own, stopped by pid.

        link = DelayLink(control_path, [("127.0.0.1", 0, zk.host, zk.port)]).start()
        link.hostports                  # where it listens, one per target
        link.set(1.8, "hold-after-reply"); link.close_all(); link.stop()

    A listen port 0 is a free one picked now.  @wrap: an argv prefix the
    proxy runs under (nsenter into a namespace)."""

    def __init__(self, control, routes, wrap=()):
        import zkserver
        self.control, self.wrap = control, list(wrap)
        self.routes = [(lh, lp or zkserver.free_port(), th, tp) for lh, lp, th, tp in routes]
        self.hostports = ["%s:%d" % (lh, lp) for lh, lp, _, _ in self.routes]
        self.proc = None

    def start(self):
        specs = ["%s:%d=%s:%d" % r for r in self.routes]
        self.proc = subprocess.Popen(self.wrap + [sys.executable, os.path.abspath(__file__),
                                                  self.control] + specs,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     start_new_session=True)
        if self.proc.stdout.readline().strip() != b"listening":
            self.stop()
            raise RuntimeError("the delay proxy did not start")
        return self

    def set(self, delay, mode=""):
        with open(self.control, "w") as f:
            f.write("%.3f %s\n" % (delay, mode))
        os.kill(self.proc.pid, signal.SIGUSR1)

    def close_all(self):
        os.kill(self.proc.pid, signal.SIGUSR2)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    asyncio.run(main(sys.argv))
