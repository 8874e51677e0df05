"""Live interoperability with the lock recipes of other ZooKeeper clients.

An Apache Curator InterProcessMutex (Java, libcurator-recipes-java) and a
kazoo Lock (python3-kazoo) contend on the very znode that a zklockfs lock
directory stands for: each excludes a zklockfs holder and is excluded by it,
in both orders; each lists the other's entries in its own queue
(getParticipantNodes(), contenders()); `ls` on the mount shows theirs in
queue order. The two scenarios, a client waiting for a zklockfs
holder and zklockfs waiting for a client's holder, are written once and
run for each client through a small adapter (Client: its naming, its
entries' names, what it shows of the queue). Then all three kinds of client at once, under contention.
go-zookeeper's zk.Lock (Go, golang-github-samuel-go-zookeeper-dev) waits
behind a zklockfs entry (exclusive or shared), watching it, and keeps a
zklockfs opener waiting, in both orders.

The foreign clients are child processes driven over stdin/stdout lines:
tests/interop/CuratorLock.java (compiled once per session with javac),
tests/interop/kazoo_lock.py (run by /usr/bin/python3) and
tests/interop/go_lock.go (built once per session, offline, in GOPATH mode
with Debian's golang-go). When kazoo, a JDK, the Curator jars, Go or the Go
client are missing the tests say SKIPPED with the reason.
"""

import json
import os
import select
import re
import shutil
import subprocess
import tempfile
import time

import pytest

import harness
from harness import (RDWR, session_watches, lock_state, lockdir, GRANT_TIMEOUT, NOT_GRANTED_WAIT, PY, SHARED, SLOW, WRITE,
                     XATTR_HOLDERS, Locker, entries,
                     getxattr_str, parse_entry, read_file, seq_of,
                     start_waiter, take, wait_for, wait_gone, wait_no_entries)

INTEROP = os.path.join(harness.REPO, "tests", "interop")
JAVA_SRC = os.path.join(INTEROP, "CuratorLock.java")
KAZOO_HELPER = os.path.join(INTEROP, "kazoo_lock.py")
GO_SRC = os.path.join(INTEROP, "go_lock.go")
GOPATH = os.environ.get("ZKLOCKFS_GOPATH", "/usr/share/gocode")
GO_ZK_PKG = "github.com/samuel/go-zookeeper/zk"
JARDIR = os.environ.get("ZKLOCKFS_JAVA_JARS", "/usr/share/java")
# the manifests' Class-Path of these brings the rest (netty, jackson, ...)
CURATOR_JARS = ("curator-recipes.jar", "curator-framework.jar",
                "curator-client.jar", "zookeeper.jar", "zookeeper-jute.jar",
                "guava.jar", "slf4j-api.jar")
JVM_FLAGS = ["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
             "-Xss512k", "-Xmx128m"]

# a JVM with Curator takes 1-3 s to connect; kazoo well under 1 s
START_TIMEOUT = 30.0 * SLOW
TIMEOUT_MS = 1000                 # a foreign acquire that must time out
WAIT_LONG_S = 60                  # a foreign acquire that must be granted

CURATOR_NODE = re.compile(r"^_c_[0-9a-f-]{36}-lock-\d{10}$")
KAZOO_NODE = re.compile(r"^[0-9a-f]{32}__lock__\d{10}$")
# zk.Lock: CreateProtectedEphemeralSequential(LOCKPATH + "/lock-")
GO_NODE = re.compile(r"^_c_[0-9a-f]{32}-lock-\d{10}$")

pytestmark = pytest.mark.timeout(45)


# --- environment: JDK + Curator jars, kazoo ------------------------------------

def _tool(name):
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", name), os.X_OK):
        return os.path.join(home, "bin", name)
    return shutil.which(name)


