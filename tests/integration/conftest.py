"""Fixtures for the zklockfs integration tests.

  zk     (session)  a real standalone ZooKeeper server on 127.0.0.1:<free port>
  zkc    (function) a raw ZooKeeper client (tests/integration/zkclient.py)
  mount  (function) factory: mount(root=None, naming=None, session_timeout=4000,
                    opts=(), connect=None, server=None)
                    -> harness.Mount (.path .pid .proc .umount() .p())
  proxy  (function) factory: proxy() -> a faultproxy.FaultProxy to `zk`
                    (list it before `mount` in a test's arguments, so that
                    it is torn down after the mounts)

Run from the repository root:  /usr/bin/python3 -m pytest tests/integration
The daemon is $ZKLOCKFS, default <repo>/build/zklockfs.
"""

import os
import signal
import sys
import tempfile
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import faultproxy  # noqa: E402
import harness  # noqa: E402

DEFAULT_TIMEOUT = int(os.environ.get("ZKLOCKFS_TEST_TIMEOUT", "90"))
WATCHDOG_GRACE = 20


def _has_timeout_plugin(config):
    return config.pluginmanager.hasplugin("timeout")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "timeout(seconds): bound the test (pytest-timeout or the "
        "conftest's own SIGALRM guard)")
    config.addinivalue_line("markers", "slow: long-running stress test")


def _item_timeout(item):
    """A test's own @pytest.mark.timeout(N), else DEFAULT_TIMEOUT; doubled
    for a sanitized daemon."""
    if hasattr(item, "_zklockfs_timeout"):
        return item._zklockfs_timeout
    t = float(DEFAULT_TIMEOUT)
    m = item.get_closest_marker("timeout")
    if m is not None:
        if m.args:
            t = float(m.args[0])
        elif "timeout" in m.kwargs:
            t = float(m.kwargs["timeout"])
    item._zklockfs_timeout = t * harness.SLOW
    return item._zklockfs_timeout


def pytest_collection_modifyitems(config, items):
    # Every test is bounded. With pytest-timeout, use its signal method (so
    # fixtures' teardown still runs and nothing is left mounted/running);
    # a test's own @pytest.mark.timeout(N) wins.
    if _has_timeout_plugin(config):
        for item in items:
            t = _item_timeout(item)
            item.add_marker(pytest.mark.timeout(t, method="signal"),
                            append=False)


class _Timeout(Exception):
    pass


@pytest.fixture(autouse=True)
def _time_guard(request):
    """Fallback when pytest-timeout is missing: SIGALRM fails the test.
    Always: a watchdog thread that, if the test (with teardown) overruns by
    WATCHDOG_GRACE seconds, kills this test's daemons and children by pid --
    a process blocked in a FUSE request is only freed by the daemon's death."""
    t = _item_timeout(request.node)
    old = None
    if not _has_timeout_plugin(request.config):
        def on_alarm(signum, frame):
            raise _Timeout("test exceeded %.0fs" % t)
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, t)
    dog = threading.Timer(t + WATCHDOG_GRACE, harness.emergency_stop,
                          args=("%s exceeded %.0fs" % (request.node.nodeid,
                                                       t + WATCHDOG_GRACE),))
    dog.daemon = True
    dog.start()
    try:
        yield
    finally:
        if old is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        # children of a test that used no mount
        harness.kill_children()
        dog.cancel()


@pytest.fixture(scope="session", autouse=True)
def _state_dir(tmp_path_factory):
    """Every daemon a test starts lists the mount points it makes immutable
    in a temp dir, never in the host's /var/lib/zklockfs: this one, for
    those started by hand or through mount(8); harness.Mount gives each
    daemon its own."""
    old = os.environ.get(harness.STATE_DIR_ENV)
    os.environ[harness.STATE_DIR_ENV] = str(tmp_path_factory.mktemp("zklockfs-state"))
    yield
    if old is None:
        del os.environ[harness.STATE_DIR_ENV]
    else:
        os.environ[harness.STATE_DIR_ENV] = old


@pytest.fixture(scope="session")
def logdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("zklockfs-logs"))


