"""The foreign ZooKeeper lock clients of the interoperability tests
(test_interop.py; Curator also in test_lockfiles.py) and how a test drives
them.

Session fixtures find or build each client once, and skip the test with
the reason when it is missing: curator_cp (tests/interop/CuratorLock.java
compiled with javac against Debian's Curator jars), kazoo_ok (kazoo
importable by /usr/bin/python3, for tests/interop/kazoo_lock.py) and
go_lock_bin (tests/interop/go_lock.go built offline in GOPATH mode with
Debian's go-zookeeper). A test module uses one by importing it by name.
Each client is a child process driven over stdin/stdout lines: Contender,
and Curator, Kazoo and GoLock on a lock's znode; CURATOR_NODE, KAZOO_NODE
and GO_NODE match the names of their entries.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

import harness
from harness import GRANT_TIMEOUT, NOT_GRANTED_WAIT, PY, SLOW

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
