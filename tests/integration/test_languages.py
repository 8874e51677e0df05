"""Conformance in the languages people use: real programs (C, Python, Go,
Node, Java, Rust, shell; tests/conformance/) take locks the way each
language's programmers do, and must get the lock docs/SPEC.md promises
("Taking and giving back a lock", "flock(2), fcntl(2) and flock(1)", "Lock
files").

* Mutual exclusion: every case runs its program's tasks (threads,
  processes, goroutines, pool tasks, coroutines) on one lock, a lock
  directory on a plain mount or a lock file on a `-o lockfiles` mount, on
  one mount and across two mounts of one root (one program per mount).
  Each task's critical section appends "enter ID NS" and "leave ID NS" to
  one log outside the mount (O_APPEND: the file's order is the order the
  lines were written; "enter" after the grant, "leave" before the release)
  and sleeps or yields inside, so that a runtime puts another task on the
  holder's OS thread.  No two sections may overlap, and every task must do
  its cycles.  The owner of a lock is the open file description (or, for
  POSIX fcntl/lockf locks, the process), never a thread: a lock two tasks
  of one thread both hold is a false lock.  POSIX record locks are checked
  between processes only (threads of a process share one, as locally).
* One thread, two descriptors: a second open of a held lock directory, and
  a second descriptor's flock(LOCK_EX) of a held lock file, from the
  holder's own thread, wait until the first is given back; LOCK_NB on that
  second descriptor is EWOULDBLOCK.
* Lock trees: each language's standard library walks a tree of lock
  directories (used, no entry held) and removes it; its znodes are gone.

Each program is built once per session (into pytest's temp dir); a
toolchain that is missing fails its tests (tools/install-deps installs
every one): these are the programs the contract is written for.
"""

import collections
import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import harness
from harness import (GRANT_TIMEOUT, PY, SLOW, errname, seen_dir, spawn,
                     wait_for, wait_zk_entries, zk_entries)

CONF = os.path.join(harness.REPO, "tests", "conformance")
TASKS, CYCLES, HOLD_MS = 4, 10, 4
RUN_TIMEOUT = 60 * SLOW            # one program's whole run
ONE_THREAD_TIMEOUT = 20 * SLOW     # reopen, reflock, nb: about 0.3 s each
RUSTC = "/usr/bin/rustc"           # Debian's, as CI on a fresh Debian 12 has it
JVM_FLAGS = ["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
             "-Xss512k", "-Xmx128m"]


# --- building each program once --------------------------------------------

def _need(path, package):
    """path, if it can be run; else the test fails (not skips): a missing
    toolchain is a broken test machine (tools/install-deps)."""
    if path and os.access(path, os.X_OK):
        return path
    pytest.fail("%s not found: install the Debian package %s "
                "(tools/install-deps)" % (path, package), pytrace=False)


def _build(argv, what, cwd, env=None, timeout=180):
    try:
        r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                           timeout=timeout * SLOW)
    except subprocess.TimeoutExpired:
        pytest.fail("%s: build took over %.0f s" % (what, timeout * SLOW),
                    pytrace=False)
    if r.returncode != 0:
        pytest.fail("%s: build failed:\n%s" % (
            what, r.stderr.decode("utf-8", "replace")), pytrace=False)


@pytest.fixture(scope="session")
def c_prog(tmp_path_factory):
    cc = _need(shutil.which("gcc") or "/usr/bin/gcc", "gcc")
    out = str(tmp_path_factory.mktemp("conformance-c"))
    exe = os.path.join(out, "locks")
    _build([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", exe,
            os.path.join(CONF, "locks.c")], "locks.c", out)
    return [exe]


@pytest.fixture(scope="session")
def python_prog():
    return [_need(PY, "python3"), os.path.join(CONF, "locks.py")]


@pytest.fixture(scope="session")
def go_prog(tmp_path_factory):
    go = _need(shutil.which("go") or "/usr/lib/go/bin/go", "golang-go")
    out = str(tmp_path_factory.mktemp("conformance-go"))
    exe = os.path.join(out, "locks")
    env = dict(os.environ, GO111MODULE="off", GOPATH=os.path.join(out, "gopath"),
               GOFLAGS="", GOCACHE=os.path.join(out, "cache"), GOPROXY="off",
               CGO_ENABLED="0")
    _build([go, "build", "-o", exe, os.path.join(CONF, "locks.go")],
           "locks.go", out, env)
    return [exe]


@pytest.fixture(scope="session")
def node_prog():
    node = _need(shutil.which("node") or "/usr/bin/node", "nodejs")
    return [node, os.path.join(CONF, "locks.js")]


