"""Recovery after a create whose outcome is unknown.

When a create's reply is lost with the connection, the daemon lists the
queue and adopts the entry whose data ends in its nonce line ("zkl=<hex>").
That data is world-readable, so during the outage anyone may plant the same
line in an entry of their own. docs/SPEC.md: an entry is the daemon's only
if its data was never set since the create (version 0) and it belongs to the
daemon's session (ephemeralOwner); a planted one is neither adopted nor
deleted.
"""

import os
import re
import time

import pytest

import faultproxy
from harness import (GRANT_TIMEOUT, SLOW, WRITE, XATTR_SEQ, Locker, lockdir,
                     log_has, named, parse_entry, seq_of, wait_for, waiting,
                     zk_entries)
from test_unknown_outcome import prime
from zkclient import EPHEMERAL_SEQUENTIAL


def plant_before(zkc, d, real, data, tries=40):
    """Create, with the raw client, an ephemeral-sequential entry of the same
    NAME and marker as `real` carrying `data`, listed by ZooKeeper before
    `real` (the server's listing order is that of a hash set: try new
    sequence numbers until one comes first, so the daemon's resolve reads
    the planted entry before its own). Its name."""
    name, marker, _ = parse_entry(real)
    # grow the server's hash set of children (a few entries of another
    # NAME, deleted at once: a table never shrinks) so that new names spread
    fill = [zkc.create("%s/filler%s" % (d, marker), b"", EPHEMERAL_SEQUENTIAL)
            for _ in range(14)]
    for p in fill:
        zkc.delete(p)
    for _ in range(tries):
        p = zkc.create("%s/%s%s" % (d, name, marker), data, EPHEMERAL_SEQUENTIAL)
        planted = p.rsplit("/", 1)[1]
        kids = zkc.get_children(d)
        if kids.index(planted) < kids.index(real):
            return planted
        zkc.delete(p)
    pytest.fail("no planted entry listed before %s in %d tries" % (real, tries))


@pytest.mark.timeout(120)
def test_unknown_create_never_adopts_a_planted_entry(proxy, mount, zk, zkc):
    timeout_ms = 6000
    px = proxy()
    A = mount(session_timeout=timeout_ms, connect=px.hostport)
    dA = lockdir(A)
    zdir = A.zkpath("L")

    prime(dA, "w", zkc, A)
    acc0 = px.accepted
    px.blackhole(faultproxy.DOWN)   # requests reach ZooKeeper, replies don't
    try:
        w = Locker(os.path.join(dA, "w"), WRITE)   # its create goes unanswered
        wait_for(lambda: named(zk_entries(zkc, A), "w"), 5,
                 "the create to reach ZooKeeper")
        real, = named(zk_entries(zkc, A), "w")
        data, st = zkc.get_data(zdir + "/" + real)
        assert re.search(rb"(?m)^zkl=[0-9a-f]{16}$", data), data
        # another user of ZooKeeper copies the world-readable data, nonce
        # and all, into an entry of her own while the daemon cannot look
        planted = plant_before(zkc, zdir, real, data)
        wait_for(lambda: px.accepted > acc0, timeout_ms / 1000.0 + 3,
                 "the daemon's client to give up its connection")
        assert waiting(w)
    finally:
        px.heal()

    # the daemon finds its own entry, not the planted one, and holds with it
    w.wait_granted(GRANT_TIMEOUT + 10 * SLOW)
    assert int(w.xattr(XATTR_SEQ)) == seq_of(real), \
        "adopted %s, not its own %s" % (w.xattr(XATTR_SEQ), real)
    assert log_has(A, r"found \S+%s again after an unknown create"
                   % re.escape(real)), A.log_tail()
    assert log_has(A, r"%s carries our nonce but is not ours"
                   % re.escape(planted)), A.log_tail()
    # the planted entry is someone else's: left alone
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        assert sorted(zk_entries(zkc, A), key=seq_of) == [real, planted]
        time.sleep(0.1)
    st2 = zkc.exists(zdir + "/" + planted)
    assert st2 is not None and st2.ephemeralOwner != st.ephemeralOwner
    w.release()
    wait_for(lambda: zk_entries(zkc, A) == [planted], 5,
             "only the planted entry to remain")
    zkc.delete(zdir + "/" + planted)
