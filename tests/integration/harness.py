"""Test harness for the zklockfs integration tests.

Everything that starts a process here registers it, and everything is
stopped by pid (never by name):

  * ZooKeeperServer - a real standalone ZooKeeper on a free local port.
  * Mount           - one zklockfs daemon ("one host") mounted on a temp dir.
  * Locker          - a child process that open()s a path (usually taking a
                      lock) and then obeys commands on its stdin.

Only the Python standard library is used.
"""

import errno
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import zkclient

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3"
JAVA = os.environ.get("JAVA", "/usr/bin/java")
FUSERMOUNT = shutil.which("fusermount3") or "/usr/bin/fusermount3"

# How long the tests wait for something that should happen, and how long they
# watch for something that should NOT happen.
# A sanitized daemon (make check-asan sets ZKLOCKFS_SANITIZED=1) is slower.
SLOW = 2.0 if os.environ.get("ZKLOCKFS_SANITIZED") else 1.0
GRANT_TIMEOUT = float(os.environ.get("ZKLOCKFS_TEST_GRANT_TIMEOUT", "10")) * SLOW
NOT_GRANTED_WAIT = float(os.environ.get("ZKLOCKFS_TEST_NEGATIVE_WAIT", "1.0"))

WRITE = os.O_CREAT | os.O_WRONLY          # exclusive lock
RDWR = os.O_CREAT | os.O_RDWR             # exclusive lock
SHARED = os.O_CREAT | os.O_RDONLY         # shared lock

XATTR_SEQ = "user.zklockfs.seq"
XATTR_KIND = "user.zklockfs.kind"
XATTR_STATE = "user.zklockfs.state"
XATTR_HOLDERS = "user.zklockfs.holders"
XATTR_TOKEN = "user.zklockfs.token"

# An entry: NAME + marker + signed 32-bit sequence number printed as %010d.
ENTRY_RE = re.compile(
    r"^(?P<name>.*?)(?P<marker>-read-lock-|-lock-|__rlock__|__lock__|__READ__)"
    r"(?P<seq>-?\d{10})$", re.S)


def daemon_binary():
    return os.environ.get("ZKLOCKFS") or os.path.join(REPO, "build", "zklockfs")


# errno.errorcode picks an alias for some values (35 -> EDEADLOCK)
_PREFERRED = {errno.EDEADLK: "EDEADLK", errno.EAGAIN: "EAGAIN",
              errno.EOPNOTSUPP: "EOPNOTSUPP"}


def errname(e):
    return _PREFERRED.get(e) or errno.errorcode.get(e, str(e))


def parse_entry(name):
    """(NAME, marker, seq) of an entry name, or None."""
    m = ENTRY_RE.match(name)
    if not m:
        return None
    return m.group("name"), m.group("marker"), int(m.group("seq"))


def is_entry(name):
    return parse_entry(name) is not None


def seq_of(name):
    p = parse_entry(name)
    assert p is not None, "not an entry name: %r" % name
    return p[2]


def entries(dirpath):
    """Entry names (not subdirectories) in readdir order."""
    return [n for n in os.listdir(dirpath) if is_entry(n)]


def wait_for(cond, timeout, what="condition", interval=0.02):
    """Poll cond() until it returns a true value; return that value."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s"
                                 % (timeout, what))
        time.sleep(interval)


def wait_gone(dirpath, name, timeout=GRANT_TIMEOUT):
    wait_for(lambda: name not in os.listdir(dirpath), timeout,
             "entry %s to disappear from %s (now: %r)"
             % (name, dirpath, os.listdir(dirpath)))


def wait_no_entries(dirpath, timeout=GRANT_TIMEOUT):
    def cond():
        return not entries(dirpath)
    try:
        wait_for(cond, timeout, "no entries in %s" % dirpath)
    except AssertionError:
        raise AssertionError("entries left behind in %s: %r"
                             % (dirpath, entries(dirpath)))


def read_file(path):
    """Read a whole file (an entry: open without O_CREAT takes no lock)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_kv(data):
    out = {}
    for line in data.decode("utf-8", "replace").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def getxattr_str(path_or_fd, name):
    return os.getxattr(path_or_fd, name).decode("utf-8", "replace").strip("\x00").strip()


def sanitize(s, maxlen=80):
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_.") or "x"
    if len(s) > maxlen:
        import zlib
        s = s[:maxlen - 9] + "_%08x" % zlib.crc32(s.encode())
    return s


# ---------------------------------------------------------------------------
# Child processes: registered so that teardown can kill them by pid.
# ---------------------------------------------------------------------------

_CHILDREN = []          # subprocess.Popen objects started by tests
_CHILDREN_LOCK = threading.Lock()


# How `make check` was started must not matter. Started with `&` from a
# script, SIGINT and SIGQUIT are ignored; by nohup, SIGHUP; a launcher may
# block signals. An ignored or blocked signal is inherited by every child,
# so the tests that send a child a signal (or check its signal state) give
# their children the defaults; and the per-test timeout (SIGALRM, in this
# process) must not stay blocked.
_RESET_SIGNALS = sorted(set(signal.valid_signals()) -
                        {signal.SIGKILL, signal.SIGSTOP})
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGALRM])