@pytest.fixture(scope="session")
def zk(tmp_path_factory):
    """A standalone ZooKeeper; .hostport, .host, .port, .pid, .four(word),
    .client(), .suspend()/.resume() (SIGSTOP/SIGCONT), .log; /t, the parent
    of every test's root, made. A module may override it with a server of
    its own made the same way (test_containers.py)."""
    with harness.zookeeper(tmp_path_factory, paths=["/t"]) as server:
        yield server


@pytest.fixture
def zkc(zk):
    """A raw ZooKeeper client session for the test."""
    c = zk.client()
    yield c
    c.close()


def _built(path, what, var):
    """path, if it is an executable; else the test is skipped."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.skip("%s not built: %s (set $%s)" % (what, path, var))
    return path


@pytest.fixture
def zklock():
    """The zklock binary: $ZKLOCK, else the one next to the daemon."""
    return _built(harness.zklock_binary(), "zklock", "ZKLOCK")


@pytest.fixture
def daemon_path():
    return _built(harness.daemon_binary(), "zklockfs daemon", "ZKLOCKFS")


@pytest.fixture
def test_root(request):
    """The default ZooKeeper root for this test's mounts: /t/<test name>."""
    return "/t/" + harness.sanitize(
        "%s.%s" % (request.node.module.__name__, request.node.name))


@pytest.fixture
def mount(daemon_path, zk, request, logdir, test_root):
    mounts = []
    request.node._zklockfs_mounts = mounts

    def factory(root=None, naming=None, session_timeout=4000, opts=(),
                connect=None, server=None, wrap=(), create_root=True, env=None,
                mp_owner=None):
        # connect: the CONNECT part (host:port[,host:port...]) to use instead
        #          of the server's, e.g. a fault proxy's; ROOT is appended.
        # server:  another ZooKeeperServer/ZooKeeperEnsemble than `zk`.
        # wrap:    a command to run the daemon under (argv prefix).
        # env:     more environment for the daemon (NOTIFY_SOCKET).
        # mp_owner: the uid (and gid) the mount point is chowned to, for a
        #          daemon run as that user (wrap=setpriv...).
        root = test_root if root is None else root
        source = None
        if connect is not None:
            source = connect if root in ("", None) else connect + root
        m = harness.Mount(server or zk, root, logdir,
                          naming=naming, session_timeout=session_timeout,
                          opts=opts, connect=source, wrap=wrap, create_root=create_root,
                          env=env, mp_owner=mp_owner,
                          label=harness.sanitize(request.node.name, 40))
        mounts.append(m)
        m.start()
        return m

    factory.root = test_root
    yield factory
    # children first: they may hold files open on the mounts
    harness.kill_children()
    for m in reversed(mounts):
        m.cleanup()
    harness.kill_children()
    # a sanitizer report in a daemon's log (make check-asan) is an error
    reports = []
    for m in mounts:
        r = harness.sanitizer_report(m.logpath)
        if r:
            reports.append("%s:\n%s" % (m.logpath, r))
    if reports:
        pytest.fail("sanitizer report from zklockfs:\n" + "\n".join(reports),
                    pytrace=False)


@pytest.fixture
def proxy(zk):
    """factory: proxy() -> a FaultProxy to the session's ZooKeeper."""
    made = []

    def factory():
        p = faultproxy.FaultProxy(zk.host, zk.port).start()
        made.append(p)
        return p
    yield factory
    for p in made:
        p.stop()


@pytest.fixture
def scratch():
    """A local (not zklockfs) temp dir."""
    d = tempfile.mkdtemp(prefix="zklockfs-scratch-")
    yield d
    import shutil
    shutil.rmtree(d, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for m in getattr(item, "_zklockfs_mounts", []):
            rep.sections.append(
                ("zklockfs pid %s log (%s)" % (m.proc.pid if m.proc else "?",
                                               m.logpath),
                 m.log_tail()))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Figures measured by the tests (harness.record_figure)."""
    if not harness.FIGURES:
        return
    tr = terminalreporter
    tr.section("zklockfs measured figures%s"
               % (" (sanitized daemon)" if harness.SLOW > 1 else ""))
    for test, text in harness.FIGURES:
        tr.write_line("figure: %s" % text)
