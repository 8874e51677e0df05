"""The holder's data reaches ZooKeeper coalesced (docs/SPEC.md, "Users and
permissions"): the latest data at most once per fsync, close or supervisor
tick, never once per write(); fsync waits for ZooKeeper and reports its
error; the data is in ZooKeeper before the entry is deleted.

What ZooKeeper did is read from its own transaction log (txnlog.py): the
setData transactions on the entry, their data, and where the delete
falls among them.
"""

import os
import subprocess

import pytest

import txnlog
import zkclient
from harness import (GRANT_TIMEOUT, RDWR, SLOW, lock_state, lockdir, read_file,
                     record_figure, seen_dir, take, wait_for)

KIB = 1024


def chunks(n, size):
    """What the locker's `writes n size` writes: chunk i is letter i % 26."""
    return b"".join(bytes([65 + i % 26]) * size for i in range(n))


def set_acl(zkc, path, acl):
    """setACL (opcode 7) with the raw client, version -1."""
    body = zkclient._string(path) + zkclient._int(len(acl))
    for perms, scheme, ident in acl:
        body += zkclient._int(perms) + zkclient._string(scheme) + zkclient._string(ident)
    zkc._call(7, body + zkclient._int(-1), path)


def sets_on(txns, path):
    return [t for t in txns if t.type == txnlog.OP_SETDATA and t.path == path]


def log_lines(m, needle):
    with open(m.logpath, "rb") as f:
        return [ln for ln in f.read().decode("utf-8", "replace").splitlines()
                if needle in ln]


# 256 writes of 1 KiB are one setData, not 256 sets of the whole buffer so
# far (which grew the transaction log 128 times the data)
def test_256_writes_of_1k_are_one_set_not_256(mount, zk, zkc, request):
    m = mount()                     # session 4 s: a tick every 0.4 s
    d = lockdir(m)
    h = take(d, "w")
    znode = m.zkpath("L/" + h.entry)
    logdir = txnlog.logdir_of(zk)
    v0 = zkc.get_data(znode)[1].version
    log0 = txnlog.scan(logdir)

    assert h.ok("writes 256 1024") == str(256 * KIB)
    h.ok("fsync")
    data, st = zkc.get_data(znode)   # at once: fsync waited for ZooKeeper
    assert data == chunks(256, KIB), "ZooKeeper holds other data after fsync"

    log1 = txnlog.scan(logdir)
    sets = sets_on(txnlog.since(log0, log1), znode)
    grown = log1.used - log0.used
    record_figure("256 writes of 1 KiB + fsync: %d setData, data version "
                  "+%d, transaction log +%d bytes (%.1f x the data)"
                  % (len(sets), st.version - v0, grown, grown / (256.0 * KIB)),
                  request.node.name)
    assert st.version - v0 == len(sets), (st.version - v0, len(sets))
    # one at fsync, and one per supervisor tick the writes spanned
    assert 1 <= len(sets) <= 4, \
        "%d setData for 256 write()s: not coalesced" % len(sets)
    assert sets[-1].data == data
    assert grown <= len(sets) * (256 * KIB + 1024) + 4096, grown


def test_fsync_returns_once_the_data_is_in_zookeeper(mount, zkc):
    m = mount(session_timeout=20000)    # ticks 1 s apart: fsync sends
    d = lockdir(m)
    h = take(d, "f")
    znode = m.zkpath("L/" + h.entry)
    v0 = zkc.get_data(znode)[1].version
    rounds = 20
    for i in range(rounds):
        a, b = b"addr=10.0.0.%d\n" % i, b"port=%d\n" % (8000 + i)
        h.ok("seek 0")
        assert h.ok("write " + a.hex()) == str(len(a))
        assert h.ok("write " + b.hex()) == str(len(b))
        h.ok("fsync")
        data, st = zkc.get_data(znode)
        assert data == a + b, "round %d: ZooKeeper has %r after fsync" % (i, data)
    # one set per fsync (and at most one more per tick), not one per write
    assert st.version - v0 <= rounds + rounds // 4, st.version - v0


def test_holder_reads_back_what_it_wrote_before_it_is_sent(mount, zkc):
    m1, m2 = mount(session_timeout=20000), mount()
    d1 = lockdir(m1)
    d2 = seen_dir(m2)
    h = take(d1, "r", RDWR)
    p1 = os.path.join(d1, h.entry)
    data = b"leader=10.0.0.7:8080\n"
    h.ok("write " + data.hex())
    # this mount reads what was written, sent or not
    assert bytes.fromhex(h.ok("read")) == data
    assert read_file(p1) == data
    assert os.stat(p1).st_size == len(data)
    h.ok("fsync")
    assert zkc.get_data(m1.zkpath("L/" + h.entry))[0] == data
    wait_for(lambda: h.entry in os.listdir(d2), 5, "entry on the other mount")
    assert read_file(os.path.join(d2, h.entry)) == data


