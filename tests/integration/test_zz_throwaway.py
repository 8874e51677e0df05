import os, harness, zkclient
def test_zk(zk, zkc):
    assert zk.four("ruok") == "imok"
    assert harness.pid_listens_on(zk.pid, zk.port)
    print(zk.four("srvr"))
    zkc.ensure_path("/a/b")
    p = zkc.create("/a/b/x-lock-", b"hello", zkclient.EPHEMERAL_SEQUENTIAL)
    print(p)
    assert p.startswith("/a/b/x-lock-00000000")
    d, st = zkc.get_data(p)
    assert d == b"hello" and st.ephemeralOwner == zkc.session_id
    assert zkc.get_children("/a/b") == [p.rsplit("/",1)[1]]
    assert sorted(zkc.get_children("/")) == ["a", "t", "zookeeper"]
    zkc.delete(p)
    assert zkc.exists(p) is None
    try:
        zkc.create("/a/b\x01c")
    except zkclient.ZKError as e:
        print("bad", e)
    print(zk.four("wchc"))
    print(zk.four("cons"))
    print(open(zk.log).read()[-500:])
def test_locker_local(scratch):
    lk = harness.Locker(os.path.join(scratch, "f"), harness.WRITE)
    lk.wait_granted(5)
    assert lk.ok("write 6869") == "2"
    assert lk.ok("dup") 
    print(lk.ok("fork"))
    print(lk.ok("unfork"))
    print(lk.cmd("getxattr user.zklockfs.seq"))
    lk.release()
    assert open(os.path.join(scratch, "f")).read() == "hi"
    lk2 = harness.Locker(os.path.join(scratch, "nonexist/f"), harness.WRITE)
    assert lk2.wait_error() == "ENOENT"
    # EINTR: open a fifo (blocks) and interrupt with SIGUSR1
    os.mkfifo(os.path.join(scratch, "fifo"))
    lk3 = harness.Locker(os.path.join(scratch, "fifo"), os.O_WRONLY, handle=["SIGUSR1"])
    lk3.assert_waiting(0.5)
    lk3.kill(__import__("signal").SIGUSR1)
    assert lk3.wait_error() == "EINTR"
    lk4 = harness.Locker(os.path.join(scratch, "fifo"), os.O_WRONLY, handle=["SIGALRM"], alarm=0.5)
    assert lk4.wait_error() == "EINTR"
