"""A TCP proxy on loopback that injects network faults (standard library only).

    p = FaultProxy("127.0.0.1", zk.port).start()
    mount(connect=p.hostport)   # this "host" reaches ZooKeeper through p
    p.blackhole()               # partition: nothing flows, nothing closes
    p.heal()                    # resume: what was held back flows on
    p.close_all()               # drop every current connection (FIN)
    p.ops()                     # the ZooKeeper opcodes each connection sent
    p.stop()                    # at teardown

A blackhole is a partition, not a reset: the proxy stops reading, in the
blackholed direction(s), from every connection, current and new, and keeps
every socket open, so neither end sees an error; it only hears nothing.
Bytes already read when the blackhole starts are held and delivered after the
heal, as TCP would retransmit them. blackhole("up") holds only what the
client sends (requests), blackhole("down") only what the server sends
(replies): with "down", requests still reach ZooKeeper and are executed, but
their replies never arrive -- an operation whose outcome is unknown.

New connections are accepted during a blackhole (and connected upstream), but
nothing flows on them until the heal. One thread accepts, two threads pump
each connection; all of them stop at stop().
"""

import select
import socket
import threading
import time

UP = "up"          # client -> server
DOWN = "down"      # server -> client


class _Pair:
    def __init__(self, proxy, client, upstream, peer):
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.peer = peer                   # the client's (host, port)
        self.closed = threading.Event()
        self.threads = []
        self.up = bytearray()              # requests not yet parsed
        self.ops = []                      # opcodes of the requests sent
        self.handshake = True              # the first packet is ConnectRequest

    def close(self):
        if self.closed.is_set():
            return
        self.closed.set()
        for s in (self.client, self.upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def pump(self, src, dst, direction):
        gate = self.proxy._gates[direction]
        try:
            while not self.closed.is_set():
                if not gate.is_set():
                    gate.wait(0.05)        # blackholed: leave it unread
                    continue
                try:
                    r, _, _ = select.select([src], [], [], 0.05)
                except (OSError, ValueError):
                    break
                if not r:
                    continue
                try:
                    data = src.recv(65536)
                except OSError:
                    break
                if not data:
                    break
                # a blackhole that began while we read: hold the bytes
                while not gate.is_set() and not self.closed.is_set():
                    gate.wait(0.05)
                if self.closed.is_set():
                    break
                try:
                    dst.sendall(data)
                except OSError:
                    break
                with self.proxy._lock:
                    self.proxy.bytes[direction] += len(data)
                    if direction == UP:
                        self._parse(data)
        finally:
            self.close()
            self.proxy._forget(self)


    def _parse(self, data):
        """Note the opcode of each whole request (length, xid, type)."""
        self.up += data
        while len(self.up) >= 4:
            n = int.from_bytes(self.up[:4], "big")
            if len(self.up) < 4 + n:
                break
            if self.handshake:
                self.handshake = False
            elif n >= 8:
                self.ops.append(int.from_bytes(self.up[8:12], "big", signed=True))
            del self.up[:4 + n]


class FaultProxy:
    def __init__(self, target_host, target_port, listen_host="127.0.0.1"):
        self.target = (target_host, int(target_port))
        self.listen_host = listen_host
        self.port = None
        self._sock = None
        self._stop = threading.Event()
        self._lock = threading.Condition()
        self._pairs = []
        self._threads = []
        self._gates = {UP: threading.Event(), DOWN: threading.Event()}
        for g in self._gates.values():
            g.set()
        self.accepted = 0                  # connections accepted so far
        self.bytes = {UP: 0, DOWN: 0}
        self.log = []                      # (monotonic time, event)

    # -- lifecycle ---------------------------------------------------------
    @property
    def hostport(self):
        return "%s:%d" % (self.listen_host, self.port)

    def start(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.listen_host, 0))
        s.listen(64)
        self._sock = s
        self.port = s.getsockname()[1]
        t = threading.Thread(target=self._accept_loop, daemon=True,
                             name="faultproxy-accept-%d" % self.port)
        t.start()
        self._threads.append(t)
        return self

    def stop(self, timeout=5.0):
        self._stop.set()
        for g in self._gates.values():
            g.set()
        try:
            self._sock.close()
        except (OSError, AttributeError):
            pass
        self.close_all()
        deadline = time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- faults ------------------------------------------------------------
    def blackhole(self, direction="both"):
        """Stop forwarding (both directions, or UP / DOWN only); keep every
        socket open."""
        for d in ((UP, DOWN) if direction == "both" else (direction,)):
            self._gates[d].clear()
        self._note("blackhole " + direction)

    def heal(self):
        for g in self._gates.values():
            g.set()
        self._note("heal")

    def blackholed(self):
        return [d for d, g in self._gates.items() if not g.is_set()]

    def close_all(self):
        """Close every current connection (both ends see EOF)."""
        with self._lock:
            pairs = list(self._pairs)
        for p in pairs:
            p.close()
        if pairs:
            self._note("closed %d connection(s)" % len(pairs))
        return len(pairs)

    # -- observation -------------------------------------------------------
    def connections(self):
        """Client (host, port) of every open connection."""
        with self._lock:
            return [p.peer for p in self._pairs if not p.closed.is_set()]

    def ops(self):
        """The ZooKeeper opcodes (ZOO_SYNC_OP 9, ZOO_CREATE_OP 1, ...) each
        open connection sent so far, in order: a list per connection."""
        with self._lock:
            return [list(p.ops) for p in self._pairs if not p.closed.is_set()]

    def wait_accepted(self, n, timeout):
        """Wait until `n` connections have been accepted in all; return the
        count, or raise AssertionError."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.accepted < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        "proxy %s: %d connection(s) accepted, waited for %d"
                        % (self.hostport, self.accepted, n))
                self._lock.wait(left)
            return self.accepted

    # -- internals ---------------------------------------------------------
    def _note(self, what):
        with self._lock:
            self.log.append((time.monotonic(), what))

    def _forget(self, pair):
        with self._lock:
            if pair in self._pairs:
                self._pairs.remove(pair)
            self._lock.notify_all()

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                r, _, _ = select.select([self._sock], [], [], 0.1)
            except (OSError, ValueError):
                break
            if not r:
                continue
            try:
                client, peer = self._sock.accept()
            except OSError:
                continue
            try:
                upstream = socket.create_connection(self.target, 5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                self._note("upstream connect failed")
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = _Pair(self, client, upstream, peer)
            a = threading.Thread(target=pair.pump, args=(client, upstream, UP),
                                 daemon=True)
            b = threading.Thread(target=pair.pump,
                                 args=(upstream, client, DOWN), daemon=True)
            with self._lock:
                if self._stop.is_set():
                    pair.close()
                    break
                self._pairs.append(pair)
                self._threads += [a, b]
                self.accepted += 1
                self.log.append((time.monotonic(), "accepted %s:%d" % peer))
                self._lock.notify_all()
            a.start()
            b.start()
