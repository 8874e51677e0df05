"""What reading a lock's extended attributes costs the ensemble: ZooKeeper's
own count of the read requests it served (mntr's
zk_cnt_t_read_per_namespace: getData, exists, getChildren; not pings),
before and after one command. Each figure is recorded (record_figure).

`getfattr -d ENTRY` is an lstat, a listxattr and, per attribute, a getxattr
for the size and one for the value; the kernel looks the entry up again
before each (it keeps no entry: they come and go behind its back). The
daemon keeps what it read for one process for a moment (fs/xcache.h), so
the whole command shares one read of the entry and one of its lock.
"""

import os
import subprocess

import harness
from harness import (lockdir, record_figure, seen_dir, start_waiter, take, wait_for,
                     wait_no_entries)

# what `getfattr -d` on an entry may cost, another mount's or our own, and
# `zklock --list` of a lock with 5 entries (and its limit, for the column)
ENTRY_READS_MAX = 3
LIST_READS_MAX = 9


def reads(zk):
    for line in zk.four("mntr").splitlines():
        if line.startswith("zk_cnt_t_read_per_namespace\t"):
            return int(line.split("\t")[1])
    raise AssertionError("mntr has no zk_cnt_t_read_per_namespace")


def cost(zk, argv):
    """The read requests the server served while @argv ran (it succeeds)."""
    before = reads(zk)
    r = subprocess.run(argv, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return reads(zk) - before


def test_getfattr_d_of_an_entry_reads_little(mount, zk):
    m1, m2 = mount(session_timeout=30000), mount(session_timeout=30000)
    d1 = lockdir(m1)
    d2 = seen_dir(m2)
    h = take(d2, "h")
    for label, p in (("another mount's", os.path.join(d1, h.entry)),
                     ("its own mount's", os.path.join(d2, h.entry))):
        n = cost(zk, ["getfattr", "-d", p])
        record_figure("getfattr -d of an entry, %s: %d read requests" % (label, n))
        assert n <= ENTRY_READS_MAX, "%s entry: %d reads" % (label, n)
    h.release()


def test_zklock_list_reads_the_lock_once(mount, zk):
    m1, m2 = mount(session_timeout=30000), mount(session_timeout=30000)
    d1 = lockdir(m1)
    d2 = seen_dir(m2)
    held = [take(d2, "s%d" % i, harness.SHARED) for i in range(5)]
    zklock = os.path.join(os.path.dirname(harness.daemon_binary()), "zklock")
    n = cost(zk, [zklock, "--list", d1])
    record_figure("zklock --list of 5 entries: %d read requests" % n)
    assert n <= LIST_READS_MAX, "%d reads" % n
    for h in held:
        h.release()


def mntr(zk, key):
    for line in zk.four("mntr").splitlines():
        if line.startswith(key + "\t"):
            return int(line.split("\t")[1])
    return 0                        # a namespace not used yet


def counts(zk, ns):
    """(writes, reads, watches): the server's counts for namespace @ns."""
    return (mntr(zk, "zk_cnt_%s_write_per_namespace" % ns),
            mntr(zk, "zk_cnt_%s_read_per_namespace" % ns),
            mntr(zk, "zk_watch_count"))


def delta(after, before):
    return tuple(a - b for a, b in zip(after, before))


def test_what_a_mount_a_grant_and_a_waiter_cost_the_ensemble(mount, zk, test_root):
    """The figures of docs/SCALING.md: connections per mount, and the
    writes, reads and watches of one uncontended cycle and of one waiter."""
    ns = test_root.strip("/").split("/")[0]
    conns = mntr(zk, "zk_num_alive_connections")
    a, b = mount(session_timeout=30000), mount(session_timeout=30000)
    conns = mntr(zk, "zk_num_alive_connections") - conns
    record_figure("connections: 2 mounts (sessions=1) add %d" % conns)
    assert conns == 2
    da = lockdir(a)
    db = seen_dir(b)
    before = counts(zk, ns)
    h = take(da, "solo")
    h.release()
    wait_no_entries(da)
    w, r, _ = delta(counts(zk, ns), before)
    record_figure("one uncontended open/close cycle: %d writes, %d reads" % (w, r))
    assert w == 2, "a cycle is a create and a delete: %d writes" % w
    h = take(da, "holder")
    before = counts(zk, ns)
    waiter = start_waiter(db, "waiter")
    wait_for(lambda: len(os.listdir(da)) == 2, 10, "the waiter queued")
    w, r, watches = delta(counts(zk, ns), before)
    record_figure("one waiter, while it waits: %d writes, %d reads, %d watches"
                  % (w, r, watches))
    assert w == 1 and watches <= 1, (w, r, watches)
    before = counts(zk, ns)
    h.release()
    waiter.wait_granted()
    waiter.release()
    wait_no_entries(da)
    w, r, watches = delta(counts(zk, ns), before)
    record_figure("the holder's release, the waiter's grant and release: %d writes, "
                  "%d reads" % (w, r))


def test_a_lock_files_queue_is_read_once_a_command(mount, zk):
    """getfattr -n user.zklockfs.queue asks twice (the size, then the
    value): the second is answered from what the first read, so a queue of
    N entries costs one listing, one read of the lock and one per entry."""
    m1, m2 = (mount(opts=("lockfiles",), session_timeout=30000) for _ in range(2))
    os.mkdir(os.path.join(m1.path, "cron"))
    f1 = os.path.join(m1.path, "cron", "q.lock")
    f2 = os.path.join(seen_dir(m2, "cron"), "q.lock")
    open(f1, "w").close()
    n_entries = 4
    hold = subprocess.Popen(
        ["sh", "-c", " ".join('flock -s %s sleep 600 &' % f1 for _ in range(n_entries))
         + " wait"], start_new_session=True)
    try:
        wait_for(lambda: os.getxattr(f2, "user.zklockfs.queue").count(b"\n") == n_entries,
                 10, "the shared holders queued")
        n = cost(zk, ["getfattr", "--absolute-names", "-n", "user.zklockfs.queue", f2])
        record_figure("getfattr of a lock file's queue of %d entries: %d read requests"
                      % (n_entries, n))
        assert n <= 2 + n_entries + 1, "%d reads" % n     # + the lookup
    finally:
        os.killpg(hold.pid, 9)
        hold.wait(10)

