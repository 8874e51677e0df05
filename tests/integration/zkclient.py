"""A minimal, synchronous ZooKeeper client (standard library only).

Just enough of the ZooKeeper wire protocol (jute encoding) for the tests to
look at the znodes behind a zklockfs mount and to play "another client" in the
same lock queue: create, delete, exists, get_data, set_data, get_children,
get_acl, add_auth, close.
No watches.  A background thread pings so that the session (and its
ephemeral znodes) stays alive while a test is busy elsewhere.
"""

import socket
import struct
import threading
import time

# Operation codes (org.apache.zookeeper.ZooDefs.OpCode)
OP_CREATE = 1
OP_DELETE = 2
OP_EXISTS = 3
OP_GETDATA = 4
OP_SETDATA = 5
OP_GETACL = 6
OP_GETCHILDREN = 8
OP_PING = 11
OP_CLOSE = -11
OP_AUTH = 100

# Create modes
PERSISTENT = 0
EPHEMERAL = 1
PERSISTENT_SEQUENTIAL = 2
EPHEMERAL_SEQUENTIAL = 3

# Error codes (KeeperException.Code)
ZOK = 0
ZBADARGUMENTS = -8
ZNONODE = -101
ZNOAUTH = -102
ZNODEEXISTS = -110
ZNOTEMPTY = -111
ZNOCHILDRENFOREPHEMERALS = -108

_ERRNAMES = {
    ZBADARGUMENTS: "BADARGUMENTS",
    ZNONODE: "NONODE",
    ZNODEEXISTS: "NODEEXISTS",
    ZNOTEMPTY: "NOTEMPTY",
    ZNOCHILDRENFOREPHEMERALS: "NOCHILDRENFOREPHEMERALS",
    -4: "CONNECTIONLOSS",
    -112: "SESSIONEXPIRED",
    -102: "NOAUTH",
}

OPEN_ACL_UNSAFE = [(31, "world", "anyone")]


class ZKError(Exception):
    def __init__(self, code, path=None):
        self.code = code
        self.path = path
        super().__init__("ZooKeeper error %d (%s) on %r"
                         % (code, _ERRNAMES.get(code, "?"), path))


class Stat:
    FIELDS = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion",
              "aversion", "ephemeralOwner", "dataLength", "numChildren",
              "pzxid")
    FMT = ">qqqqiiiqiiq"
    SIZE = struct.calcsize(FMT)

    def __init__(self, raw):
        for k, v in zip(self.FIELDS, struct.unpack(self.FMT, raw)):
            setattr(self, k, v)

    def __repr__(self):
        return "Stat(%s)" % ", ".join("%s=%r" % (k, getattr(self, k))
                                      for k in self.FIELDS)


def _int(v):
    return struct.pack(">i", v)


def _long(v):
    return struct.pack(">q", v)


def _bool(v):
    return b"\x01" if v else b"\x00"


def _buffer(b):
    if b is None:
        return _int(-1)
    return _int(len(b)) + b


def _string(s):
    if isinstance(s, str):
        s = s.encode("utf-8")
    return _buffer(s)


class _Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError("short ZooKeeper reply")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int(self):
        return struct.unpack(">i", self.take(4))[0]

    def long(self):
        return struct.unpack(">q", self.take(8))[0]

    def buffer(self):
        n = self.int()
        if n < 0:
            return None
        return self.take(n)

    def string(self):
        b = self.buffer()
        return None if b is None else b.decode("utf-8", "surrogateescape")

    def stat(self):
        return Stat(self.take(Stat.SIZE))