@pytest.fixture(scope="session")
def curator_cp(tmp_path_factory):
    """Compile CuratorLock.java once per session; the runtime classpath."""
    javac = _tool("javac")
    java = harness.JAVA if os.access(harness.JAVA, os.X_OK) else _tool("java")
    if not javac or not java:
        pytest.skip("Curator interop: no JDK (javac/java not found); install "
                    "default-jdk-headless")
    jars = [os.path.join(JARDIR, j) for j in CURATOR_JARS]
    missing = [j for j in jars if not os.path.isfile(j)]
    if missing:
        pytest.skip("Curator interop: missing %s; install "
                    "libcurator-recipes-java" % ", ".join(missing))
    out = str(tmp_path_factory.mktemp("curator-interop"))
    r = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-d", out,
                        "-cp", ":".join(jars), JAVA_SRC],
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        pytest.fail("javac %s failed:\n%s" % (JAVA_SRC,
                                              r.stderr.decode("utf-8", "replace")),
                    pytrace=False)
    cp = [out] + jars
    nop = os.path.join(JARDIR, "slf4j-nop.jar")     # keeps the client quiet
    if os.path.isfile(nop):
        cp.append(nop)
    return {"java": java, "cp": ":".join(cp)}


@pytest.fixture(scope="session")
def kazoo_ok():
    r = subprocess.run([PY, "-c", "import kazoo.client, kazoo.recipe.lock, "
                        "kazoo.version; print(kazoo.version.__version__)"],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        last = (r.stderr.decode("utf-8", "replace").strip().splitlines()
                or ["?"])[-1]
        pytest.skip("kazoo interop: kazoo not importable by %s (%s); install "
                    "python3-kazoo" % (PY, last))
    return r.stdout.decode().strip()


@pytest.fixture(scope="session")
def go_lock_bin(tmp_path_factory):
    """Build go_lock.go once per session (GOPATH mode, offline, Debian's
    packaged go-zookeeper); the binary's path."""
    go = shutil.which("go") or ("/usr/lib/go/bin/go"
                                if os.access("/usr/lib/go/bin/go", os.X_OK)
                                else None)
    if not go:
        pytest.skip("Go interop: no Go toolchain (go not found); install "
                    "golang-go")
    if not os.path.isfile(os.path.join(GOPATH, "src", GO_ZK_PKG, "lock.go")):
        pytest.skip("Go interop: %s not in GOPATH %s; install "
                    "golang-github-samuel-go-zookeeper-dev"
                    % (GO_ZK_PKG, GOPATH))
    out = str(tmp_path_factory.mktemp("go-interop"))
    env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH, GOFLAGS="",
               GOCACHE=os.path.join(out, "cache"), CGO_ENABLED="0",
               GOPROXY="off")
    exe = os.path.join(out, "go_lock")
    try:
        r = subprocess.run([go, "build", "-o", exe, GO_SRC], env=env,
                           cwd=out, capture_output=True,
                           timeout=180 * SLOW)
    except subprocess.TimeoutExpired:
        pytest.fail("go build %s took over %.0f s" % (GO_SRC, 180 * SLOW),
                    pytrace=False)
    if r.returncode != 0:
        pytest.fail("go build %s failed:\n%s"
                    % (GO_SRC, r.stderr.decode("utf-8", "replace")),
                    pytrace=False)
    return exe


# --- the foreign contenders ------------------------------------------------------

