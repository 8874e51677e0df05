/* zk/errno.c - ZooKeeper rc to errno. */
#include "zk/errno.h"

#include <errno.h>
#include <zookeeper/zookeeper.h>

int zk_errno(int rc)
{
	switch (rc) {
	case ZOK:			return 0;
	case ZNONODE:			return -ENOENT;
	case ZNODEEXISTS:		return -EEXIST;
	case ZNOTEMPTY:			return -ENOTEMPTY;
	case ZNOAUTH:			return -EACCES;
	case ZAUTHFAILED:		return -EACCES;
	case ZBADARGUMENTS:		return -EINVAL;
	case ZNOCHILDRENFOREPHEMERALS:	return -ENOTDIR;
	case ZBADVERSION:		return -EAGAIN;
	case ZINVALIDSTATE:		return -ENOTCONN;
	case ZSESSIONEXPIRED:		return -ENOTCONN;
	case ZCLOSING:			return -ESHUTDOWN;
	case ZOPERATIONTIMEOUT:		return -ETIMEDOUT;
	case ZMARSHALLINGERROR:		return -EFBIG;
	case ZSYSTEMERROR:		return -EIO;
	case ZCONNECTIONLOSS:		return -EIO;
	default:			return -EIO;
	}
}

int zk_rc_unknown(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

int zk_rc_transient(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
	       rc == ZINVALIDSTATE || rc == ZSESSIONEXPIRED ||
	       rc == ZSESSIONMOVED || rc == ZCLOSING;
}