class ZKClient:
    """Synchronous ZooKeeper client; one request at a time."""

    def __init__(self, host, port, session_timeout_ms=10000, connect_timeout=10):
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._xid = 0
        self._closed = False
        self.sock = socket.create_connection((host, port), connect_timeout)
        self.sock.settimeout(connect_timeout)
        req = (_int(0) + _long(0) + _int(session_timeout_ms) + _long(0)
               + _buffer(b"\x00" * 16) + _bool(False))
        self._send(req)
        r = _Reader(self._recv())
        r.int()  # protocol version
        self.session_timeout_ms = r.int()
        self.session_id = r.long()
        r.buffer()  # password
        if self.session_timeout_ms <= 0:
            self.sock.close()
            raise ZKError(-112, None)
        self._ping_interval = max(self.session_timeout_ms / 3000.0, 0.2)
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._pinger = threading.Thread(target=self._ping_loop, daemon=True)
        self._pinger.start()

    # -- framing -----------------------------------------------------------
    def _send(self, payload):
        self.sock.sendall(_int(len(payload)) + payload)

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("ZooKeeper closed the connection")
            buf += chunk
        return buf

    def _recv(self):
        n = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(n)

    def _call(self, op, body=b"", path=None, xid=None):
        with self._lock:
            if self._closed:
                raise ConnectionError("client closed")
            if xid is None:
                self._xid += 1
                xid = self._xid
            self._send(_int(xid) + _int(op) + body)
            while True:
                r = _Reader(self._recv())
                rxid = r.int()
                r.long()  # zxid
                err = r.int()
                if rxid == -1:  # watch event (we set none); skip
                    continue
                if rxid != xid:
                    continue
                self._last = time.monotonic()
                if err != ZOK:
                    raise ZKError(err, path)
                return r

    def _ping_loop(self):
        while not self._stop.wait(self._ping_interval / 2):
            if time.monotonic() - self._last >= self._ping_interval:
                try:
                    self._call(OP_PING, xid=-2)
                except Exception:
                    return

    # -- operations ----------------------------------------------------------
    def create(self, path, data=b"", mode=PERSISTENT, acl=OPEN_ACL_UNSAFE):
        body = _string(path) + _buffer(data) + _int(len(acl))
        for perms, scheme, ident in acl:
            body += _int(perms) + _string(scheme) + _string(ident)
        body += _int(mode)
        return self._call(OP_CREATE, body, path).string()

    def ensure_path(self, path):
        cur = ""
        for part in [p for p in path.split("/") if p]:
            cur += "/" + part
            try:
                self.create(cur)
            except ZKError as e:
                if e.code != ZNODEEXISTS:
                    raise

    def delete(self, path, version=-1):
        self._call(OP_DELETE, _string(path) + _int(version), path)

    def exists(self, path):
        """Stat of path, or None."""
        try:
            return self._call(OP_EXISTS, _string(path) + _bool(False),
                              path).stat()
        except ZKError as e:
            if e.code == ZNONODE:
                return None
            raise

    def get_data(self, path):
        r = self._call(OP_GETDATA, _string(path) + _bool(False), path)
        data = r.buffer()
        return (data if data is not None else b""), r.stat()

    def set_data(self, path, data, version=-1):
        return self._call(OP_SETDATA, _string(path) + _buffer(data)
                          + _int(version), path).stat()

    def get_acl(self, path):
        """[(perms, scheme, id), ...] of path."""
        r = self._call(OP_GETACL, _string(path), path)
        return [(r.int(), r.string(), r.string()) for _ in range(r.int())]

    def add_auth(self, scheme, credential):
        """Authenticate this session (digest: "user:password")."""
        self._call(OP_AUTH, _int(0) + _string(scheme) + _string(credential),
                   None, xid=-4)

    def get_children(self, path):
        r = self._call(OP_GETCHILDREN, _string(path) + _bool(False), path)
        n = r.int()
        return [r.string() for _ in range(max(n, 0))]

    def close(self):
        self._stop.set()
        if self._closed:
            return
        try:
            self._call(OP_CLOSE)
        except Exception:
            pass
        with self._lock:
            self._closed = True
            try:
                self.sock.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def four_letter_word(host, port, word, timeout=5.0):
    """Send a ZooKeeper four-letter word and return the whole answer."""
    with socket.create_connection((host, port), timeout) as s:
        s.settimeout(timeout)
        s.sendall(word.encode("ascii"))
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            chunks.append(b)
    return b"".join(chunks).decode("utf-8", "replace")