def default_signals():
    """A preexec_fn: every signal's default disposition, an empty mask."""
    for sig in _RESET_SIGNALS:
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def signals_preexec(setup=None):
    """The preexec_fn for a child: default_signals() if this thread would
    pass on an ignored or a blocked signal (a handler is reset by exec;
    Popen resets SIGPIPE and SIGXFSZ itself), then `setup`. None if there
    is nothing to do, so that Popen keeps its fast path (vfork)."""
    if not signal.pthread_sigmask(signal.SIG_BLOCK, []) and not any(
            signal.getsignal(sig) == signal.SIG_IGN for sig in _RESET_SIGNALS
            if sig not in (signal.SIGPIPE, signal.SIGXFSZ)):
        return setup
    if setup is None:
        return default_signals
    return lambda: (default_signals(), setup())


def spawn(argv, **kw):
    """Popen in a new session (so its own descendants can be killed through
    its process group, whose id is its pid) and register it. The child
    starts with the default signal dispositions and mask (then its own
    preexec_fn, if given), whatever this process inherited."""
    kw.setdefault("start_new_session", True)
    kw.setdefault("cwd", "/")
    kw["preexec_fn"] = signals_preexec(kw.get("preexec_fn"))
    p = subprocess.Popen(argv, **kw)
    with _CHILDREN_LOCK:
        _CHILDREN.append(p)
    return p


