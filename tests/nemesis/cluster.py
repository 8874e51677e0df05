"""The nemesis's cluster on one machine: three ZooKeeper servers forming
one ensemble and three "hosts", each node in a network namespace of its
own (net.py), and the runner in a seventh, "ctl", that every fault spares
so that it can always ask the servers how they are.

    c = Cluster(workdir, logdir, session_ms[, hosts, sync_limit]).start()
    c.servers        # QuorumMember s1..s3, each .node, .host (its address)
    c.hosts          # Host h1..h3: .plain and .files mounts, .node
    c.leader()       # the member that says it leads, or None
    c.server_of(h)   # the member host h's plain mount is connected to
    c.kill_server(m); c.start_server(m)
    c.set_delay(s)   # h3's slow link
    c.stop()

The daemons run in their host's network namespace only (nsenter --net):
their mounts are in the machine's mount namespace, where the clients and
the runner use them.  h3 reaches the servers through a delay proxy in its
own namespace (tests/integration/delayproxy.py), because this kernel has
no netem; the proxy forwards at once until a slow link is asked of it.
"""

import ctypes
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import delayproxy                  # noqa: E402
import mounts                      # noqa: E402
import net                         # noqa: E402
import procs                       # noqa: E402
import zkserver                    # noqa: E402

ROOT = "/nemesis"
CLIENT_PORT, QUORUM_PORT, ELECTION_PORT = 2181, 2888, 3888
SLOW_HOST = "h3"
# three JVMs share 2 cores with everything else: small heaps, one GC thread
JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"]
CLONE_NEWNET = 0x40000000


def enter_netns(ns):
    """Move the calling thread (the runner's main thread, before it starts
    any other) into namespace @ns; what it starts later is born there."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/run/netns/" + ns, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns %s: %s" % (ns, os.strerror(e)))
    finally:
        os.close(fd)


class Host:
    def __init__(self, name, connect, wrap, logdir, session_ms):
        self.name = self.node = name
        self.plain = mounts.Mount(None, ROOT, logdir, session_timeout=session_ms,
                                  connect=connect, wrap=wrap, label=name + "-plain")
        self.files = mounts.Mount(None, ROOT, logdir, session_timeout=session_ms,
                                  opts=("lockfiles",), connect=connect, wrap=wrap,
                                  label=name + "-files")

    def tag(self, m):
        return "%s/%s" % (self.name, "plain" if m is self.plain else "files")


class Cluster:
    def __init__(self, workdir, logdir, session_ms, hosts=3, sync_limit=4):
        self.workdir, self.logdir, self.session_ms = workdir, logdir, session_ms
        self.nhosts, self.sync_limit = hosts, sync_limit
        self.net = net.Net(["ctl", "s1", "s2", "s3"] + ["h%d" % i for i in range(1, hosts + 1)])
        self.ens = zkserver.ZooKeeperEnsemble(os.path.join(workdir, "zk"), 3)
        self.servers = self.ens.members
        for m in self.servers:
            m.node = "s%d" % m.myid
            m.host, m.port = self.net.addr(m.node), CLIENT_PORT
            m.quorum_port, m.election_port = QUORUM_PORT, ELECTION_PORT
            m.wrap, m.jvm_flags = self.net.wrap(m.node), list(JVM_FLAGS)
        self.hosts = []
        self.proxy = None

    # --- the ensemble ---------------------------------------------------

    def start_server(self, m, timeout=60.0):
        """Start member @m (again, with its data) and wait until it listens
        for clients; return whether it does."""
        m._launch("org.apache.zookeeper.server.quorum.QuorumPeerMain",
                  os.path.join(m.workdir, "zoo.cfg"), xmx="192m")
        deadline = time.monotonic() + timeout
        while not procs.pid_listens_on(m.proc.pid, m.port):
            if m.proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def kill_server(self, m):
        m.kill9()

    def leader(self):
        return self.ens.leader()

    def server_of(self, h):
        """The member host @h's daemons are connected to (`cons` names the
        peer's address), or None."""
        for m in self.servers:
            if m.proc is None or m.proc.poll() is not None:
                continue
            try:
                if "/%s:" % self.net.addr(h.node) in m.four("cons", 2.0):
                    return m
            except OSError:
                pass
        return None

    # --- the hosts ------------------------------------------------------

    def _start_proxy(self):
        self.proxy = delayproxy.DelayLink(
            os.path.join(self.workdir, "delay"),
            [("127.0.0.1", CLIENT_PORT + i, m.host, m.port) for i, m in enumerate(self.servers)],
            wrap=self.net.wrap(SLOW_HOST)).start()
        return ",".join(self.proxy.hostports)

    def set_delay(self, seconds):
        self.proxy.set(seconds)

    def start(self):
        self.net.up()
        enter_netns(self.net.ns("ctl"))
        self.ens.write_cfgs(self.sync_limit)
        for m in self.servers:
            if not self.start_server(m, 90.0):
                raise RuntimeError("ZooKeeper server %d did not start; see %s"
                                   % (m.myid, m.log))
        self.ens.wait_quorum(90.0)
        with self.ens.client() as c:
            c.ensure_path(ROOT)
        direct = ",".join(m.hostport for m in self.servers)
        for i in range(1, self.nhosts + 1):
            name = "h%d" % i
            connect = self._start_proxy() if name == SLOW_HOST else direct
            h = Host(name, connect + ROOT, self.net.wrap(name), self.logdir, self.session_ms)
            h.plain.start()
            h.files.start()
            self.hosts.append(h)
        return self

    def client(self):
        return self.ens.client()

    def stop(self):
        """Everything, by pid: mounts, the proxy, the servers, the network."""
        for h in self.hosts:
            for m in (h.plain, h.files):
                m.cleanup()
        if self.proxy is not None:
            self.proxy.stop()
        self.ens.stop()
        self.net.down()