class Contender:
    """A child process that answers commands with lines (see the helpers).
    Answers of a waiting `acquire` come whenever they come: lines read while
    looking for another answer are kept for later."""

    def __init__(self, argv, label):
        self.label = label
        self._err = tempfile.TemporaryFile()
        self.proc = harness.spawn(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self._err,
                                  bufsize=0)
        self.pid = self.proc.pid
        self._lines = harness.Lines(self.proc.stdout)
        self._kept = []
        self.ready = False

    def __repr__(self):
        return "<%s pid=%d>" % (self.label, self.pid)

    def stderr(self, n=40):
        try:
            self._err.seek(0)
            lines = self._err.read().decode("utf-8", "replace").splitlines()
        except (OSError, ValueError):
            return ""
        return "\n".join(lines[-n:])

    def _fail(self, what):
        raise AssertionError("%s (pid %d): %s\n--- its stderr:\n%s"
                             % (self.label, self.pid, what, self.stderr()))

    def send(self, line):
        try:
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()
        except OSError as e:
            self._fail("cannot send %r: %s" % (line, e))

    def _take(self, words):
        for i, line in enumerate(self._kept):
            if line.split(" ", 1)[0] in words:
                return self._kept.pop(i)
        return None

    def get_any(self, words, timeout):
        """The next line whose first word is one of `words`, as (word, rest),
        or None if none came within timeout. An `error` line fails the test;
        other lines are kept for later."""
        deadline = time.monotonic() + timeout
        while True:
            line = self._take(words)
            if line is not None:
                w, _, rest = line.partition(" ")
                return w, rest
            err = self._take(("error",))
            if err is not None:
                self._fail(err)
            try:
                line = self._lines.readline(max(0.0, deadline -
                                                time.monotonic()))
            except TimeoutError:
                return None
            if line is None:
                self._fail("exited (rc=%r) while %r was awaited"
                           % (self.proc.poll(), words))
            self._kept.append(line.strip())

    def get(self, word, timeout):
        """The text after `word` of the next line starting with it, or None."""
        r = self.get_any((word,), timeout)
        return None if r is None else r[1]

    def expect(self, word, timeout=GRANT_TIMEOUT):
        v = self.get(word, timeout)
        if v is None:
            self._fail("no %r within %.1fs (kept lines: %r)"
                       % (word, timeout, self._kept))
        return v

    def wait_ready(self, timeout=START_TIMEOUT):
        if not self.ready:
            self.expect("ready", timeout)
            self.ready = True
        return self

    def acquire_must_time_out(self, arg):
        self.send("acquire %s" % arg)
        r = self.get_any(("acquired", "timeout"),
                         TIMEOUT_MS / 1000.0 + GRANT_TIMEOUT)
        if r is None:
            self._fail("acquire %s: no answer" % arg)
        assert r[0] == "timeout", \
            "%s acquired the lock while it is held" % self.label

    def still_waiting(self, duration=NOT_GRANTED_WAIT):
        assert self.get("acquired", duration) is None, \
            "%s acquired the lock while it is held" % self.label

    def quit(self, timeout=10.0):
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.get("bye", timeout)
            except AssertionError:
                pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


class Curator(Contender):
    def __init__(self, env, connect, zpath):
        super().__init__([env["java"]] + JVM_FLAGS +
                         ["-cp", env["cp"], "CuratorLock", connect, zpath],
                         "Curator InterProcessMutex")

    def acquire(self, ms=WAIT_LONG_S * 1000):
        self.send("acquire %d" % ms)

    def acquire_must_time_out(self):
        super().acquire_must_time_out(TIMEOUT_MS)

    def participants(self):
        self.send("participants")
        return self.expect("participants").split()

    def release(self):
        self.send("release")
        self.expect("released")


class Kazoo(Contender):
    def __init__(self, hosts, zpath, ident, kind="lock"):
        super().__init__([PY, KAZOO_HELPER, "--kind", kind, "--identifier",
                          ident, hosts, zpath], "kazoo %s" % kind)
        self.ident = ident

    def acquire(self, seconds=WAIT_LONG_S):
        self.send("acquire %g" % seconds)

    def acquire_must_time_out(self):
        super().acquire_must_time_out("%g" % (TIMEOUT_MS / 1000.0))

    def contenders(self):
        self.send("contenders")
        return json.loads(self.expect("contenders"))

    def node(self):
        self.send("node")
        return self.expect("node")

    def release(self):
        self.send("release")
        self.expect("released")


class GoLock(Contender):
    """go-zookeeper zk.Lock on a lock znode; .session is its session id."""

    def __init__(self, exe, connect, zpath):
        super().__init__([exe, connect, zpath], "go-zookeeper zk.Lock")
        self.session = None

    def wait_ready(self, timeout=START_TIMEOUT):
        if not self.ready:
            self.session = int(self.expect("ready", timeout), 16)
            self.ready = True
        return self

    def acquire(self):
        self.send("acquire")

    def release(self):
        self.send("release")
        self.expect("released")


# --- helpers -----------------------------------------------------------------------


def zpath_of(mount_factory, name="L"):
    return mount_factory.root.rstrip("/") + "/" + name


