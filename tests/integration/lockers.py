"""Lock clients for the zklockfs integration tests.

  * Locker   - a child process that open()s a path (usually taking a lock)
               and then obeys commands on its stdin (LOCKER_SCRIPT).
  * take(), start_waiter() - a Locker whose entry has been found;
               held_and_waited() - a holder and a waiter behind it.
  * entries, parse_entry, seq_of, ... - entry names in a lock directory.
  * lock_state() - the one way to read a lock's user.zklockfs.state (of a
               path, a descriptor or a Locker); assert_queued(), assert_lost().
  * waiting() - a Locker's open() has not returned; round_trip() - a
               holder's write and fsync, tried until both succeed.
"""

import json
import os
import re
import select
import signal
import subprocess
import tempfile
import time

from procs import (ERRNAMES, GRANT_TIMEOUT, NOT_GRANTED_WAIT, OPEN_SYSCALLS,
                   PY, Lines, proc_file, signal_proc, spawn,
                   wait_for)

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
    r"^(?P<name>.*?)(?P<marker>-read-lock-|-lock-|__rlock__|__lock__|__READ__|__WRIT__)"
    r"(?P<seq>-?\d{10})$", re.S)


def as_user(uid):
    """The argv prefix that runs a command as @uid (and gid @uid, no
    supplementary groups), or [] for None: two users need no accounts."""
    if uid is None:
        return []
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]


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



# ---------------------------------------------------------------------------
# Locker: a child process that takes a lock with open() and obeys commands.
# ---------------------------------------------------------------------------