@pytest.fixture(scope="session")
def java_prog(tmp_path_factory):
    javac = _need(shutil.which("javac"), "default-jdk-headless")
    java = _need(harness.java_binary(), "default-jdk-headless")
    out = str(tmp_path_factory.mktemp("conformance-java"))
    _build([javac, "-nowarn", "-encoding", "UTF-8", "-d", out,
            os.path.join(CONF, "Locks.java")], "Locks.java", out)
    return [java] + JVM_FLAGS + ["-cp", out, "Locks"]


@pytest.fixture(scope="session")
def rust_prog(tmp_path_factory):
    rustc = _need(RUSTC, "rustc")
    out = str(tmp_path_factory.mktemp("conformance-rust"))
    exe = os.path.join(out, "locks")
    _build([rustc, "-O", "--edition", "2018", "-o", exe,
            os.path.join(CONF, "locks.rs")], "locks.rs", out)
    return [exe]


@pytest.fixture(scope="session")
def shell_prog():
    _need(shutil.which("flock") or "/usr/bin/flock", "util-linux")
    return [_need("/bin/bash", "bash"), os.path.join(CONF, "locks.sh")]


def program(request, lang):
    return request.getfixturevalue(lang + "_prog")


# --- running them -----------------------------------------------------------

class Run:
    """One program started with spawn() (its own session, killed by pid at
    teardown), its output in temp files."""

    def __init__(self, argv, env=None):
        self.argv = argv
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        self.proc = spawn(argv, env=dict(os.environ, **(env or {})),
                          stdin=subprocess.DEVNULL, stdout=self.out,
                          stderr=self.err)

    def wait(self, deadline):
        """Its exit status, or None if it still runs at `deadline` (a
        time.monotonic() value): then it is killed."""
        try:
            return self.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            # its group: the processes it forked too (spawn: own session)
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(15)
            return None

    def _read(self, f):
        f.seek(0)
        return f.read().decode("utf-8", "replace")

    def stdout(self):
        return self._read(self.out)

    def stderr(self, n=20):
        return "\n".join(self._read(self.err).splitlines()[-n:])


def run_one(argv, env=None, timeout=ONE_THREAD_TIMEOUT):
    """Run to completion: (exit status or None on timeout, stdout, stderr)."""
    r = Run(argv, env)
    rc = r.wait(time.monotonic() + timeout)
    return rc, r.stdout(), r.stderr()


def check_log(log):
    """Read the sections' log in its order: (overlaps, sections done per
    task, the first few overlaps described, sections never left).  An
    overlap is a section that began while another complete section was
    inside.  A section never left is one whose program died in it (a task
    that failed ends its program): the lock went with the process, at a
    moment the log does not show, so it is reported as such, not as an
    overlap."""
    with open(log) as f:
        lines = [ln.split() for ln in f.read().split("\n") if ln.strip()]
    inside, done, sections = {}, collections.Counter(), []
    for k, f in enumerate(lines, 1):
        what, tid = f[0], f[1]
        if what == "enter":
            assert tid not in inside, "log line %d: %s entered twice" % (k, tid)
            inside[tid] = k
        elif what == "leave":
            assert tid in inside, "log line %d: %s left without entering" % (k, tid)
            sections.append((inside.pop(tid), k, tid))
            done[tid] += 1
        else:
            raise AssertionError("log line %d: %r" % (k, f))
    overlaps, firsts = 0, []
    for enter, _, tid in sections:
        holders = sorted(t for e, l, t in sections if e < enter < l)
        if holders:
            overlaps += 1
            if len(firsts) < 3:
                firsts.append("log line %d: %s granted while %s held the lock"
                              % (enter, tid, " and ".join(holders)))
    unfinished = ["%s (log line %d)" % (t, k) for t, k in sorted(inside.items())]
    return overlaps, done, firsts, unfinished


# --- the cases --------------------------------------------------------------

Case = collections.namedtuple("Case", "lang mode env tasks procs")


def case(lang, mode, env=None, tasks=TASKS, procs=1, label=None):
    """procs: how many copies of the program in all (one mount: all on it;
    two mounts: split between them)."""
    return pytest.param(Case(lang, mode, env or {}, tasks, procs),
                        id="%s-%s" % (lang, label or mode))


# a lock directory on a plain mount
DIR_CASES = [
    case("c", "dir-threads"),
    case("c", "dir-fork"),
    case("python", "dir-threads"),
    case("python", "dir-pool1"),
    case("python", "dir-pool4"),
    case("python", "dir-asyncio1"),
    case("python", "dir-asyncio4"),
    case("go", "dir", {"GOMAXPROCS": "1"}, label="goroutines-gomaxprocs1"),
    case("go", "dir", label="goroutines"),
    case("node", "callback", {"UV_THREADPOOL_SIZE": "1"}, label="open-closeSync-pool1"),
    case("node", "callback", {"UV_THREADPOOL_SIZE": "4"}, label="open-closeSync-pool4"),
    # fewer tasks than pool threads: the awaited close needs a free one
    case("node", "promises", {"UV_THREADPOOL_SIZE": "4"}, tasks=3,
         label="fs.promises-pool4"),
    case("java", "dir-threads"),
    case("java", "dir-executor1"),
    case("java", "dir-executor4"),
    case("rust", "dir-threads"),
    case("shell", "dir", label="exec-9>"),
]

