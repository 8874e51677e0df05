"""Process bookkeeping for the zklockfs integration tests.

Every child a test starts goes through spawn(): it starts with the default
signal dispositions, in a session of its own, and is registered so that
teardown kills it (and its process group) by pid, never by name. Also here:
the one line reader with deadlines over a child's pipe (Lines), the errno
names, the time bounds (those of the fault tests too: TICK, NOTICE,
GRANT_LATENCY), what /proc says about a process (state, the syscall it
sleeps in, its sockets), a process blocked in poll() on a holder's
descriptor (Poller), and measured figures (record_figure(), fig()).
"""

import errno
import os
import platform
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3"

# How long the tests wait for something that should happen, and how long they
# watch for something that should NOT happen.
# A sanitized daemon (make check-asan sets ZKLOCKFS_SANITIZED=1) is slower.
SLOW = 2.0 if os.environ.get("ZKLOCKFS_SANITIZED") else 1.0
GRANT_TIMEOUT = float(os.environ.get("ZKLOCKFS_TEST_GRANT_TIMEOUT", "10")) * SLOW
NOT_GRANTED_WAIT = float(os.environ.get("ZKLOCKFS_TEST_NEGATIVE_WAIT", "1.0"))

# Bounds derived from docs/SPEC.md ("When the lock is lost", "Mounting"):
#  * the server expires a session a session timeout T after it last heard
#    from it, at the next tick of its clock (harness.zoo_cfg: tickTime 500
#    ms), so a lock whose mount died goes to another host after at most
#    T + TICK, plus the hand-over (a watch, a listing: GRANT_LATENCY);
#  * the mount declares its held locks lost itself once it has heard
#    nothing for T: at most T after the silence began, plus NOTICE, the
#    time a loaded 2-core machine may take to run the daemon's check and
#    wake the holder's poll();
#  * unmounting releases the mount's locks "at once": a hand-over, far
#    below the T that an expiry would take.
# The slacks are doubled under sanitizers (SLOW).
TICK = 0.5
NOTICE = 1.5 * SLOW
GRANT_LATENCY = 2.0 * SLOW

# errno.errorcode picks an alias for some values (35 -> EDEADLOCK)
_PREFERRED = {errno.EDEADLK: "EDEADLK", errno.EAGAIN: "EAGAIN",
              errno.EOPNOTSUPP: "EOPNOTSUPP"}
# every errno's name, as errname() gives it (passed to child scripts)
ERRNAMES = {e: _PREFERRED.get(e, n) for e, n in errno.errorcode.items()}


def errname(e):
    return ERRNAMES.get(e) or str(e)


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


def signal_proc(p, sig):
    """Send `sig` to Popen `p` by pid unless it has been reaped."""
    if p is not None and p.returncode is None:
        try:
            os.kill(p.pid, sig)
        except ProcessLookupError:
            pass


def kill9(p, wait=15):
    """kill -9 Popen `p` (SIGCONT first: it may be stopped) and reap it."""
    if p is not None and p.returncode is None:
        signal_proc(p, signal.SIGCONT)
        signal_proc(p, signal.SIGKILL)
        p.wait(wait)


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



class Lines:
    """The line reader with deadlines over a child's stdout pipe: every
    reader of a child's output uses it. The pipe is always looked at, at
    least once: with timeout 0 what the child has already said is read,
    only then is it a timeout. At end of file, a last line without its
    newline is still returned; after it, None."""

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

    def rest(self, proc, timeout):
        """What is left unread (str) once `proc` has exited: read until it
        exits, then what is in the pipe -- no waiting for end of file (a
        grandchild that outlives it may keep the pipe open). Raises
        TimeoutError if it still runs after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        chunks = [self.buf]
        self.buf = b""
        while not self.eof:
            exited = proc.poll() is not None
            if not exited and time.monotonic() >= deadline:
                raise TimeoutError()
            if select.select([self.fd], [], [], 0 if exited else 0.02)[0]:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    self.eof = True
                    break
                chunks.append(chunk)
            elif exited:
                break
        return b"".join(chunks).decode("utf-8", "replace")


# ---------------------------------------------------------------------------
# What /proc says about a process
# ---------------------------------------------------------------------------

# open(2), openat(2), openat2(2): the numbers /proc/PID/syscall shows while
# a process is in them, by architecture
OPEN_SYSCALLS = {"x86_64": {2, 257, 437}, "aarch64": {56, 437},
                 "riscv64": {56, 437}, "i686": {5, 295, 437},
                 "armv7l": {5, 322, 437}, "ppc64le": {5, 286, 437},
                 "s390x": {5, 288, 437}}.get(platform.machine())

# poll(2), ppoll(2), likewise
POLL_SYSCALLS = {"x86_64": {7, 271}, "aarch64": {73}, "armv7l": {168, 336},
                 "i686": {168, 309}, "riscv64": {73}, "ppc64le": {167, 281},
                 "s390x": {168, 302}}.get(platform.machine())


def proc_file(pid, what):
    """/proc/PID/WHAT, stripped; "(<strerror>)" if it cannot be read."""
    try:
        with open("/proc/%d/%s" % (pid, what)) as f:
            return f.read().strip()
    except OSError as e:
        return "(%s)" % e.strerror


def proc_state(pid):
    """The state letter of /proc/PID/stat (R, S, D, T, Z, ...)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def syscall_nr(pid):
    """The number of the syscall process pid is in (/proc/PID/syscall),
    or None (running, gone, or not shown)."""
    with open("/proc/%d/syscall" % pid) as f:
        sc = f.read().split()
    if not sc or not sc[0].lstrip("-").isdigit():
        return None
    return int(sc[0])