def new_entry(d, before, pattern, timeout=GRANT_TIMEOUT):
    """The one new entry of d (not in `before`) whose name matches pattern."""
    def find():
        new = [n for n in entries(d) if n not in before and pattern.match(n)]
        assert len(new) <= 1, "several new entries: %r" % new
        return new[0] if new else None
    return wait_for(find, timeout, "a foreign entry matching %s in %s (now %r)"
                    % (pattern.pattern, d, os.listdir(d)))


def assert_queue(d, expected):
    """`ls` (readdir order) of d shows exactly `expected`, in that order,
    which is also ascending sequence order."""
    got = entries(d)
    assert got == expected, "ls %s: %r, expected %r" % (d, got, expected)
    seqs = [seq_of(n) for n in got]
    assert seqs == sorted(seqs), "ls %s not in sequence order: %r" % (d, got)
    # what ls -f shows: entries come first, in the same order
    assert os.listdir(d)[:len(expected)] == expected


def nonblocking_open_fails(path, flags=WRITE):
    lk = Locker(path, flags | os.O_NONBLOCK)
    assert lk.wait_error() == "EAGAIN"


def zklockfs_data(d, entry):
    return read_file(os.path.join(d, entry)).decode("utf-8", "replace")


# --- each client against zklockfs, both ways -----------------------------------------

class Client:
    """What the two scenarios below ask of a foreign client: its mount's
    naming, its entries' names, how it starts on a lock's znode, whether
    its acquire can time out, and what it shows of the queue (each check a
    method; the default shows nothing). `fixture` names what the client
    needs (the test is skipped without it), `contender` is its Contender,
    started as contender(what the fixture gave, host:port, lock znode)."""
    naming = None
    times_out = True
    fixture = None
    contender = None

    def __init__(self, request):
        self.needs = request.getfixturevalue(self.fixture)

    def start(self, zk, zpath):
        return self.contender(self.needs, zk.hostport, zpath)

    def marker(self, flags):
        return "-lock-" if flags == WRITE else "-read-lock-"

    def queued_behind(self, c, d, h, cname, m, zk):
        """c queued behind zklockfs holder h: what c shows of the queue."""

    def after_grant(self, c):
        """c granted, nobody behind it."""

    def holding_ahead_of(self, c, d, cname, w):
        """c holds, zklockfs waiter w behind it."""

    def keeps_out_after(self, c, d, w):
        """w holds, after c gave the lock back: c is kept out."""
        c.acquire_must_time_out()

    def after_waiter(self, c):
        """w gave the lock back."""


class CuratorClient(Client):
    node = CURATOR_NODE
    fixture = "curator_cp"
    contender = Curator

    def queued_behind(self, c, d, h, cname, m, zk):
        assert c.participants() == [h.entry, cname]

    def holding_ahead_of(self, c, d, cname, w):
        assert c.participants() == [cname, w.entry]

    def keeps_out_after(self, c, d, w):
        c.acquire_must_time_out()
        assert c.participants() == [w.entry]


class KazooClient(Client):
    naming = "kazoo"
    node = KAZOO_NODE
    fixture = "kazoo_ok"

    def marker(self, flags):
        return "__lock__" if flags == WRITE else "__rlock__"

    def start(self, zk, zpath):
        return Kazoo(zk.hostport, zpath, "kazoo-contender")

    def queued_behind(self, c, d, h, cname, m, zk):
        # kazoo learns its node's name when the create's answer arrives
        wait_for(lambda: c.node() == cname, GRANT_TIMEOUT,
                 "kazoo to report its node %s" % cname)
        cont = c.contenders()
        assert len(cont) == 2, cont
        assert "pid=%d" % h.pid in cont[0].splitlines(), cont
        assert cont[0] == zklockfs_data(d, h.entry)
        assert cont[1] == c.ident

    def after_grant(self, c):
        assert c.contenders() == [c.ident]

    def holding_ahead_of(self, c, d, cname, w):
        cont = c.contenders()
        assert len(cont) == 2 and cont[0] == c.ident, cont
        assert "pid=%d" % w.pid in cont[1].splitlines(), cont