def test_another_process_of_the_holders_mount_reads_its_write_at_once(mount):
    """Read-your-writes on a lock directory: once the holder's write
    returns, another process on the same mount (cat) reads it from the
    entry, and stat's size agrees, though the data is sent only at the
    next tick (1 s with a 20 s session timeout)."""
    m = mount(session_timeout=20000)
    d = lockdir(m)
    h = take(d, "r", RDWR)
    p = os.path.join(d, h.entry)
    data = b""
    for more in (b"leader=10.0.0.7:8080\n", b"term=2\n"):     # each write continues
        h.ok("write " + more.hex())
        data += more
        r = subprocess.run(["cat", p], capture_output=True, timeout=GRANT_TIMEOUT,
                           cwd="/")
        assert r.stdout == data, r
        assert os.stat(p).st_size == len(data)
    h.release()


def test_data_is_sent_by_the_tick_without_fsync(mount, zkc):
    m = mount()
    d = lockdir(m)
    h = take(d, "t")
    znode = m.zkpath("L/" + h.entry)
    h.ok("write " + b"ticked".hex())
    # a tenth of the session timeout, at most 1 s
    wait_for(lambda: zkc.get_data(znode)[0] == b"ticked", 5 * SLOW,
             "the data in ZooKeeper without fsync or close")


@pytest.mark.parametrize("how", ["close", "unlock"])
def test_data_is_in_zookeeper_before_the_delete(mount, zk, zkc, how):
    """Written, never fsynced, then given back (close or LOCK_UN) at once:
    ZooKeeper's log has the setData of that data, then the delete."""
    m = mount(session_timeout=20000)    # no tick within the test, likely
    d = lockdir(m)
    h = take(d, "c")
    znode = m.zkpath("L/" + h.entry)
    logdir = txnlog.logdir_of(zk)
    log0 = txnlog.scan(logdir)
    data = b"last words\n"
    h.ok("write " + data.hex())
    if how == "close":
        h.release()
    else:
        h.ok("unlock")
    wait_for(lambda: zkc.exists(znode) is None, GRANT_TIMEOUT, "the entry deleted")
    txns = txnlog.since(log0, txnlog.scan(logdir))
    sets = sets_on(txns, znode)
    dels = [t for t in txns if t.type == txnlog.OP_DELETE and t.path == znode]
    assert len(dels) == 1, "the entry's delete is not in ZooKeeper's log: %r" % txns
    assert sets, "the data written was never sent (deleted at %#x)" % dels[0].zxid
    assert sets[-1].data == data
    assert sets[-1].zxid < dels[0].zxid, \
        "the data went to ZooKeeper after the entry's delete"
    if how == "unlock":
        assert h.cmd("write 78") == "error ENOLCK"
        h.release()


def test_fsync_is_eio_once_the_entry_is_deleted(mount, zkc):
    m = mount(session_timeout=20000)
    d = lockdir(m)
    h = take(d, "gone")
    znode = m.zkpath("L/" + h.entry)
    zkc.delete(znode)                   # someone breaks the lock
    # the write may come before or after the daemon hears of the delete
    assert h.cmd("write " + b"late".hex()) in ("ok 4", "error EIO")
    assert h.cmd("fsync") == "error EIO"
    wait_for(lambda: lock_state(h) == "lost", GRANT_TIMEOUT, "state lost")
    assert zkc.exists(znode) is None    # nothing made it again


def test_fsync_reports_the_error_of_a_set(mount, zkc):
    """ZooKeeper refuses the set (the entry's ACL changed to read-only by
    another client): write() has answered already, fsync says EACCES, the
    lock is still held.  A set refused in the background (the tick) is
    reported by the next fsync, once."""
    m = mount()
    d = lockdir(m)
    h = take(d, "acl")
    znode = m.zkpath("L/" + h.entry)
    set_acl(zkc, znode, [(1, "world", "anyone")])       # READ only

    assert h.cmd("write " + b"one".hex()) == "ok 3"
    assert h.cmd("fsync") == "error EACCES"
    assert lock_state(h) == "held"

    assert h.cmd("write " + b"two".hex()) == "ok 3"
    # the tick's send (the fsync's had a line of its own)
    wait_for(lambda: log_lines(m, "the next fsync reports it"), 5 * SLOW,
             "the daemon's log line about the refused set of the tick")
    assert h.cmd("fsync") == "error EACCES"
    assert h.cmd("fsync") == "ok", "an error is reported once"
    assert zkc.get_data(znode)[0] != b"two"
    h.release()
    wait_for(lambda: zkc.exists(znode) is None, GRANT_TIMEOUT, "the entry deleted")