def asleep_in(pid, syscalls):
    """Whether process pid is asleep (state S) in one of `syscalls` (any
    syscall where the architecture's numbers are not known: None)."""
    try:
        nr = syscall_nr(pid)
        state = proc_state(pid)
    except (OSError, IndexError):
        return False
    if nr is None or nr < 0 or state != "S":
        return False
    return syscalls is None or nr in syscalls


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
    """True if process `pid` owns the listening socket on `port`, in its own
    network namespace (/proc/PID/net: a server the nemesis started in a
    namespace of its own, as well as one beside us)."""
    listening = {p[9] for p in tcp_rows("/proc/%d" % pid)
                 if p[3] == "0A" and int(p[1].rsplit(":", 1)[1], 16) == port}
    return bool(listening and listening & socket_inodes(pid))


# ---------------------------------------------------------------------------
# A process blocked in poll() on a holder's descriptor
# ---------------------------------------------------------------------------

def blocked_in_poll(pid):
    """Whether process pid is asleep in poll()/ppoll() waiting for events:
    /proc/PID/syscall names the syscall, /proc/PID/stat says S (asleep), and
    /proc/PID/wchan (where the kernel names it) is poll's own wait, not the
    FUSE POLL request that poll() sends the daemon first (the answer of
    which the process also sleeps for)."""
    if not asleep_in(pid, POLL_SYSCALLS):
        return False
    wchan = proc_file(pid, "wchan")
    if wchan in ("", "0"):          # not named: the syscall must do
        return POLL_SYSCALLS is not None
    return wchan.startswith(("poll_schedule_timeout", "do_poll",
                             "do_sys_poll"))


POLLER_SCRIPT = r'''
import ctypes, os, select, signal, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)      # PR_SET_PDEATHSIG
path, events, timeout_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def out(s):
    os.write(1, (s + "\n").encode())
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
out("listening")
c, _ = srv.accept()
msg, fds, _, _ = socket.recv_fds(c, 16, 4)
c.close()
srv.close()
fd = fds[0]
p = select.poll()
p.register(fd, events)
out("polling %.6f" % time.monotonic())
ev = p.poll(timeout_ms)
out("event %d %.6f" % (ev[0][1] if ev else 0, time.monotonic()))
'''


class Poller:
    """A process blocked in poll() on a holder's open file description
    (passed from the Locker over a unix socket), with `events` (0 or
    POLLPRI: only POLLERR/POLLHUP/POLLNVAL can wake it). It prints
    "event <revents> <CLOCK_MONOTONIC>" when poll() returns, then exits.
    It shares the lock: stop() it before the holder releases."""

    def __init__(self, holder, events, timeout_ms=600000):
        self.dir = tempfile.mkdtemp(prefix="zklockfs-poller-")
        path = os.path.join(self.dir, "s")
        self._err = tempfile.TemporaryFile()
        self.proc = spawn([PY, "-c", POLLER_SCRIPT, path, str(events),
                           str(timeout_ms)], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=self._err)
        self.lines = Lines(self.proc.stdout)
        self.result = None
        self._expect("listening")
        try:
            holder.ok("sendfd " + path)
            self._expect("polling")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
        # it said "polling" just before it called poll(): wait until the
        # kernel has it asleep there (the daemon answered FUSE's POLL
        # request and holds the poll handle)
        wait_for(lambda: blocked_in_poll(self.proc.pid) or
                 self.proc.poll() is not None, GRANT_TIMEOUT,
                 "the poller to block in poll() (/proc/%d/syscall, wchan)"
                 % self.proc.pid)
        self.assert_quiet()
        assert self.proc.poll() is None, "the poller exited"

    def _expect(self, word, timeout=10):
        try:
            line = self.lines.readline(timeout)
        except TimeoutError:
            line = "(nothing)"
        if not line or not line.startswith(word):
            self._err.seek(0)
            raise AssertionError("poller: expected %r, got %r\n%s"
                                 % (word, line, self._err.read().decode()))
        return line

    def _take(self, timeout):
        if self.result is None:
            try:
                line = self.lines.readline(timeout)
            except TimeoutError:
                return None
            if line is None:
                raise AssertionError("poller exited without an event")
            _, ev, t = line.split()
            self.result = (int(ev), float(t))
        return self.result

    def wait_event(self, timeout):
        """(revents, CLOCK_MONOTONIC time poll() returned); raises if it
        did not return within timeout."""
        r = self._take(timeout)
        if r is None:
            raise AssertionError("the holder's blocked poll() did not return "
                                 "within %.1fs" % timeout)
        return r

    def quiet(self):
        return self._take(0.01) is None

    def assert_quiet(self):
        r = self._take(0.01)
        assert r is None, "a blocked poll() returned %#x (expected to stay " \
            "blocked: the lock is not lost)" % r[0]

    def stop(self):
        self.proc.poll()
        signal_proc(self.proc, signal.SIGKILL)
        self.proc.wait(10)
        self.proc.stdout.close()



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


def fig(request, text):
    """record_figure(text) under the name of `request`'s test."""
    record_figure(text, request.node.name)