class GoClient(Client):
    """go-zookeeper's zk.Lock: no timed acquire; it queues behind a
    zklockfs entry of either kind, watching it."""
    node = GO_NODE
    times_out = False
    fixture = "go_lock_bin"
    contender = GoLock

    def queued_behind(self, c, d, h, cname, m, zk):
        hpath = m.zkpath("L/" + h.entry)
        wait_for(lambda: hpath in session_watches(zk, c.session), GRANT_TIMEOUT,
                 "zk.Lock (session 0x%x) to watch the zklockfs entry %s (wchc: %r)"
                 % (c.session, hpath, zk.four("wchc")))

    def keeps_out_after(self, c, d, w):
        c.acquire()
        again = new_entry(d, {w.entry}, GO_NODE)
        assert_queue(d, [w.entry, again])
        c.still_waiting()

    def after_waiter(self, c):
        c.expect("acquired")
        c.release()


CLIENTS = {"curator": CuratorClient, "kazoo": KazooClient, "go": GoClient}


@pytest.mark.parametrize("name,flags", [("curator", WRITE), ("kazoo", WRITE),
                                        ("go", WRITE), ("go", SHARED)],
                         ids=["curator", "kazoo", "go-exclusive", "go-shared"])
def test_client_waits_for_zklockfs_holder(mount, zk, request, name, flags):
    """The client is excluded by a zklockfs holder (and cleans up when its
    acquire times out), queues behind it (both queues show both entries, in
    the same order), and is granted at the holder's close()."""
    client = CLIENTS[name](request)
    c = client.start(zk, zpath_of(mount))      # a JVM starts meanwhile
    m = mount(naming=client.naming)
    d = lockdir(m)
    h = take(d, "fs", flags)
    assert parse_entry(h.entry)[:2] == ("fs", client.marker(flags))
    c.wait_ready()
    if client.times_out:
        c.acquire_must_time_out()
        wait_for(lambda: entries(d) == [h.entry], GRANT_TIMEOUT,
                 "%s's timed-out entry to go (now %r)" % (name, os.listdir(d)))
    c.acquire()
    cname = new_entry(d, {h.entry}, client.node)
    assert_queue(d, [h.entry, cname])
    client.queued_behind(c, d, h, cname, m, zk)
    assert lock_state(os.path.join(d, cname)) == "waiting"
    assert lock_state(os.path.join(d, h.entry)) == "held"
    c.still_waiting()

    h.release()
    c.expect("acquired")
    wait_gone(d, h.entry)
    assert getxattr_str(d, XATTR_HOLDERS).split() == [cname]
    assert lock_state(os.path.join(d, cname)) == "held"
    client.after_grant(c)
    c.release()
    c.quit()
    wait_no_entries(d)


@pytest.mark.parametrize("name", ["curator", "kazoo", "go"])
def test_zklockfs_waits_for_client_holder(mount, zk, request, name):
    """A holder of the client keeps zklockfs openers out (O_NONBLOCK:
    EAGAIN; else the open waits) until it gives the lock back; then
    zklockfs keeps the client out."""
    client = CLIENTS[name](request)
    c = client.start(zk, zpath_of(mount))
    m = mount(naming=client.naming)
    d = lockdir(m)
    c.wait_ready()
    c.acquire()
    c.expect("acquired")
    cname = new_entry(d, set(), client.node)
    assert_queue(d, [cname])
    assert lock_state(os.path.join(d, cname)) == "held"

    nonblocking_open_fails(os.path.join(d, "nb"))
    wait_for(lambda: entries(d) == [cname], GRANT_TIMEOUT,
             "the O_NONBLOCK entry to go (now %r)" % os.listdir(d))
    w = start_waiter(d, "fs")
    assert parse_entry(w.entry)[:2] == ("fs", client.marker(WRITE))
    w.assert_waiting()
    assert_queue(d, [cname, w.entry])
    assert "pid=%d" % w.pid in zklockfs_data(d, w.entry).splitlines()
    client.holding_ahead_of(c, d, cname, w)

    c.release()
    w.wait_granted()
    wait_gone(d, cname)
    client.keeps_out_after(c, d, w)
    w.release()
    client.after_waiter(c)
    c.quit()
    wait_no_entries(d)


