"""The nemesis's own network: one namespace per node, joined by veth pairs
to a bridge that lives in a namespace of its own, so that nothing of it
touches the machine's own network.

    net = Net(["ctl", "s1", "s2", "s3", "h1", "h2", "h3"]).up()
    net.addr("s1")                       # 198.18.0.11
    net.wrap("h1")                       # nsenter argv that runs a command there
    net.set_cut("p1", {("h1", "s1"), ...})   # a fault's pairs that hear nothing
    net.down()

Addresses come from 198.18.0.0/15, the range reserved for benchmarking,
and exist only inside these namespaces: no default route, no NAT, and the
bridge has no address of its own, so nothing is forwarded out of it.

A cut is drop rules (nftables) on the input hook of both ends: a packet
from the other side vanishes, with no FIN, no RST and no ICMP, and the
route stays, so a reconnect waits as it would across a dead network.
(A drop on the output hook would not do: the kernel tells the sender
EPERM at once.)  This kernel has no netem, so a slow link is a proxy
(delayproxy.py), not a rule here.

Names carry the runner's pid, so two runs never share a namespace, and
down() removes what up() made; a namespace left by a killed run is
removed by the next up() of the same pid only, never by name pattern.
"""

import os
import subprocess
import threading

SUBNET = "198.18.0"
HOSTNUM = {"ctl": 2, "s1": 11, "s2": 12, "s3": 13, "h1": 21, "h2": 22, "h3": 23}


def run(*argv, check=True):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), r.stderr.decode().strip()))
    return r


class Net:
    def __init__(self, nodes):
        self.nodes = list(nodes)
        self.tag = "zkn%d" % os.getpid()
        self.switch = self.tag + "-sw"
        self.cuts = {}          # fault name -> set of (node, node) that hear nothing
        self.made = []
        self.mu = threading.Lock()      # faults heal from threads of their own

    def ns(self, node):
        return "%s-%s" % (self.tag, node)

    def addr(self, node):
        return "%s.%d" % (SUBNET, HOSTNUM[node])

    def wrap(self, node):
        """The argv prefix that runs a command in @node's network (and only
        its network: the mount namespace stays the machine's, so a FUSE
        mount made there is everyone's)."""
        return ["nsenter", "--net=/run/netns/" + self.ns(node)]

    def up(self):
        try:
            self._add_ns(self.switch)
            run("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
            run("ip", "-n", self.switch, "link", "set", "br0", "up")
            for node in self.nodes:
                ns = self.ns(node)
                self._add_ns(ns)
                port = "p-" + node
                run("ip", "-n", self.switch, "link", "add", port, "type", "veth",
                    "peer", "name", "eth0", "netns", ns)
                run("ip", "-n", self.switch, "link", "set", port, "master", "br0")
                run("ip", "-n", self.switch, "link", "set", port, "up")
                run("ip", "-n", ns, "addr", "add", self.addr(node) + "/24", "dev", "eth0")
                run("ip", "-n", ns, "link", "set", "eth0", "up")
                run("ip", "-n", ns, "link", "set", "lo", "up")
                self._wait_nft([(node, self._nft(node, set()))])
        except Exception:
            self.down()
            raise
        return self

    def _add_ns(self, ns):
        run("ip", "netns", "del", ns, check=False)     # a killed run's, same pid
        run("ip", "netns", "add", ns)
        self.made.append(ns)

    def _nft(self, node, sources):
        """Start setting node @node to drop every packet from the addresses
        @sources; the caller waits (all nodes at once: a cut is one moment)."""
        rules = "flush ruleset\ntable inet nemesis {\n chain in {\n" \
                "  type filter hook input priority 0; policy accept;\n"
        if sources:
            rules += "  ip saddr { %s } drop\n" % ", ".join(sorted(sources))
        rules += " }\n}\n"
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(node), "nft", "-f", "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        p.stdin.write(rules.encode())
        p.stdin.close()
        return p

    def _wait_nft(self, procs):
        for node, p in procs:
            err = p.stderr.read()
            if p.wait() != 0:
                raise RuntimeError("nft in %s: %s" % (node, err.decode().strip()))

    def set_cut(self, name, pairs):
        """Fault @name cuts each pair of nodes in @pairs (both ways); an
        empty set heals it.  Faults add up: a pair is cut while any cuts it."""
        with self.mu:
            if pairs:
                self.cuts[name] = set(pairs)
            else:
                self.cuts.pop(name, None)
            drops = {n: set() for n in self.nodes}
            for cut in self.cuts.values():
                for a, b in cut:
                    drops[a].add(self.addr(b))
                    drops[b].add(self.addr(a))
            self._wait_nft([(n, self._nft(n, drops[n])) for n in self.nodes])

    def down(self):
        for ns in reversed(self.made):
            run("ip", "netns", "del", ns, check=False)
        self.made = []
