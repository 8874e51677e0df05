"""zklockfs mounts for the integration tests.

  * Mount     - one zklockfs daemon ("one host") mounted on a temp dir;
                registered for the watchdog (emergency_stop).
  * fusermount() - the one `fusermount3 -u [-z]`.
  * immutable(), clear_immutable(), remove_mountpoint() - a mount by root
    leaves its mount point immutable (chattr +i); every mount point a test
    made goes through remove_mountpoint().
  * mount_entry(), mountinfo(), sanitizer_report(), lockdir(), seen_dir(),
    two_mounts().
  * log_has() - a pattern in a mount's daemon log.
  * zk_entries(), named(), wait_zk_entries() - the queue of a mount's lock
    as ZooKeeper has it (read with a raw client, not through a mount).
"""

import fcntl
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time

from lockers import parse_entry, seq_of
from procs import (GRANT_TIMEOUT, REPO, kill_children, signal_proc,
                   signals_preexec, wait_for)

FUSERMOUNT = shutil.which("fusermount3") or "/usr/bin/fusermount3"


def fusermount(path, lazy=False, timeout=20):
    """fusermount3 -u [-z] PATH; the CompletedProcess (output captured)."""
    return subprocess.run([FUSERMOUNT, "-u"] + (["-z"] if lazy else []) +
                          [path], capture_output=True, timeout=timeout)


# linux/fs.h: the inode flags of chattr(1), read and set as an int
FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_IMMUTABLE_FL = 0x00000010
# where the daemon lists the mount points it made immutable (fs/mountpoint.h)
STATE_DIR_ENV = "ZKLOCKFS_STATE_DIR"
STATE_LIST = "immutable"


def _inode_flags(fd):
    return struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, b"\0" * 4))[0]


def immutable(path):
    """Is the directory @path immutable (chattr +i)?"""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return bool(_inode_flags(fd) & FS_IMMUTABLE_FL)
    finally:
        os.close(fd)


def clear_immutable(path):
    """chattr -i @path, if it is an immutable directory with nothing mounted
    on it (a mount's root answers for itself).  Never raises."""
    try:
        if mount_entry(os.path.realpath(path)) is not None:
            return
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        flags = _inode_flags(fd)
        if flags & FS_IMMUTABLE_FL:
            fcntl.ioctl(fd, FS_IOC_SETFLAGS,
                        struct.pack("i", flags & ~FS_IMMUTABLE_FL))
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_mountpoint(path):
    """Remove the (empty) directory @path that a test mounted on, once
    nothing is mounted there: its immutable flag first (a mount by root
    sets it and never clears it).  Never raises."""
    clear_immutable(path)
    try:
        os.rmdir(path)
    except OSError:
        pass


def daemon_binary():
    return os.environ.get("ZKLOCKFS") or os.path.join(REPO, "build", "zklockfs")



def zklock_binary():
    """$ZKLOCK, else the zklock beside the daemon (build/asan/ with ASan),
    else build/zklock."""
    if os.environ.get("ZKLOCK"):
        return os.environ["ZKLOCK"]
    beside = os.path.join(os.path.dirname(os.path.abspath(daemon_binary())), "zklock")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return os.path.join(REPO, "build", "zklock")


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
                 opts=(), connect=None, label="mount", wrap=(), create_root=True,
                 env=None, mp_owner=None):
        self.zk = zk
        self.env = env             # more environment for the daemon
        self.wrap = list(wrap)     # a command the daemon runs under
        self.root = root
        self.naming = naming
        self.session_timeout = session_timeout
        # each test's ROOT is new: made by the mount unless the test says
        self.opts = (["create_root"] if create_root else []) + list(opts)
        self.connect = connect
        self.path = os.path.realpath(tempfile.mkdtemp(prefix="zklockfs-mnt-"))
        if mp_owner is not None:    # a daemon run as that uid (wrap=setpriv)
            os.chown(self.path, mp_owner, mp_owner)
        # the daemon lists the mount points it makes immutable here, never
        # in the host's /var/lib/zklockfs
        self.state_dir = tempfile.mkdtemp(prefix="zklockfs-state-")
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
        env = dict(os.environ)
        env[STATE_DIR_ENV] = self.state_dir
        env.update(self.env or {})
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, env=env,
                                     cwd="/", start_new_session=True,
                                     preexec_fn=signals_preexec())
        log.close()
        with _DAEMONS_LOCK:
            if self not in _DAEMONS:        # a second start() of the same Mount
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

    def listed_immutable(self):
        """The mount points the daemon listed as made immutable."""
        try:
            with open(os.path.join(self.state_dir, STATE_LIST)) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def umount(self, timeout=15):
        """fusermount3 -u; wait for the daemon; return its exit status."""
        r = fusermount(self.path, timeout=timeout)
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
        signal_proc(self.proc, sig)

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
                r = fusermount(self.path)
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
            fusermount(self.path, lazy=True)
        with _DAEMONS_LOCK:
            if self in _DAEMONS:
                _DAEMONS.remove(self)
        if not self.mounted():
            remove_mountpoint(self.path)
        shutil.rmtree(self.state_dir, ignore_errors=True)


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
            fusermount(m.path, lazy=True)



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


def two_mounts(mount, name="L", **kw):
    """Two mounts of the test's root, two "hosts" on the same locks (@mount:
    the fixture's factory, called with @kw for each): (m1, m2, d1, d2), d1
    the lock directory @name made on m1 (lockdir), d2 the same directory
    once m2 sees it (seen_dir)."""
    m1, m2 = mount(**kw), mount(**kw)
    return m1, m2, lockdir(m1, name), seen_dir(m2, name)


def log_has(m, pattern):
    """re.search(pattern) over mount m's daemon log so far (None if it
    cannot be read)."""
    try:
        with open(m.logpath, "rb") as f:
            return re.search(pattern, f.read().decode("utf-8", "replace"))
    except OSError:
        return None


def zk_entries(zkc, m, rel="L"):
    """Entry names in ZooKeeper (not through a mount: a partitioned mount
    cannot list), in queue order."""
    return sorted((n for n in zkc.get_children(m.zkpath(rel))
                   if parse_entry(n)), key=seq_of)


def named(names, base):
    """The entries among `names` whose NAME is `base`."""
    return [n for n in names if parse_entry(n)[0] == base]


def wait_zk_entries(zkc, m, want, rel="L", timeout=GRANT_TIMEOUT):
    """Wait until the queue in ZooKeeper is exactly `want` (a list)."""
    seen = []

    def cond():
        now = zk_entries(zkc, m, rel)
        seen[:] = [now]
        return now == list(want)
    try:
        wait_for(cond, timeout, "queue %r" % (want,))
    except AssertionError:
        raise AssertionError("queue of %s in ZooKeeper is %r, expected %r"
                             % (m.zkpath(rel), seen and seen[0], want))