# a lock file on a -o lockfiles mount
FILE_CASES = [
    case("c", "file-flock-threads"),
    case("c", "file-ofd-threads"),
    case("c", "file-fcntl-fork"),
    case("c", "file-lockf-fork"),
    case("python", "file-threads", label="flock-threads"),
    case("python", "file-pool1", label="flock-pool1"),
    case("python", "file-asyncio1", label="flock-asyncio1"),
    case("python", "file-lockf-procs", label="lockf-processes"),
    case("go", "file", {"GOMAXPROCS": "1"}, label="flock-gomaxprocs1"),
    case("go", "file", label="flock"),
    # FileChannel.lock is the JVM's (a POSIX lock): one task per JVM
    case("java", "file-channel", tasks=1, procs=2, label="FileChannel.lock-2jvms"),
    case("rust", "file-threads", label="flock-threads"),
    case("shell", "flock-cmd", label="flock-x-FILE-cmd"),
    case("shell", "flock-fd", label="exec-9>F-flock-9"),
]


def mutual_exclusion(request, mount, zkc, scratch, c, nmounts, lockfiles):
    argv0 = program(request, c.lang)
    ms = [mount(opts=("lockfiles",) if lockfiles else ()) for _ in range(nmounts)]
    if lockfiles:
        first = ms[0].p("L.lock")
        os.close(os.open(first, os.O_CREAT | os.O_WRONLY))
        paths = [first] + [m.p("L.lock") for m in ms[1:]]
        for p in paths[1:]:
            wait_for(lambda: os.path.exists(p), GRANT_TIMEOUT, "%s to appear" % p)
    else:
        os.mkdir(ms[0].p("L"))
        paths = [ms[0].p("L")] + [seen_dir(m, "L") for m in ms[1:]]
    log = os.path.join(scratch, "log")
    open(log, "w").close()
    copies = max(1, c.procs // nmounts)
    runs = []
    for j, p in enumerate(paths, 1):
        for k in range(copies):
            prefix = "m%d%s" % (j, "abcdefgh"[k])
            runs.append(Run(argv0 + [c.mode, log, str(c.tasks), str(CYCLES),
                                     str(HOLD_MS), prefix, p], c.env))
    deadline = time.monotonic() + RUN_TIMEOUT
    codes = [r.wait(deadline) for r in runs]
    overlaps, done, firsts, unfinished = check_log(log)
    total = sum(done.values())
    problems = []
    if overlaps:
        problems.append("false lock: %d of %d sections began while another "
                        "task held the lock; %s" % (overlaps, total,
                                                    "; ".join(firsts)))
    for r, rc in zip(runs, codes):
        if rc is None:
            problems.append("%s did not finish within %.0f s"
                            % (" ".join(r.argv[-7:]), RUN_TIMEOUT))
        elif rc != 0:
            problems.append("%s exited %d: %s" % (" ".join(r.argv[-7:]), rc,
                                                  r.stderr().strip()))
    if unfinished:
        problems.append("sections entered and never left (their program "
                        "failed in them): %s" % ", ".join(unfinished))
    want = len(runs) * c.tasks
    short = sorted("%s %d" % (t, n) for t, n in done.items() if n != CYCLES)
    if len(done) != want or short:
        problems.append("%d of %d tasks did their %d sections (%d sections "
                        "in all; short: %s)" % (
                            sum(1 for n in done.values() if n == CYCLES), want,
                            CYCLES, total, ", ".join(short) or "none"))
    assert not problems, "\n".join(problems)
    if not lockfiles:
        # every entry went with its last close
        wait_zk_entries(zkc, ms[0], [], "L")


@pytest.mark.timeout(90)
@pytest.mark.parametrize("nmounts", [1, 2], ids=["one-mount", "two-mounts"])
@pytest.mark.parametrize("c", DIR_CASES)
def test_lock_directory_excludes(request, mount, zkc, scratch, c, nmounts):
    """Tasks opening entries of one lock directory: never two sections at
    once, whatever thread each open ran on."""
    mutual_exclusion(request, mount, zkc, scratch, c, nmounts, lockfiles=False)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("nmounts", [1, 2], ids=["one-mount", "two-mounts"])
@pytest.mark.parametrize("c", FILE_CASES)
def test_lock_file_excludes(request, mount, zkc, scratch, c, nmounts):
    """Tasks locking one lock file, each through its own descriptor (or
    process, for POSIX locks): never two sections at once; a descriptor's
    flock from a thread that holds through another one waits."""
    mutual_exclusion(request, mount, zkc, scratch, c, nmounts, lockfiles=True)


# --- one thread, two descriptors ----------------------------------------------

def one_thread(request, lang, mode, path):
    argv = program(request, lang) + [mode, "-", "1", "1", "1", "x", path]
    rc, out, err = run_one(argv)
    assert rc is not None, "%s: no answer within %.0f s (stdout %r)" % (
        mode, ONE_THREAD_TIMEOUT, out)
    assert rc == 0, "%s exited %d: %s" % (mode, rc, err.strip())
    return out.split()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["c", "python", "go", "rust", "java"])