# --- Curator InterProcessMutex vs zklockfs (naming=curator) ------------------------

def test_curator_and_zklockfs_shared_lock_exclude_each_other(mount, zk,
                                                             curator_cp):
    """A zklockfs reader (NAME-read-lock-N) is a contender to Curator's mutex,
    and a Curator holder keeps zklockfs readers out."""
    c = Curator(curator_cp, zk.hostport, zpath_of(mount))
    m = mount()
    d = lockdir(m)
    r = take(d, "r", SHARED)
    assert parse_entry(r.entry)[1] == "-read-lock-"
    c.wait_ready()
    c.acquire_must_time_out()
    c.acquire()
    cname = new_entry(d, {r.entry}, CURATOR_NODE)
    assert c.participants() == [r.entry, cname]
    c.still_waiting()
    r.release()
    c.expect("acquired")

    nonblocking_open_fails(os.path.join(d, "r2"), SHARED)
    r3 = start_waiter(d, "r3", SHARED)
    r3.assert_waiting()
    assert_queue(d, [cname, r3.entry])
    c.release()
    r3.wait_granted()
    r3.release()
    c.quit()
    wait_no_entries(d)


# --- kazoo Lock vs zklockfs (naming=kazoo) -----------------------------------------

def test_kazoo_rw_locks_and_zklockfs_shared_lock(mount, zk, kazoo_ok):
    """kazoo's ReadLock shares with a zklockfs reader (NAME__rlock__N); its
    WriteLock is kept out by that reader and keeps zklockfs readers out."""
    m = mount(naming="kazoo")
    d = lockdir(m)
    z = m.zkpath("L")
    kr = Kazoo(zk.hostport, z, "kazoo-reader", kind="read")
    kw = Kazoo(zk.hostport, z, "kazoo-writer", kind="write")
    r = take(d, "r", SHARED)
    assert parse_entry(r.entry)[:2] == ("r", "__rlock__")
    kr.wait_ready()
    kw.wait_ready()

    kr.acquire()
    kr.expect("acquired")                 # shares with the zklockfs reader
    kw.acquire_must_time_out()
    nonblocking_open_fails(os.path.join(d, "w"))      # readers hold
    kw.acquire()
    kw.still_waiting()
    r.release()
    kw.still_waiting()                    # kazoo's reader still holds
    kr.release()
    kw.expect("acquired")

    nonblocking_open_fails(os.path.join(d, "r2"), SHARED)
    r3 = start_waiter(d, "r3", SHARED)
    r3.assert_waiting()
    kw.release()
    r3.wait_granted()
    r3.release()
    kr.quit()
    kw.quit()
    wait_no_entries(d)


# --- all three at once -------------------------------------------------------------

CYCLER = r'''
import ctypes, os, signal, sys, time
ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)   # PR_SET_PDEATHSIG
path, n, pause, log, tag = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
def app(s):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, s.encode())
    os.close(fd)
print("ready", flush=True)
if sys.stdin.readline().split()[:1] != ["cycle"]:
    sys.exit(0)
for i in range(n):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY)
    app("enter %s\n" % tag)
    time.sleep(pause)
    app("exit %s\n" % tag)
    os.close(fd)
print("cycled %d" % n, flush=True)
'''