def _signal_group(p, sig):
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    if p.returncode is None:
        try:
            os.kill(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_children(wait=3.0):
    """SIGKILL every registered child (and its process group), reap what can
    be reaped within `wait` seconds. Returns the ones still not reaped (a
    process stuck in a FUSE request that its daemon never answers)."""
    with _CHILDREN_LOCK:
        procs = list(_CHILDREN)
    for p in procs:
        if p.poll() is None:
            _signal_group(p, signal.SIGKILL)
        else:
            # leader gone; its group (e.g. a forked holder) may still live
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + wait
    left = []
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            left.append(p)
    with _CHILDREN_LOCK:
        _CHILDREN[:] = left
    for p in procs:
        for f in (p.stdin, p.stdout, p.stderr):
            if f is not None and p not in left:
                try:
                    f.close()
                except OSError:
                    pass
    return left


# ---------------------------------------------------------------------------
# Locker: a child process that takes a lock with open() and obeys commands.
# ---------------------------------------------------------------------------

LOCKER_SCRIPT = r'''
import ctypes, errno, json, os, select, signal, sys
cfg = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)      # PR_SET_PDEATHSIG
def out(line):
    os.write(1, (line + "\n").encode("utf-8", "surrogateescape"))
_PREFERRED = {errno.EDEADLK: "EDEADLK", errno.EAGAIN: "EAGAIN",
              errno.EOPNOTSUPP: "EOPNOTSUPP"}
def ename(e):
    return _PREFERRED.get(e) or errno.errorcode.get(e, str(e))
def handler(signum, frame):
    pass                     # just interrupt; libc open() then gives EINTR
for name in cfg.get("handle", []):
    signal.signal(getattr(signal, name), handler)
def raw_open(path, flags, mode):
    # libc open() through ctypes: a signal makes it return -1/EINTR, where
    # os.open() would retry it (PEP 475).
    fd = libc.open(ctypes.c_char_p(os.fsencode(path)), ctypes.c_int(flags),
                   ctypes.c_int(mode))
    return fd, (ctypes.get_errno() if fd < 0 else 0)
out("started %d" % os.getpid())
if cfg.get("alarm"):
    signal.setitimer(signal.ITIMER_REAL, cfg["alarm"])
fd, e = raw_open(cfg["path"], cfg["flags"], cfg.get("mode", 0o644))
if cfg.get("alarm"):
    signal.setitimer(signal.ITIMER_REAL, 0)
if fd < 0:
    out("error %s" % ename(e))
    sys.exit(0)
out("granted %d" % fd)
fork_w = None
fork_pid = None
while True:
    raw = sys.stdin.buffer.readline()
    if not raw:
        break
    parts = raw.decode("utf-8", "surrogateescape").split()
    if not parts:
        continue
    c, args = parts[0], parts[1:]
    try:
        if c == "release":
            break
        elif c == "exit":                  # die without closing explicitly
            os._exit(int(args[0]) if args else 0)
        elif c == "dup":
            out("ok %d" % os.dup(fd))
        elif c == "close":
            os.close(int(args[0]) if args else fd)
            out("ok")
        elif c == "fork":                  # a child process that keeps fd
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(w)
                nul = os.open("/dev/null", os.O_RDWR)
                os.dup2(nul, 0)
                os.dup2(nul, 1)
                while os.read(r, 1):
                    pass
                os._exit(0)                # closes its copy of fd
            os.close(r)
            fork_w, fork_pid = w, pid
            out("ok %d" % pid)
        elif c == "unfork":
            os.close(fork_w)
            os.waitpid(fork_pid, 0)
            out("ok")
        elif c == "write":
            data = bytes.fromhex(args[0]) if args else b""
            out("ok %d" % os.write(fd, data))
        elif c == "writelen":             # write N bytes of 'x'
            out("ok %d" % os.write(fd, b"x" * int(args[0])))
        elif c == "seek":
            out("ok %d" % os.lseek(fd, int(args[0]), os.SEEK_SET))
        elif c == "read":
            out("ok " + os.pread(fd, 1 << 21, 0).hex())
        elif c == "fsync":
            os.fsync(fd)
            out("ok")
        elif c == "getxattr":
            out("ok " + os.getxattr(fd, args[0]).hex())
        elif c == "poll":
            p = select.poll()
            p.register(fd, select.POLLIN | select.POLLOUT | select.POLLPRI)
            ev = p.poll(int(args[0]) if args else 0)
            out("ok %d" % (ev[0][1] if ev else 0))
        elif c == "sendfd":                # pass fd over a unix socket
            import socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(args[0])
            socket.send_fds(s, [b"F"], [fd])
            s.close()
            out("ok")
        elif c == "open":                  # a second open by this same thread
            path = bytes.fromhex(args[1]).decode("utf-8", "surrogateescape")
            nfd, e = raw_open(path, int(args[0]), 0o644)
            out(("ok %d" % nfd) if nfd >= 0 else ("error %s" % ename(e)))
        else:
            out("error EBADCMD")
    except OSError as ex:
        out("error %s" % ename(ex.errno))
try:
    os.close(fd)
except OSError:
    pass
out("released")
'''


class LockerError(AssertionError):
    pass


class Locker:
    """A child process that open()s `path` with `flags` and reports:
         started <pid>   when it runs,
         granted <fd>    when open() returned,
         error <ENAME>   when open() failed (then it exits).
    While holding it executes commands read from stdin, one a line (see
    LOCKER_SCRIPT); `release` or EOF closes the descriptor and it exits.

    handle: signal names for which a do-nothing handler is installed (so
            that the signal interrupts open() with EINTR instead of killing).
    alarm:  seconds after which SIGALRM is raised during open() (install a
            handler with handle=["SIGALRM"]).
    """

    def __init__(self, path, flags=WRITE, *, handle=(), alarm=None,
                 mode=0o644, start_timeout=20):
        self.path = str(path)
        self.flags = flags
        cfg = {"path": self.path, "flags": flags, "handle": list(handle),
               "alarm": alarm, "mode": mode}
        self._err = tempfile.TemporaryFile()
        self.proc = spawn([PY, "-c", LOCKER_SCRIPT, json.dumps(cfg)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=self._err, bufsize=0)
        self.pid = self.proc.pid
        self._buf = b""
        self._eof = False
        self.state = None          # None (waiting), "granted", "error X"
        self.entry = None          # entry name, when a test found it
        self.history = []
        line = self._readline(start_timeout)
        if line is None or not line.startswith("started"):
            raise LockerError("locker for %s did not start: %r\n%s"
                              % (self.path, line, self.stderr()))

    def __repr__(self):
        return "<Locker pid=%d %s state=%s entry=%s>" % (
            self.pid, self.path, self.state, self.entry)

    # -- pipe plumbing -------------------------------------------------------
    def stderr(self):
        try:
            self._err.seek(0)
            return self._err.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def _readline(self, timeout):
        """Next line from the child, None on EOF; raises TimeoutError.
        The pipe is always looked at, at least once: with timeout 0 what
        the child has already said is read, only then is it a timeout."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            if self._eof:
                return None
            left = max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                if time.monotonic() >= deadline:
                    raise TimeoutError()
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                self._eof = True
                if not self._buf:
                    return None
                self._buf += b"\n"
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        line = line.decode("utf-8", "replace").strip()
        self.history.append(line)
        return line

    def _send(self, line):
        self.proc.stdin.write((line + "\n").encode("utf-8", "surrogateescape"))
        self.proc.stdin.flush()

    # -- outcome of the open() -------------------------------------------------
    def poll_status(self, timeout=0.0):
        """granted / error X / None (still waiting after timeout)."""
        if self.state is None:
            try:
                line = self._readline(timeout)
            except TimeoutError:
                return None
            if line is None:
                rc = self.proc.poll()
                raise LockerError("locker %d (%s) exited (rc=%r) before "
                                  "open() returned\n%s"
                                  % (self.pid, self.path, rc, self.stderr()))
            if line.startswith("granted"):
                self.state = "granted"
            elif line.startswith("error"):
                self.state = line
            else:
                raise LockerError("unexpected line from locker: %r" % line)
        return self.state

    def is_granted_within(self, timeout):
        """True if granted within timeout; False if still waiting (the child
        keeps waiting); raises if open() failed."""
        s = self.poll_status(timeout)
        if s is None:
            return False
        if s == "granted":
            return True
        raise LockerError("open(%s) failed: %s" % (self.path, s))

    def wait_granted(self, timeout=GRANT_TIMEOUT):
        if not self.is_granted_within(timeout):
            raise LockerError("open(%s) by pid %d not granted within %.1fs"
                              % (self.path, self.pid, timeout))
        return self

    def wait_error(self, timeout=GRANT_TIMEOUT):
        """errno name of a failed open(); raises if granted or still blocked."""
        s = self.poll_status(timeout)
        if s is None:
            raise LockerError("open(%s) still blocked after %.1fs (expected "
                              "an error)" % (self.path, timeout))
        if s == "granted":
            raise LockerError("open(%s) unexpectedly granted" % self.path)
        return s.split(None, 1)[1]

    def assert_waiting(self, duration=NOT_GRANTED_WAIT):
        assert not self.is_granted_within(duration), \
            "open(%s) by pid %d was granted but should wait" % (self.path,
                                                                  self.pid)

    def wait_entry(self, dirpath, before, timeout=GRANT_TIMEOUT):
        """Find this locker's entry as the one new entry in dirpath since the
        listing `before` (set of names). Sets and returns self.entry.
        A listing cannot be waited on, so it is taken again every 20 ms;
        between two, the child's pipe is waited on, so that a failed open()
        (or the child's death) is reported as soon as the child says so."""
        base = os.path.basename(self.path)
        deadline = time.monotonic() + timeout
        while True:
            new = [n for n in entries(dirpath) if n not in before]
            mine = [n for n in new if parse_entry(n)[0] == base]
            if len(mine) == 1:
                self.entry = mine[0]
                return self.entry
            if len(mine) > 1:
                raise LockerError("several new entries for %s: %r"
                                  % (base, mine))
            left = deadline - time.monotonic()
            if left <= 0:
                raise LockerError(
                    "no entry for %s appeared in %s within %.1fs (listing: %r;"
                    " the child said %r)" % (base, dirpath, timeout,
                                             os.listdir(dirpath), self.history))
            s = self.poll_status(min(0.02, left))
            if s is not None and s != "granted":
                raise LockerError("open(%s) failed: %s (no entry seen in %s)"
                                  % (self.path, s, dirpath))
            if s == "granted":
                time.sleep(min(0.02, max(0.0, left)))

    # -- commands while holding ------------------------------------------------
    def cmd(self, line, timeout=GRANT_TIMEOUT):
        """Send a command; return its answer line ("ok ..." / "error E")."""
        if self.state != "granted":
            self.wait_granted(timeout)
        self._send(line)
        try:
            ans = self._readline(timeout)
        except TimeoutError:
            raise LockerError("command %r to locker %d: no answer in %.1fs"
                              % (line, self.pid, timeout))
        if ans is None:
            raise LockerError("locker %d died on command %r\n%s"
                              % (self.pid, line, self.stderr()))
        return ans

    def ok(self, line, timeout=GRANT_TIMEOUT):
        ans = self.cmd(line, timeout)
        if not ans.startswith("ok"):
            raise LockerError("command %r failed: %s" % (line, ans))
        return ans[3:]

    def xattr(self, name, timeout=GRANT_TIMEOUT):
        """fgetxattr on the held descriptor, as str."""
        return bytes.fromhex(self.ok("getxattr " + name, timeout)) \
            .decode("utf-8", "replace").strip("\x00").strip()

    def release(self, timeout=GRANT_TIMEOUT):
        """Close the descriptor and let the child exit."""
        if self.state == "granted" and self.proc.poll() is None:
            self._send("release")
            try:
                while True:
                    line = self._readline(timeout)
                    if line is None or line == "released":
                        break
            except TimeoutError:
                raise LockerError("locker %d did not release within %.1fs"
                                  % (self.pid, timeout))
        self.close_stdin()
        if self.wait_exit(timeout) is None:
            raise LockerError("locker %d did not exit within %.1fs"
                              % (self.pid, timeout))

    def close_stdin(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def kill(self, sig=signal.SIGKILL):
        if self.proc.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def wait_exit(self, timeout=GRANT_TIMEOUT):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def alive(self):
        return self.proc.poll() is None


class Lines:
    """Line reader with deadlines over a child's stdout pipe."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.buf = b""
        self.eof = False

    def readline(self, timeout):
        """Next line (str), None on EOF, or raise TimeoutError."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            if self.eof:
                if self.buf:
                    line, self.buf = self.buf, b""
                    return line.decode("utf-8", "replace")
                return None
            # look at the pipe at least once, even with timeout 0
            left = max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                chunk = os.read(self.fd, 4096)
                if chunk:
                    self.buf += chunk
                else:
                    self.eof = True
            elif time.monotonic() >= deadline:
                raise TimeoutError()
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def has_line_within(self, timeout):
        try:
            return self.readline(timeout)
        except TimeoutError:
            return False


def start_waiter(dirpath, name, flags=WRITE, **kw):
    """Start a Locker on dirpath/name and wait until its entry shows up
    (granted or not). The entry name is in .entry."""
    before = set(os.listdir(dirpath))
    lk = Locker(os.path.join(dirpath, name), flags, **kw)
    lk.wait_entry(dirpath, before)
    return lk


def take(dirpath, name, flags=WRITE, timeout=GRANT_TIMEOUT, **kw):
    """Start a Locker, wait until it is granted, find its entry."""
    lk = start_waiter(dirpath, name, flags, **kw)
    lk.wait_granted(timeout)
    return lk


# ---------------------------------------------------------------------------
# ZooKeeper server
# ---------------------------------------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def zoo_cfg(datadir, port, sync_limit, extra=""):
    """The zoo.cfg of a test server on 127.0.0.1:`port` (a standalone one or
    an ensemble member, which adds its `extra` lines)."""
    return ("tickTime=500\n"
            "initLimit=10\n"
            "syncLimit=%d\n"
            "dataDir=%s\n"
            "clientPort=%d\n"
            "clientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr,mntr,cons,wchc,wchs,dump\n"
            "maxClientCnxns=0\n"
            "minSessionTimeout=1000\n"
            "maxSessionTimeout=60000\n"
            "%s" % (sync_limit, datadir, port, extra))


def tcp_rows(proc="/proc"):
    """The fields of every socket line of PROC/net/tcp and tcp6 (local
    address, remote address and state at 1, 2 and 3, inode at 9)."""
    for f in (proc + "/net/tcp", proc + "/net/tcp6"):
        try:
            with open(f) as fh:
                lines = fh.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) >= 10:
                yield parts


def socket_inodes(pid):
    """The inodes of the sockets process `pid` has open (empty if gone)."""
    inodes = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return inodes
    for fd in fds:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return inodes


def tcp_peers(pid, remote_port):
    """(local port, state, inode) of the TCP sockets process `pid` has open
    to 127.0.0.1:remote_port."""
    inodes = socket_inodes(pid)
    out = set()
    for parts in tcp_rows("/proc/%d" % pid):
        if parts[9] not in inodes:
            continue
        lport = int(parts[1].rsplit(":", 1)[1], 16)
        rport = int(parts[2].rsplit(":", 1)[1], 16)
        if rport == remote_port:
            out.add((lport, parts[3], parts[9]))
    return out


def pid_listens_on(pid, port):
    """True if process `pid` owns the listening socket on `port`."""
    listening = {p[9] for p in tcp_rows()
                 if p[3] == "0A" and int(p[1].rsplit(":", 1)[1], 16) == port}
    return bool(listening and listening & socket_inodes(pid))


def zookeeper_classpath():
    """conf_example (log4j.properties) + zookeeper.jar, whose manifest
    Class-Path names its dependencies (jute, netty, slf4j-api, metrics,
    snappy, commons-cli, jackson, jetty, ...), + an SLF4J binding so that
    the server actually logs (without one slf4j-api falls back to NOP)."""
    if os.environ.get("ZK_CLASSPATH"):
        return os.environ["ZK_CLASSPATH"]
    cp = ["/etc/zookeeper/conf_example", "/usr/share/java/zookeeper.jar"]
    for jar in ("/usr/share/java/slf4j-log4j12.jar",
                "/usr/share/java/log4j-1.2.jar"):
        if os.path.exists(jar):
            cp.append(jar)
    return ":".join(cp)


class ZooKeeperServer:
    def __init__(self, workdir, extra=""):
        self.workdir = workdir
        self.extra = extra          # zoo.cfg lines that override ours
        self.host = "127.0.0.1"
        self.port = None
        self.proc = None
        self.log = os.path.join(workdir, "zookeeper.log")

    @property
    def hostport(self):
        return "%s:%d" % (self.host, self.port)

    @property
    def pid(self):
        return self.proc.pid

    def four(self, word, timeout=5.0):
        return zkclient.four_letter_word(self.host, self.port, word, timeout)

    def client(self, session_timeout_ms=10000):
        return zkclient.ZKClient(self.host, self.port, session_timeout_ms)

    def _write_cfg(self, port):
        datadir = os.path.join(self.workdir, "data")
        os.makedirs(datadir, exist_ok=True)
        cfg = os.path.join(self.workdir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(zoo_cfg(datadir, port, sync_limit=5, extra=self.extra))
        return cfg

    def _serves_sessions(self):
        # "imok" only means the listener is up: sessions are refused
        # ("ZooKeeperServer not running") until the database is loaded.
        try:
            c = self.client(5000)
        except (OSError, ConnectionError, zkclient.ZKError):
            return False
        c.close()
        return True

    def start(self, attempts=3, timeout=60.0, port=None):
        """Start the server on a free port (or on `port`, e.g. to restart it
        where its clients expect it); wait until it serves sessions."""
        errors = []
        fixed = port
        for _ in range(attempts):
            port = fixed or free_port()
            cfg = self._write_cfg(port)
            logf = open(self.log, "ab")
            argv = [JAVA, "-Xms32m", "-Xmx512m",
                    "-Dzookeeper.root.logger=INFO,CONSOLE",
                    "-Dzookeeper.console.threshold=INFO",
                    "-Dzookeeper.log.dir=" + self.workdir,
                    "-cp", zookeeper_classpath(),
                    "org.apache.zookeeper.server.ZooKeeperServerMain", cfg]
            self.proc = subprocess.Popen(argv, cwd=self.workdir,
                                         stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)
            logf.close()
            self.port = port
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    ok = self.four("ruok", 2.0).strip() == "imok"
                except OSError:
                    ok = False
                if ok and self.proc.poll() is None \
                        and pid_listens_on(self.proc.pid, port) \
                        and self._serves_sessions():
                    return self
                time.sleep(0.2)
            errors.append("port %d: rc=%r" % (port, self.proc.poll()))
            self.stop()
            if fixed:
                time.sleep(1.0)            # the same port: give it a moment
        raise RuntimeError("ZooKeeper did not start (%s); see %s"
                           % ("; ".join(errors), self.log))

    def restart(self, timeout=60.0):
        """kill -9 the server and start it again on the same port with the
        same data dir (sessions and ephemerals are in its transaction log).
        Returns the seconds from the kill until it serves sessions again."""
        t0 = time.monotonic()
        p = self.proc
        if p is not None and p.returncode is None:
            try:
                os.kill(p.pid, signal.SIGCONT)
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(15)
        self.start(attempts=5, timeout=timeout, port=self.port)
        return time.monotonic() - t0

    def suspend(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self):
        p = self.proc
        if p is None or p.returncode is not None:
            return
        try:
            os.kill(p.pid, signal.SIGCONT)      # in case a test left it stopped
            p.terminate()
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(15)
        except ProcessLookupError:
            pass


class QuorumMember(ZooKeeperServer):
    """One server of a ZooKeeperEnsemble (started by the ensemble)."""

    def __init__(self, workdir, myid):
        super().__init__(workdir)
        self.myid = myid
        self.quorum_port = None
        self.election_port = None

    def mode(self):
        """The server's mode from `srvr` ("leader", "follower", ...), or
        None (not serving, not answering, or stopped)."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        try:
            ans = self.four("srvr", 2.0)
        except OSError:
            return None
        m = re.search(r"^Mode: (\S+)", ans, re.M)
        return m.group(1) if m else None

    def session_ids(self):
        """Session ids of the client connections this server has (`cons`)."""
        try:
            ans = self.four("cons", 2.0)
        except OSError:
            return set()
        return {int(x, 16) for x in re.findall(r"sid=0x([0-9a-fA-F]+)", ans)}

    def kill9(self):
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(15)


class ZooKeeperEnsemble:
    """n ZooKeeper servers on 127.0.0.1 forming one ensemble (server.1..n,
    distinct client/quorum/election ports, myid files, tickTime=500).
    .connect is the n-server connect string; .members; .leader();
    .client() opens a raw session on a serving member. Stopped by pid."""

    def __init__(self, workdir, n=3):
        self.workdir = workdir
        self.members = [QuorumMember(os.path.join(workdir, "s%d" % i), i)
                        for i in range(1, n + 1)]

    @property
    def connect(self):
        return ",".join(m.hostport for m in self.members)

    @property
    def hostport(self):
        return self.connect

    def _ports(self):
        socks = []
        # hold every port bound until all are picked, so none repeats
        for _ in range(3 * len(self.members)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        ports = [s.getsockname()[1] for s in socks]
        for s in socks:
            s.close()
        return ports

    def _write_cfgs(self):
        ports = self._ports()
        for i, m in enumerate(self.members):
            m.port, m.quorum_port, m.election_port = ports[3 * i:3 * i + 3]
        servers = "".join("server.%d=127.0.0.1:%d:%d\n"
                          % (m.myid, m.quorum_port, m.election_port)
                          for m in self.members)
        for m in self.members:
            datadir = os.path.join(m.workdir, "data")
            os.makedirs(datadir, exist_ok=True)
            with open(os.path.join(datadir, "myid"), "w") as f:
                f.write("%d\n" % m.myid)
            with open(os.path.join(m.workdir, "zoo.cfg"), "w") as f:
                f.write(zoo_cfg(datadir, m.port, sync_limit=4,
                                extra="cnxTimeout=1000\n" + servers))

    def _launch(self, m):
        os.makedirs(m.workdir, exist_ok=True)
        logf = open(m.log, "ab")
        argv = [JAVA, "-Xms32m", "-Xmx256m",
                "-Dzookeeper.root.logger=INFO,CONSOLE",
                "-Dzookeeper.console.threshold=INFO",
                "-Dzookeeper.log.dir=" + m.workdir,
                "-cp", zookeeper_classpath(),
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                os.path.join(m.workdir, "zoo.cfg")]
        m.proc = subprocess.Popen(argv, cwd=m.workdir, stdin=subprocess.DEVNULL,
                                  stdout=logf, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        logf.close()

    def modes(self):
        return [m.mode() for m in self.members]

    def leader(self):
        for m in self.members:
            if m.mode() == "leader":
                return m
        return None

    def wait_quorum(self, timeout=60.0, alive=None):
        """Wait until every live member (or those in `alive`) serves, one as
        leader, and a session can be opened; return the seconds waited."""
        t0 = time.monotonic()
        members = alive or [m for m in self.members
                            if m.proc is not None and m.proc.poll() is None]
        deadline = t0 + timeout
        while True:
            modes = [m.mode() for m in members]
            if modes.count("leader") == 1 and \
                    all(x in ("leader", "follower") for x in modes):
                try:
                    c = members[0].client(5000)
                    c.close()
                    return time.monotonic() - t0
                except (OSError, ConnectionError, zkclient.ZKError):
                    pass
            if time.monotonic() >= deadline:
                raise RuntimeError("ensemble not serving after %.0fs: modes %r; "
                                   "see %s" % (timeout, modes,
                                               [m.log for m in members]))
            for m in members:
                if m.proc.poll() is not None:
                    raise RuntimeError("ZooKeeper server %d exited rc=%r; see %s"
                                       % (m.myid, m.proc.returncode, m.log))
            time.sleep(0.2)

    def start(self, timeout=90.0):
        self._write_cfgs()
        for m in self.members:
            self._launch(m)
        try:
            for m in self.members:
                deadline = time.monotonic() + timeout
                while not pid_listens_on(m.proc.pid, m.port):
                    if m.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("ZooKeeper server %d did not listen on "
                                           "%d; see %s" % (m.myid, m.port, m.log))
                    time.sleep(0.1)
            self.wait_quorum(timeout)
        except Exception:
            self.stop()
            raise
        return self

    def client(self, session_timeout_ms=10000):
        last = None
        for m in self.members:
            if m.proc is None or m.proc.poll() is not None:
                continue
            try:
                return m.client(session_timeout_ms)
            except (OSError, ConnectionError, zkclient.ZKError) as e:
                last = e
        raise ConnectionError("no member of the ensemble serves: %r" % last)

    def member_with_session(self, session_id):
        for m in self.members:
            if m.proc is not None and m.proc.poll() is None \
                    and session_id in m.session_ids():
                return m
        return None

    def stop(self):
        for m in self.members:
            m.stop()


# ---------------------------------------------------------------------------
# Mounts
# ---------------------------------------------------------------------------

def _unescape_mountinfo(s):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mountinfo():
    """List of (mountpoint, fstype, major:minor) from /proc/self/mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.rstrip("\n").partition(" - ")
            fields = left.split(" ")
            if len(fields) < 5:
                continue
            out.append((_unescape_mountinfo(fields[4]),
                        right.split(" ")[0], fields[2]))
    return out


def mount_entry(path):
    found = None
    for mp, fstype, dev in mountinfo():
        if mp == path:
            found = (fstype, dev)          # the last one is on top
    return found


SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "runtime error:", "WARNING: ThreadSanitizer",
                     "ERROR: UndefinedBehaviorSanitizer")


def sanitizer_report(logpath, context=40):
    """The first sanitizer report in a daemon log, or None."""
    try:
        with open(logpath, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for i, line in enumerate(lines):
        if any(mk in line for mk in SANITIZER_MARKERS):
            return "\n".join(lines[i:i + context])
    return None


_DAEMONS = []           # live Mount objects, for the watchdog
_DAEMONS_LOCK = threading.Lock()


class Mount:
    """One zklockfs daemon mounted on a fresh temp directory."""

    def __init__(self, zk, root, logdir, naming=None, session_timeout=4000,
                 opts=(), connect=None, label="mount", wrap=()):
        self.zk = zk
        self.wrap = list(wrap)     # a command the daemon runs under
        self.root = root
        self.naming = naming
        self.session_timeout = session_timeout
        self.opts = list(opts)
        self.connect = connect
        self.path = os.path.realpath(tempfile.mkdtemp(prefix="zklockfs-mnt-"))
        fd, self.logpath = tempfile.mkstemp(prefix=label + "-", suffix=".log",
                                           dir=logdir)
        os.close(fd)
        self.proc = None
        self.fstype = None
        self.dev = None
        self.returncode = None

    @property
    def pid(self):
        return self.proc.pid

    def argv(self):
        opts = ["session_timeout=%d" % self.session_timeout]
        if self.naming:
            opts.append("naming=" + self.naming)
        opts += self.opts
        if self.connect is not None:
            source = self.connect
        elif self.root in ("", None):
            source = self.zk.hostport
        else:
            source = self.zk.hostport + self.root
        return self.wrap + [daemon_binary(), "-f", "-o", ",".join(opts),
                            source, self.path]

    def start(self, timeout=None):
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT,
                                     cwd="/", start_new_session=True,
                                     preexec_fn=signals_preexec())
        log.close()
        with _DAEMONS_LOCK:
            _DAEMONS.append(self)
        if timeout is None:
            timeout = self.session_timeout / 1000.0 + 15
        deadline = time.monotonic() + timeout
        while True:
            e = mount_entry(self.path)
            if e and e[0].startswith("fuse"):
                self.fstype, self.dev = e
                return self
            if self.proc.poll() is not None:
                raise AssertionError(
                    "zklockfs exited with %r before mounting %s\n%s"
                    % (self.proc.returncode, self.path, self.log_tail()))
            if time.monotonic() >= deadline:
                raise AssertionError("zklockfs did not mount %s within %.0fs\n%s"
                                     % (self.path, timeout, self.log_tail()))
            time.sleep(0.02)

    def log_tail(self, n=60):
        try:
            with open(self.logpath, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def p(self, *parts):
        return os.path.join(self.path, *parts)

    def zkpath(self, rel=""):
        base = "" if self.root in ("", "/", None) else self.root.rstrip("/")
        rel = rel.strip("/")
        return (base + "/" + rel) if rel else (base or "/")

    def mounted(self):
        return mount_entry(self.path) is not None

    def umount(self, timeout=15):
        """fusermount3 -u; wait for the daemon; return its exit status."""
        r = subprocess.run([FUSERMOUNT, "-u", self.path], capture_output=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise AssertionError("fusermount3 -u %s failed: %s"
                                 % (self.path, r.stderr.decode().strip()))
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("zklockfs pid %d still running %ds after "
                                 "unmount" % (self.proc.pid, timeout))
        return self.returncode

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.returncode is None:
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def abort_connection(self):
        """Abort the FUSE connection (if fusectl is mounted): unblocks every
        process waiting in a request of this mount."""
        if not self.dev:
            return
        minor = self.dev.split(":")[1]
        try:
            with open("/sys/fs/fuse/connections/%s/abort" % minor, "w") as f:
                f.write("1")
        except OSError:
            pass

    def cleanup(self):
        """Unmount (lazily if busy), stop the daemon by pid, remove the dir."""
        if self.mounted():
            for _ in range(3):
                r = subprocess.run([FUSERMOUNT, "-u", self.path],
                                   capture_output=True, timeout=20)
                if r.returncode == 0 or not self.mounted():
                    break
                time.sleep(0.3)
        if self.proc is not None and self.proc.returncode is None:
            try:
                self.returncode = self.proc.wait(5 if not self.mounted() else 0.1)
            except subprocess.TimeoutExpired:
                self.abort_connection()
                self.kill(signal.SIGTERM)
                try:
                    self.returncode = self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.kill(signal.SIGKILL)
                    try:
                        self.returncode = self.proc.wait(10)
                    except subprocess.TimeoutExpired:
                        pass
        if self.mounted():
            subprocess.run([FUSERMOUNT, "-u", "-z", self.path],
                           capture_output=True, timeout=20)
        with _DAEMONS_LOCK:
            if self in _DAEMONS:
                _DAEMONS.remove(self)
        if not self.mounted():
            try:
                os.rmdir(self.path)
            except OSError:
                pass


def emergency_stop(reason):
    """Called by the watchdog thread when a test overruns: free everything a
    test process could be stuck on (by pid), so normal teardown can run."""
    import sys
    sys.stderr.write("\nzklockfs tests: watchdog: %s; killing daemons and "
                     "children by pid\n" % reason)
    with _DAEMONS_LOCK:
        mounts = list(_DAEMONS)
    for m in mounts:
        m.abort_connection()
        m.kill(signal.SIGKILL)
    kill_children(wait=1.0)
    for m in mounts:
        if m.mounted():
            subprocess.run([FUSERMOUNT, "-u", "-z", m.path],
                           capture_output=True, timeout=20)


# ---------------------------------------------------------------------------
# Measured figures (printed in the terminal summary by conftest.py)
# ---------------------------------------------------------------------------

FIGURES = []            # (test node id or "", text)


def record_figure(text, test=""):
    """Remember a measured figure, e.g. record_figure("partition -> holder
    POLLERR: 4.1 s (session timeout 4 s)"); it is printed at the end of the
    run as "figure: <text>" and, if $ZKLOCKFS_FIGURES names a file, appended
    to it."""
    FIGURES.append((test, text))
    path = os.environ.get("ZKLOCKFS_FIGURES")
    if path:
        try:
            with open(path, "a") as f:
                f.write("figure: %s%s\n" % (text, ("  [%s]" % test) if test else ""))
        except OSError:
            pass


def lockdir(m, name="L"):
    """Make the lock directory @name on mount @m; its path."""
    d = m.p(name)
    os.mkdir(d)
    return d


def seen_dir(m, name="L", timeout=5):
    """The same lock directory as seen through another mount."""
    d = m.p(name)
    wait_for(lambda: os.path.isdir(d), timeout, "%s to appear" % d)
    return d


def assert_lost(h):
    """@h (a Locker holding a lock) sees its lock lost, every way docs/SPEC.md says:
    state "lost", EIO from read/write/fsync, POLLERR|POLLHUP from poll."""
    assert h.xattr(XATTR_STATE) == "lost"
    assert h.cmd("read") == "error EIO"
    assert h.cmd("write " + b"x".hex()) == "error EIO"
    assert h.cmd("fsync") == "error EIO"
    ev = int(h.ok("poll 2000"))
    assert ev & select.POLLERR and ev & select.POLLHUP, "poll gave %#x" % ev
