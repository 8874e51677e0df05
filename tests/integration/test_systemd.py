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


UNIT = os.path.join(os.path.dirname(__file__), "..", "..", "mount-helpers",
                    "zklockfs@.service")


def unit_values(key):
    """The values of the unit's lines @key=, in order."""
    with open(UNIT) as f:
        return [ln.split("=", 1)[1].strip() for ln in f if ln.startswith(key + "=")]


def unit_prestart(path):
    """The unit's ExecStartPre commands, %f made @path, as systemd runs
    them (no systemd here: its own PID 1 is not ours to use)."""
    import shlex
    return [[w.replace("%f", path) for w in shlex.split(cmd.lstrip("-"))]
            for cmd in unit_values("ExecStartPre")]


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


def unit_setting(key):
    """The value of the unit's @key= (its last line, as systemd takes it)."""
    vals = unit_values(key)
    assert vals, "the unit has no %s=" % key
    return vals[-1]


def syscall_group(name):
    """The system calls of systemd's group @name (systemd-analyze, offline)."""
    import subprocess
    out = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    calls = set()
    for ln in out.splitlines()[1:]:
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        calls |= syscall_group(ln) if ln.startswith("@") else {ln}
    return calls


def test_the_units_sandbox_keeps_a_real_mount_working(mount, zkc, scratch):
    """The unit's CapabilityBoundingSet= and NoNewPrivileges=, applied by
    setpriv as systemd applies them (no systemd here), leave a lockfiles
    mount of root whole: its immutable mount point, a lock another uid
    takes, and the end of that holder when its entry is deleted (KILL,
    SYS_PTRACE for its /proc/PID/fd and kcmp); and every system call and
    socket family the daemon used is one the unit's SystemCallFilter= and
    RestrictAddressFamilies= allow."""
    import re
    import shutil
    from harness import immutable, spawn
    caps = ",".join("+" + c[4:].lower() for c in unit_setting("CapabilityBoundingSet").split())
    assert unit_setting("NoNewPrivileges") == "yes"
    trace = os.path.join(scratch, "trace")
    m = mount(opts=("lockfiles", "allow_other"), wrap=(
        "setpriv", "--no-new-privs", "--bounding-set", "-all," + caps, "--inh-caps", "-all",
        "strace", "-f", "-qq", "-o", trace))
    os.mkdir(os.path.join(m.path, "cron"))
    lock = os.path.join(m.path, "cron", "job.lock")
    open(lock, "w").close()
    holder = spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    shutil.which("flock"), "-n", lock, "sleep", "600"])
    zpath = m.zkpath("cron/job.lock")
    wait_for(lambda: zkc.get_children(zpath), 20, "the holder's entry")
    zkc.delete(zpath + "/" + zkc.get_children(zpath)[0])
    holder.wait(timeout=20)
    assert holder.returncode == -signal.SIGKILL, "the holder was not ended"
    m.umount()
    assert immutable(m.path), "the mount point was not made immutable"
    with open(trace) as f:
        lines = f.read().splitlines()
    used = {mt.group(1) for mt in (re.match(r"\d+ +([a-z0-9_]+)\(", ln) for ln in lines) if mt}
    used.discard("execve")            # strace's own start of the daemon
    allowed = set()
    for group in unit_setting("SystemCallFilter").split():
        allowed |= syscall_group(group) if group.startswith("@") else {group}
    assert used and used <= allowed, "not allowed by the unit: %s" % sorted(used - allowed)
    families = set(re.findall(r"socket\((AF_[A-Z0-9]+)", "\n".join(lines)))
    assert families <= set(unit_setting("RestrictAddressFamilies").split()), families

