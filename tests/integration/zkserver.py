"""ZooKeeper servers for the zklockfs integration tests.

  * ZooKeeperServer   - a real standalone ZooKeeper on a free local port.
  * ZooKeeperEnsemble - n of them (QuorumMember) forming one ensemble.
  * zookeeper()       - the one way a fixture gets either: start, yield,
                        stop by pid.

Every server is launched by ZooKeeperServer._launch (one java command line)
and killed by procs.kill9; `ruok`, `srvr`, `cons`, `mntr` through .four().
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import zkclient
from procs import kill9, pid_listens_on

JAVA = os.environ.get("JAVA", "/usr/bin/java")


def java_binary():
    """$JAVA (default /usr/bin/java) if it can be run, else java on PATH."""
    return JAVA if os.access(JAVA, os.X_OK) else shutil.which("java")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def zoo_cfg(datadir, port, sync_limit, extra="", address="127.0.0.1"):
    """The zoo.cfg of a test server on `address`:`port` (a standalone one or
    an ensemble member, which adds its `extra` lines)."""
    return ("tickTime=500\n"
            "initLimit=10\n"
            "syncLimit=%d\n"
            "dataDir=%s\n"
            "clientPort=%d\n"
            "clientPortAddress=%s\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr,mntr,cons,wchc,wchs,dump\n"
            "maxClientCnxns=0\n"
            "minSessionTimeout=1000\n"
            "maxSessionTimeout=60000\n"
            "%s" % (sync_limit, datadir, port, address, extra))




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


def watches_by_session(zk):
    """{session id: set of paths it has a data watch on} from the wchc 4lw
    of server `zk` (session id lines "0x...", then one tab-indented path a
    line). Like wchp and wchs, wchc lists data watches only (exists, get):
    ZooKeeper 3.8 reports no child watch there."""
    sessions = {}
    cur = None
    for line in zk.four("wchc").splitlines():
        if line.startswith("0x"):
            cur = int(line.strip(), 16)
            sessions.setdefault(cur, set())
        elif line.strip().startswith("/") and cur is not None:
            sessions[cur].add(line.strip())
    return sessions


def session_watches(zk, session):
    """The paths ZooKeeper session `session` watches (wchc)."""
    return watches_by_session(zk).get(session, set())


class ZooKeeperServer:
    def __init__(self, workdir, extra="", jvm_flags=()):
        self.workdir = workdir
        self.extra = extra          # zoo.cfg lines that override ours
        # java options before the main class: system properties that only
        # the command line sets (-Dznode.container.checkIntervalMs=MS)
        self.jvm_flags = list(jvm_flags)
        self.wrap = []              # a command the JVM runs under (nsenter)
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

    def _launch(self, main_class, cfg, xmx):
        """java MAIN_CLASS CFG, logging to self.log, in a session of its own."""
        os.makedirs(self.workdir, exist_ok=True)
        argv = self.wrap + [JAVA, "-Xms32m", "-Xmx" + xmx,
                "-Dzookeeper.root.logger=INFO,CONSOLE",
                "-Dzookeeper.console.threshold=INFO",
                "-Dzookeeper.log.dir=" + self.workdir] + self.jvm_flags + [
                "-cp", zookeeper_classpath(), main_class, cfg]
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(argv, cwd=self.workdir,
                                         stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def kill9(self):
        """kill -9 the server (SIGCONT first: it may be stopped); reap it."""
        kill9(self.proc)

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
            self._launch("org.apache.zookeeper.server.ZooKeeperServerMain",
                         cfg, xmx="512m")
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
        self.kill9()
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
        self.write_cfgs()

    def write_cfgs(self, sync_limit=4):
        """Each member's myid and zoo.cfg, from its .host and its ports;
        @sync_limit ticks: how long a follower serves without its leader."""
        servers = "".join("server.%d=%s:%d:%d\n"
                          % (m.myid, m.host, m.quorum_port, m.election_port)
                          for m in self.members)
        for m in self.members:
            datadir = os.path.join(m.workdir, "data")
            os.makedirs(datadir, exist_ok=True)
            with open(os.path.join(datadir, "myid"), "w") as f:
                f.write("%d\n" % m.myid)
            with open(os.path.join(m.workdir, "zoo.cfg"), "w") as f:
                f.write(zoo_cfg(datadir, m.port, sync_limit=sync_limit,
                                extra="cnxTimeout=1000\n" + servers, address=m.host))

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
            m._launch("org.apache.zookeeper.server.quorum.QuorumPeerMain",
                      os.path.join(m.workdir, "zoo.cfg"), xmx="256m")
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


@contextlib.contextmanager
def zookeeper(tmp_path_factory, name="zookeeper", n=1, extra="", jvm_flags=(),
              paths=()):
    """A ZooKeeper of a fixture's own, in a fresh dir of tmp_path_factory:
    standalone (n=1; `extra` zoo.cfg lines override the test settings,
    `jvm_flags` are java options such as -Dprop=value) or an ensemble of
    n; started (its .started_in: the seconds that took), the znodes
    `paths` made with their parents, yielded, stopped by pid."""
    workdir = str(tmp_path_factory.mktemp(name))
    if n == 1:
        server = ZooKeeperServer(workdir, extra=extra, jvm_flags=jvm_flags)
    else:
        assert not (extra or jvm_flags), \
            "extra zoo.cfg lines and java options are for a standalone server"
        server = ZooKeeperEnsemble(workdir, n)
    t0 = time.monotonic()
    try:
        server.start()
        server.started_in = time.monotonic() - t0
        if paths:
            with server.client() as c:
                for p in paths:
                    c.ensure_path(p)
        yield server
    finally:
        server.stop()
