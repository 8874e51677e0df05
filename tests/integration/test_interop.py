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

The foreign clients are child processes driven over stdin/stdout lines,
started and built by interop.py (its fixtures and Contender classes):
tests/interop/CuratorLock.java (compiled once per session with javac),
tests/interop/kazoo_lock.py (run by /usr/bin/python3) and
tests/interop/go_lock.go (built once per session, offline, in GOPATH mode
with Debian's golang-go). When kazoo, a JDK, the Curator jars, Go or the Go
client are missing the tests say SKIPPED with the reason.
"""

import os
import select

import pytest

from harness import (RDWR, session_watches, lock_state, lockdir, GRANT_TIMEOUT, PY, SHARED, SLOW, WRITE,
                     XATTR_HOLDERS, Locker, entries,
                     getxattr_str, parse_entry, read_file, seq_of,
                     start_waiter, take, wait_for, wait_gone, wait_no_entries)
from interop import (CURATOR_NODE, GO_NODE, KAZOO_NODE, Contender, Curator, GoLock, Kazoo)
from interop import curator_cp, go_lock_bin, kazoo_ok  # noqa: F401 (fixtures)

pytestmark = pytest.mark.timeout(45)


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
