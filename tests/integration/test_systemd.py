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