@pytest.mark.timeout(60)
def test_mutual_exclusion_curator_kazoo_zklockfs(mount, zk, curator_cp,
                                                 kazoo_ok, scratch):
    """Two zklockfs mounts, a Curator mutex and two kazoo locks take turns on
    one lock: never two in the critical section. kazoo runs as "compat"
    (nodes <uuid>-lock-N, extra_lock_patterns=-lock-): Curator orders
    children by the number after "lock-" and misplaces kazoo's native
    __lock__ names, which is between those two, not zklockfs's business."""
    cycles, pause_ms = 4, 60
    log = os.path.join(scratch, "cs.log")
    z = zpath_of(mount)
    c = Curator(curator_cp, zk.hostport, z)
    m1 = mount()
    m2 = mount()
    d = lockdir(m1)
    wait_for(lambda: os.path.isdir(m2.p("L")), 5, "L on the second mount")
    ks = [Kazoo(zk.hostport, z, "kazoo-%d" % i, kind="compat") for i in (1, 2)]
    fs = [Contender([PY, "-c", CYCLER, mm.p("L", "fs%d" % i), str(cycles),
                     str(pause_ms / 1000.0), log, "zklockfs%d" % i],
                    "zklockfs cycler %d" % i)
          for i, mm in ((1, m1), (2, m2))]
    clients = [c] + ks + fs
    tags = ["curator", "kazoo1", "kazoo2", "zklockfs1", "zklockfs2"]
    for cl in clients:
        cl.wait_ready()
    for cl, tag in zip(clients, tags):
        cl.send("cycle %d %d %s %s" % (cycles, pause_ms, log, tag))
    # the queue, while they contend, holds all three kinds of entry
    seen = set()

    def kinds():
        for n in entries(d):
            seen.add("curator" if CURATOR_NODE.match(n) else
                     "zklockfs" if n.startswith("fs") else "kazoo")
        return len(seen) == 3
    try:
        wait_for(kinds, 10 * SLOW, "entries of all three kinds")
    except AssertionError:
        pass                         # reported below with the log if need be
    for cl in clients:
        cl.expect("cycled", 20 * SLOW)
    with open(log) as f:
        lines = f.read().split()
    events = list(zip(lines[0::2], lines[1::2]))
    inside = None
    for i, (what, who) in enumerate(events):
        if what == "enter":
            assert inside is None, \
                "%s entered while %s was inside (event %d of %r)" \
                % (who, inside, i, events)
            inside = who
        else:
            assert what == "exit" and who == inside, (i, events)
            inside = None
    assert inside is None
    for tag in tags:
        assert events.count(("enter", tag)) == cycles, (tag, events)
    assert seen == {"curator", "kazoo", "zklockfs"}, seen
    for cl in clients:
        if cl in fs:
            cl.proc.stdin.close()
            cl.proc.wait(10)
        else:
            cl.quit()
    wait_no_entries(d)


# --- revocation (docs/SPEC.md, "Beyond the mutex") ------------------------------

def test_our_revoke_makes_a_revocable_curator_holder_release(mount, zk, curator_cp):
    """setfattr user.zklockfs.revoke on a revocable Curator holder's node
    sets its data to __REVOKE__: Curator's listener releases, and the
    zklockfs waiter behind it is granted."""
    c = Curator(curator_cp, zk.hostport, zpath_of(mount))
    m = mount()
    d = lockdir(m)
    c.wait_ready()
    c.send("revocable")
    c.expect("revocable")
    c.acquire()
    c.expect("acquired")
    cname = new_entry(d, set(), CURATOR_NODE)
    w = start_waiter(d, "fs")
    w.assert_waiting()
    os.setxattr(os.path.join(d, cname), "user.zklockfs.revoke", b"1")
    c.expect("revoked-released")
    w.wait_granted()
    w.release()
    c.quit()
    wait_no_entries(d)


def test_curator_revoker_reaches_our_holder(mount, zk, curator_cp):
    """Curator's Revoker.attemptRevoke() on a zklockfs holder's entry: its
    descriptor reports POLLPRI and user.zklockfs.state reads revoking; the
    lock is not broken."""
    c = Curator(curator_cp, zk.hostport, zpath_of(mount))
    m = mount()
    d = lockdir(m)
    h = take(d, "fs", RDWR)
    c.wait_ready()
    assert not int(h.ok("poll 0")) & select.POLLPRI
    c.send("revoke " + zpath_of(mount) + "/" + h.entry)
    c.expect("revoke-sent")
    ev = int(h.ok("pollpri %d" % (GRANT_TIMEOUT * 1000), timeout=GRANT_TIMEOUT + 5))
    assert ev & select.POLLPRI and not ev & (select.POLLERR | select.POLLHUP), ev
    assert lock_state(h) == "revoking"
    assert entries(d) == [h.entry]
    h.release()
    c.quit()
    wait_no_entries(d)