def test_second_open_from_the_holding_thread_waits(request, mount, lang):
    """The thread that holds the lock through PATH/a opens PATH/b: that open
    waits until another thread closes PATH/a (about 300 ms later); it is
    not granted on the entry already held."""
    m = mount()
    d = harness.lockdir(m)
    out = one_thread(request, lang, "reopen", d)
    assert out[0] == "granted", "the second open failed: %s" % " ".join(out)
    assert out[1] == "1", "the second open was granted while the same " \
        "thread's first descriptor held the lock"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["c", "python", "go", "rust"])
def test_second_descriptor_flock_from_the_holding_thread_waits(request, mount, lang):
    """A lock file: the thread that holds it through one descriptor asks
    flock(LOCK_EX) through a second: it waits until another thread gives
    the first back with LOCK_UN, as a local lock file does; never EDEADLK."""
    m = mount(opts=("lockfiles",))
    out = one_thread(request, lang, "reflock", m.p("F.lock"))
    assert out[0] == "granted", "flock(LOCK_EX) on the second descriptor " \
        "failed with %s" % errname(int(out[1]))
    assert out[1] == "1", "flock(LOCK_EX) on the second descriptor was " \
        "granted while the first held the lock"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["c", "python", "go", "rust", "shell"])
def test_second_descriptor_lock_nb_is_ewouldblock(request, mount, lang):
    """A lock file held through one descriptor: LOCK_EX|LOCK_NB through a
    second, from the holder's thread (the shell: from the holder's script)
    fails with EWOULDBLOCK (flock(1): status 1); once the first gives it
    back, a blocking LOCK_EX on the second is granted."""
    m = mount(opts=("lockfiles",))
    out = one_thread(request, lang, "nb", m.p("F.lock"))
    got = dict(zip(out[0::2], out[1::2]))
    if lang == "shell":
        assert got.get("nb") == "1", "flock -n on a second descriptor: %r" % got
    else:
        nb = int(got["nb"])
        assert nb == errno.EWOULDBLOCK, "LOCK_NB on a second descriptor: %s, not " \
            "EWOULDBLOCK" % ("granted" if nb == 0 else errname(nb))
    assert got.get("after") == "0", "LOCK_EX after the first gave it back: " \
        "%r" % got


# --- lock trees -----------------------------------------------------------------

TREE = ["a", "a/b", "a/b/c", "a/d", "e"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lang", ["go", "java", "python", "node", "rust", "shell"])
def test_walk_and_remove_a_lock_tree(request, mount, zkc, lang):
    """A tree of lock directories, each used once (an entry taken and given
    back): the language's standard library walks it (every directory), lists
    its top and removes it all; the znodes are gone from ZooKeeper."""
    argv = program(request, lang)
    m = mount()
    root = m.p("tree")
    os.mkdir(root)
    for d in TREE:
        os.mkdir(os.path.join(root, d))
    for d in TREE:
        os.close(os.open(os.path.join(root, d, "x"), os.O_CREAT | os.O_WRONLY))
    wait_for(lambda: not any(zk_entries(zkc, m, "tree/" + d) for d in TREE),
             GRANT_TIMEOUT, "every entry of the tree gone")
    rc, out, err = run_one(argv + ["walk", root], timeout=30 * SLOW)
    assert rc == 0, "walking and removing the tree: exit %r: %s" % (rc, err.strip())
    lines = [ln.partition(" ") for ln in out.splitlines()]
    assert sorted(p for w, _, p in lines if w == "walk") == sorted(TREE), out
    assert sorted(p for w, _, p in lines if w == "list") == ["a", "e"], out
    assert out.splitlines()[-1] == "removed", out
    assert not os.path.exists(root)
    assert zkc.exists(m.zkpath("tree")) is None, "the tree's znode is still there"
