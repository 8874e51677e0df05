"""systemd's Type=notify: the daemon tells a NOTIFY_SOCKET that this test
owns READY=1 only once the mount answers, STATUS= as its locks change, and
STOPPING=1 when it goes (sd_notify(3), through libsystemd)."""

import os
import signal
import socket
import threading

from harness import lockdir, take, wait_for


def test_ready_only_once_the_mount_answers_then_status_and_stopping(mount, scratch,
                                                                    test_root):
    path = os.path.join(scratch, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    got = []                        # (message, mounted when it came)

    def listen():
        sock.settimeout(60)
        try:
            while True:
                msg = sock.recv(4096).decode()
                with open("/proc/mounts") as f:
                    mounted = any(test_root in line and "fuse" in line for line in f)
                got.append((msg, mounted))
                if "STOPPING=1" in msg:
                    return
        except OSError:
            return
    t = threading.Thread(target=listen, daemon=True)
    t.start()
    try:
        m = mount(env={"NOTIFY_SOCKET": path})
        wait_for(lambda: got, 20, "the first notification")
        first, mounted = got[0]
        assert first.startswith("READY=1\nSTATUS=ZooKeeper connected; 0 held"), got
        assert mounted, "READY=1 came before the mount was made"
        assert os.statvfs(m.path)
        h = take(lockdir(m), "h")
        wait_for(lambda: any("1 held" in g for g, _ in got), 20,
                 "STATUS= showing the held lock (%r)" % got)
        h.release()
        m.proc.send_signal(signal.SIGTERM)
        t.join(30)
        assert any(g.startswith("STOPPING=1") for g, _ in got), got
        assert m.proc.wait(30) == 0
    finally:
        sock.close()
    assert sum(g.count("READY=1") for g, _ in got) == 1, got


def unit_prestart(path):
    """The unit's ExecStartPre commands, %f made @path, as systemd runs
    them (no systemd here: its own PID 1 is not ours to use)."""
    import shlex
    unit = os.path.join(os.path.dirname(__file__), "..", "..", "mount-helpers",
                        "zklockfs@.service")
    with open(unit) as f:
        lines = [ln.split("=", 1)[1].strip() for ln in f if ln.startswith("ExecStartPre=")]
    return [[w.replace("%f", path) for w in shlex.split(cmd.lstrip("-"))] for cmd in lines]


def test_the_unit_restarts_after_a_crash(mount, daemon_path, zk, test_root):
    """kill -9 left a dead mount of ours at the mount point: the unit's
    ExecStartPre clears it and nothing else, so Restart= mounts again; a
    live mount there is left alone."""
    import subprocess
    from harness import mount_entry
    m = mount()
    for cmd in unit_prestart(m.path):      # live: untouched
        assert subprocess.run(cmd, timeout=30).returncode == 0, cmd
    assert mount_entry(m.path) and os.statvfs(m.path)
    m.kill()
    m.proc.wait(10)
    for cmd in unit_prestart(m.path):
        assert subprocess.run(cmd, timeout=30).returncode == 0, cmd
    assert not mount_entry(m.path), "the dead mount is still there"
    from harness import fusermount
    again = subprocess.Popen([daemon_path, "-f", "-o", "create_root",
                              zk.hostport + test_root, m.path],
                             stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: mount_entry(m.path) or again.poll() is not None, 30,
                 "the mount made again")
        assert again.poll() is None, again.stderr.read()
        assert os.statvfs(m.path)
    finally:
        fusermount(m.path)
        again.wait(15)