LOCKER_SCRIPT = r'''
import ctypes, json, os, select, signal, sys
cfg = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)      # PR_SET_PDEATHSIG
def out(line):
    os.write(1, (line + "\n").encode("utf-8", "surrogateescape"))
ERRNAMES = cfg["errnames"]               # the parent's procs.ERRNAMES
def ename(e):
    return ERRNAMES.get(str(e)) or str(e)
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
    main_fd = fd
    if c == "fdop" and len(args) >= 2:    # fdop NFD CMD ...: CMD on NFD
        fd, c, args = int(args[0]), args[1], args[2:]
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
        elif c == "writes":               # N writes of SIZE bytes from 0:
            n, size = int(args[0]), int(args[1])  # chunk i is letter i % 26
            os.lseek(fd, 0, os.SEEK_SET)
            out("ok %d" % sum(os.write(fd, bytes([65 + i % 26]) * size)
                              for i in range(n)))
        elif c == "unlock":               # flock(LOCK_UN): give the lock back
            import fcntl
            fcntl.flock(fd, fcntl.LOCK_UN)
            out("ok")
        elif c == "truncate":
            os.ftruncate(fd, int(args[0]))
            out("ok")
        elif c == "seek":
            out("ok %d" % os.lseek(fd, int(args[0]), os.SEEK_SET))
        elif c == "read":
            out("ok " + os.pread(fd, 1 << 21, 0).hex())
        elif c == "fsync":
            os.fsync(fd)
            out("ok")
        elif c == "getxattr":
            out("ok " + os.getxattr(fd, args[0]).hex())
        elif c in ("poll", "pollpri"):     # pollpri: wait for POLLPRI alone
            p = select.poll()
            p.register(fd, select.POLLPRI if c == "pollpri" else
                       select.POLLIN | select.POLLOUT | select.POLLPRI)
            ev = p.poll(int(args[0]) if args else 0)
            out("ok %d" % (ev[0][1] if ev else 0))
        elif c == "sendfd":                # pass fd over a unix socket
            import socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(args[0])
            socket.send_fds(s, [b"F"], [fd])
            s.close()
            out("ok")
        elif c == "flock":                 # flock sh|ex|un, nb: LOCK_NB
            import fcntl
            how = {"sh": fcntl.LOCK_SH, "ex": fcntl.LOCK_EX, "un": fcntl.LOCK_UN}
            fcntl.flock(fd, how[args[0][:2]] | (fcntl.LOCK_NB if args[0].endswith("nb") else 0))
            out("ok")
        elif c == "open":                  # a second open by this same thread
            path = bytes.fromhex(args[1]).decode("utf-8", "surrogateescape")
            nfd, e = raw_open(path, int(args[0]), 0o644)
            out(("ok %d" % nfd) if nfd >= 0 else ("error %s" % ename(e)))
        else:
            out("error EBADCMD")
    except OSError as ex:
        out("error %s" % ename(ex.errno))
    fd = main_fd
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
                 mode=0o644, start_timeout=20, user=None):
        # user: a uid to run as (setpriv; no account needed), else ours
        self.path = str(path)
        self.flags = flags
        cfg = {"path": self.path, "flags": flags, "handle": list(handle),
               "alarm": alarm, "mode": mode, "errnames": ERRNAMES}
        self._err = tempfile.TemporaryFile()
        self.proc = spawn(as_user(user) + [PY, "-c", LOCKER_SCRIPT, json.dumps(cfg)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=self._err, bufsize=0)
        self.pid = self.proc.pid
        self._lines = Lines(self.proc.stdout)
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
        """Next line from the child (stripped, kept in .history), None on
        EOF; raises TimeoutError (procs.Lines)."""
        line = self._lines.readline(timeout)
        if line is None:
            return None
        line = line.strip()
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
        signal_proc(self.proc, sig)

    def wait_exit(self, timeout=GRANT_TIMEOUT):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def alive(self):
        return self.proc.poll() is None




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



def held_and_waited(holder_dir, waiter_dir, flags=WRITE, wait=0.5,
                    waiter="w"):
    """A holder "h" taken in holder_dir (with @flags) and a waiter (named
    @waiter) started in waiter_dir, seen not granted for @wait seconds:
    (h, the waiter)."""
    h = take(holder_dir, "h", flags)
    w = start_waiter(waiter_dir, waiter)
    w.assert_waiting(wait)
    return h, w


def lock_state(of):
    """user.zklockfs.state ("held", "waiting", "lost", ...) of a lock: `of`
    is an entry's path, an open descriptor, or a Locker (fgetxattr on its
    descriptor, in the child: "error ENAME" if that fails)."""
    if isinstance(of, Locker):
        ans = of.cmd("getxattr " + XATTR_STATE)
        if not ans.startswith("ok "):
            return ans
        return bytes.fromhex(ans[3:]).decode("utf-8", "replace") \
            .strip("\x00").strip()
    return getxattr_str(of, XATTR_STATE)


def assert_queued(lk, d):
    """@lk, whose entry is in @d, waits: shown by events, not by a pause.
    Its entry's user.zklockfs.state reads "waiting" (the daemon answers
    "held" for an entry it has granted; else it lists the queue through
    the mount's session, so the mount has first acted on all ZooKeeper
    told it before: read twice, to cover a decision that takes a round trip
    of its own); then the child still sleeps in the FUSE request of its
    open() (/proc/PID/wchan), and has not said "granted" (the pipe is read:
    a zero timeout still looks)."""
    p = os.path.join(d, lk.entry)
    for _ in range(2):
        state = lock_state(p)
        assert state == "waiting", "%s (pid %d): state %r where it must wait" % (
            lk.entry, lk.pid, state)
    wchan = proc_file(lk.pid, "wchan")
    syscall = proc_file(lk.pid, "syscall").split(" ", 1)[0]
    if wchan in ("", "0"):              # a kernel that hides it: the syscall
        nr = int(syscall) if syscall.lstrip("-").isdigit() else None
        asleep = nr is not None and nr >= 0 and (
            OPEN_SYSCALLS is None or nr in OPEN_SYSCALLS)
    else:
        asleep = wchan == "request_wait_answer" or "fuse" in wchan
    assert asleep, (
        "pid %d (%s) is not asleep in its open(): wchan %r, syscall %s, it "
        "said %r" % (lk.pid, lk.entry, wchan, syscall, lk.history))
    status = lk.poll_status(0)
    assert status is None, "open(%s) by pid %d returned (%s) but must wait" % (
        lk.path, lk.pid, status)


def assert_lost(h):
    """@h (a Locker holding a lock) sees its lock lost, every way docs/SPEC.md says:
    state "lost", EIO from read/write/fsync, POLLERR|POLLHUP from poll."""
    assert lock_state(h) == "lost"
    assert h.cmd("read") == "error EIO"
    assert h.cmd("write " + b"x".hex()) == "error EIO"
    assert h.cmd("fsync") == "error EIO"
    ev = int(h.ok("poll 2000"))
    assert ev & select.POLLERR and ev & select.POLLHUP, "poll gave %#x" % ev


def waiting(lk):
    """True if lk's open() has not returned (a zero timeout would not even
    look: harness' readers give up before reading when the time is up)."""
    return lk.poll_status(0.02) is None


def round_trip(h, timeout, data=b"ping"):
    """write() then fsync() on the holder's descriptor (a ZooKeeper round
    trip: the data is sent at fsync at the latest) until both succeed;
    return (seconds taken, [errors seen on the way]). An fsync while the
    connection is down may fail (EAGAIN: the data is sent again)."""
    t0 = time.monotonic()
    errors = []
    while True:
        left = t0 + timeout - time.monotonic()
        if left <= 0:
            raise AssertionError("no successful write within %.1fs: %r"
                                 % (timeout, errors))
        ans = h.cmd("write " + data.hex(), timeout=max(left, 0.1))
        if ans == "ok %d" % len(data):
            left = t0 + timeout - time.monotonic()
            ans = h.cmd("fsync", timeout=max(left, 0.1))
            if ans == "ok":
                return time.monotonic() - t0, errors
        errors.append(ans)
        time.sleep(0.05)
