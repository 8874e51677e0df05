"""ZooKeeper's transaction log, read back (standard library only).

A standalone test server (zkserver.ZooKeeperServer) keeps its log in
<workdir>/data/version-2/log.<zxid>.  Each file is preallocated in 64 MiB
blocks of zeros, so its size says nothing; what counts is where its last
whole transaction ends.  Format (org.apache.zookeeper.server.persistence.
FileTxnLog): a header (magic "ZKLG", version, dbid), then per transaction
a CRC (long), the transaction as a jute buffer (int length + bytes), and
an end-of-record byte 'B'.  A transaction is a TxnHeader (clientId, cxid,
zxid, time, type) and its record; setData's is (path, data, version),
delete's (path), multi's a vector of (type, buffer) sub-transactions.

  scan(logdir) -> Log: .used (bytes of whole transactions, every file)
                       and .txns ([Txn(zxid, type, path, data)], in order)
"""

import collections
import glob
import os
import struct

OP_CREATE, OP_DELETE, OP_SETDATA, OP_MULTI = 1, 2, 5, 14
OP_NAMES = {1: "create", 2: "delete", 5: "setData", 13: "check", 14: "multi",
            15: "create2", 19: "createContainer", -10: "createSession",
            -11: "closeSession", -1: "error"}

Txn = collections.namedtuple("Txn", "zxid type path data")
Log = collections.namedtuple("Log", "used txns")

_HEADER = 16                    # magic, version, dbid
_TXN_HEADER = struct.Struct(">qiqqi")


def logdir_of(server):
    """The log directory of a standalone zkserver.ZooKeeperServer."""
    return os.path.join(server.workdir, "data", "version-2")


def _string(b, off):
    n = struct.unpack_from(">i", b, off)[0]
    off += 4
    if n < 0:
        return None, off
    return b[off:off + n], off + n


def _record(kind, b, off, zxid):
    """The Txn of one record of type @kind at b[off:] (path and data where
    the record has them)."""
    path = data = None
    try:
        if kind in (OP_DELETE, OP_SETDATA, OP_CREATE, 15, 19):
            path, off2 = _string(b, off)
            if kind == OP_SETDATA:
                data, _ = _string(b, off2)
    except struct.error:
        pass
    return Txn(zxid, kind, path.decode("utf-8", "replace") if path else None, data)


def _parse_txn(b):
    """The Txns of one transaction (a multi gives one per sub-transaction,
    all with its zxid)."""
    _, _, zxid, _, kind = _TXN_HEADER.unpack_from(b, 0)
    off = _TXN_HEADER.size
    if kind != OP_MULTI:
        return [_record(kind, b, off, zxid)]
    out = []
    count = struct.unpack_from(">i", b, off)[0]
    off += 4
    for _ in range(max(count, 0)):
        sub = struct.unpack_from(">i", b, off)[0]
        sb, off = _string(b, off + 4)
        out.append(_record(sub, sb or b"", 0, zxid))
    return out


def _scan_file(path):
    with open(path, "rb") as f:
        b = f.read()
    if len(b) < _HEADER or b[:4] != b"ZKLG":
        return 0, []
    off, txns = _HEADER, []
    while off + 12 <= len(b):
        n = struct.unpack_from(">i", b, off + 8)[0]
        end = off + 12 + n + 1
        if n <= 0 or end > len(b) or b[end - 1:end] != b"B":
            break               # the preallocated zeros, or a txn half written
        txns.extend(_parse_txn(b[off + 12:off + 12 + n]))
        off = end
    return off, txns


def scan(logdir):
    """Every log file of @logdir, oldest first."""
    used, txns = 0, []
    files = glob.glob(os.path.join(logdir, "log.*"))
    for path in sorted(files, key=lambda p: int(p.rsplit(".", 1)[1], 16)):
        u, t = _scan_file(path)
        used += u
        txns.extend(t)
    return Log(used, txns)


def since(before, after):
    """The transactions of @after not in @before (by zxid)."""
    last = max((t.zxid for t in before.txns), default=-1)
    return [t for t in after.txns if t.zxid > last]
