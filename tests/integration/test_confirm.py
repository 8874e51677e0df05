"""fsync on a holder's descriptor: "am I still the leader?" (docs/SPEC.md,
"Taking and giving back a lock"). It answers 0 only after a round trip on
the entry's session, ordered after what that session sent before it,
shows the entry still there and held; EIO when the entry is gone, the
session expired or the silence reached the session timeout."""

import threading
import time

import pytest

import faultproxy
from harness import RDWR, SLOW, lock_state, lockdir, take, wait_for
from procs import record_figure

ZOO_EXISTS_OP = 3
ZOO_SETDATA_OP = 5
ZOO_SYNC_OP = 9


@pytest.fixture
def proxied(mount, zk):
    """factory: proxied(**kw) -> (mount, FaultProxy) through a proxy."""
    made = []

    def factory(**kw):
        px = faultproxy.FaultProxy(zk.host, zk.port).start()
        made.append(px)
        return mount(connect=px.hostport, **kw), px
    yield factory
    for px in made:
        px.stop()


def ops(px):
    return [op for c in px.ops() for op in c]


def test_fsync_is_a_sync_then_an_exists_after_the_data(proxied, zkc):
    """The data written goes first, then the sync, then the exists of the
    entry, on the one session: an answer of 0 is about the entry as the
    ensemble has it after everything this mount sent."""
    m, px = proxied()
    d = lockdir(m)
    h = take(d, "leader", RDWR)
    before = len(ops(px))
    h.ok("write " + b"addr=10.0.0.1".hex())
    h.ok("fsync")
    sent = [op for op in ops(px)[before:]
            if op in (ZOO_SETDATA_OP, ZOO_SYNC_OP, ZOO_EXISTS_OP)]
    assert sent == [ZOO_SETDATA_OP, ZOO_SYNC_OP, ZOO_EXISTS_OP], ops(px)[before:]
    assert zkc.get_data(m.zkpath("L/" + h.entry))[0] == b"addr=10.0.0.1"
    # with nothing to send, still a round trip: the answer is fresh
    h.ok("fsync")
    assert ops(px)[-2:] == [ZOO_SYNC_OP, ZOO_EXISTS_OP], ops(px)[before:]
    t0 = time.monotonic()
    for _ in range(50):
        h.ok("fsync")
    record_figure("fsync (a confirmation: sync + exists through a proxy), "
                  "50 in a row: %.2f ms each" % ((time.monotonic() - t0) * 20))
    h.release()


def test_fsync_sees_a_delete_the_mount_has_not_heard_of(mount, zkc):
    """Another client deletes the entry before the mount's watch on it is
    set (a tenth of the session timeout after the grant): the next fsync
    says EIO from its own round trip, and the lock is lost from then on,
    as its watch would have said."""
    m = mount(session_timeout=30000)           # the own-entry watch: 3 s
    d = lockdir(m)
    h = take(d, "h", RDWR)
    zkc.delete(m.zkpath("L/" + h.entry))
    assert lock_state(h) == "held"             # nobody told the mount
    assert h.cmd("fsync") == "error EIO"
    assert lock_state(h) == "lost"
    assert h.cmd("read") == "error EIO"
    h.release()


def test_fsync_on_a_descriptor_that_gave_its_lock_back_is_enolck(mount):
    """After LOCK_UN the descriptor holds nothing: there is nothing to
    confirm, as read and write say ENOLCK."""
    m = mount()
    d = lockdir(m)
    h = take(d, "h", RDWR)
    h.ok("unlock")
    assert h.cmd("fsync") == "error ENOLCK"
    h.release()


@pytest.mark.timeout(120)
def test_fsync_waits_through_a_short_silence(proxied):
    """ZooKeeper silent for a third of the session timeout: fsync waits,
    and answers 0 once the session is back (the lock held throughout)."""
    timeout_ms = 9000
    m, px = proxied(session_timeout=timeout_ms)
    d = lockdir(m)
    h = take(d, "h", RDWR)
    px.blackhole()
    heal = threading.Timer(timeout_ms / 3000.0, px.heal)
    heal.start()
    try:
        t0 = time.monotonic()
        assert h.cmd("fsync", timeout=timeout_ms / 1000.0 + 10 * SLOW) == "ok"
        assert time.monotonic() - t0 >= timeout_ms / 3000.0 - 0.5
    finally:
        heal.cancel()
        px.heal()
    # in doubt until the session's own round trip shows the entry too
    wait_for(lambda: lock_state(h) == "held", 5 * SLOW, "the holder out of doubt")
    h.release()


@pytest.mark.timeout(120)
def test_fsync_in_a_silence_past_the_timeout_is_eio(proxied):
    """ZooKeeper silent for good: fsync waits no longer than the session
    timeout (and the daemon's look), then says EIO, the lock lost."""
    timeout_ms = 4000
    m, px = proxied(session_timeout=timeout_ms)
    d = lockdir(m)
    h = take(d, "h", RDWR)
    px.blackhole()
    try:
        t0 = time.monotonic()
        assert h.cmd("fsync", timeout=timeout_ms / 1000.0 + 10 * SLOW) == "error EIO"
        took = time.monotonic() - t0
        assert took <= timeout_ms / 1000.0 + 1.5 * SLOW, took
        assert lock_state(h) == "lost"
    finally:
        px.heal()
    h.release()
