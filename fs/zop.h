/*
 * fs/zop.h - one FUSE request waiting for one ZooKeeper call.
 *
 * A handler (fs/ops.c, fs/readdir.c, fs/read.c, fs/xattrs.c) copies what
 * it needs into a struct zop, starts one asynchronous call and returns;
 * the completion, on the ZooKeeper thread, answers the request and frees
 * the zop.  Reads (stat, listing, data) may be sent again while the
 * session is away (zop_send()); writes never are: their outcome may be
 * unknown.  A zop is owned by whoever holds it, one thread at a time: no
 * lock.
 *
 * Its request is a pending one (fs/pending.h): a signal or the session
 * timeout may answer it before the completion does.  So every answer goes
 * through zop_claim() (the zop_reply_*() below do), and the completion
 * that finds it answered only frees the zop; a read is not sent again
 * then, nor a next step started.
 */
#ifndef FS_ZOP_H
#define FS_ZOP_H

#include "fs/node.h"
#include "fs/pending.h"
#include "fs/pool.h"

struct dirlist;

/* One request in flight to ZooKeeper. */
struct zkset_setting;

struct zop {
	struct zklfs *fs;
	fuse_req_t req;
	struct node *node;		/* the inode asked about, or the parent */
	char *path;			/* the znode */
	uid_t uid;			/* who asked */
	pid_t pid;			/* its thread (zop_pid()) */
	size_t size;
	off_t off;
	int attr;			/* which xattr: its handler's number */
	const struct zkset_setting *setting;	/* a directory's setting asked for */
	enum node_type type;
	struct dirlist *dl;		/* opendir */
	struct fuse_file_info fi;
	/* a read, sent again while the session is away (zop_send()) */
	int (*send)(struct zop *op);	/* (re)sends it on zks */
	struct zks *zks;
	struct zpend pend;		/* the request, answered once */
};

/* fs_of() - the mount a request is for: a handler's, from libfuse.  What
 * it hands on takes the mount from a node (zop_new()), which the
 * simulator makes without libfuse. */
static inline struct zklfs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* zop_pid() - the thread @op's request is for (0: outside our pid
 * namespace). */
pid_t zop_pid(const struct zop *op);

/*
 * zop_new() - a zop for @req about @node (the inode, or the parent) on
 * @node's mount and the znode @path, which it takes (and frees); its
 * request pending from now.
 * Return: NULL on ENOMEM, @path freed (@req then unanswered).
 * zop_free() - let @op go; its request must have been claimed.
 */
struct zop *zop_new(fuse_req_t req, struct node *node, char *path);
void zop_free(struct zop *op);

/*
 * zop_claim() - is @op's answer still to give (zpend_claim())?  True once;
 * false after a signal or the session timeout answered it.
 * zop_reply_err(), zop_reply_buf() - fuse_reply_*() of the same name
 * (through op->fs->reply, fs/reply.h, as every answer here), if
 * zop_claim().  zop_reply_value() - an xattr's value @val (@len bytes)
 * for a buffer of op->size: its size (0), ERANGE, or it.  None frees @op.
 * Any thread.
 */
bool zop_claim(struct zop *op);
void zop_reply_err(struct zop *op, int err);
void zop_reply_buf(struct zop *op, const char *buf, size_t len);
void zop_reply_value(struct zop *op, const char *val, size_t len);

/* zklfs_reply_value() - answer the getxattr @req of @fs (a buffer of
 * @size) with @val (@len bytes): its size (@size 0), ERANGE, or it.  Any
 * thread. */
void zklfs_reply_value(struct zklfs *fs, fuse_req_t req, size_t size, const char *val,
		       size_t len);

/*
 * zop_reply_entry() - answer @op (a LOOKUP, or the MKDIR or MKNOD that made
 * the znode) with the node of @type for op->path, whose Stat is @zs, and
 * free @op.  Any thread.
 */
void zop_reply_entry(struct zop *op, const struct Stat *zs, enum node_type type);

/*
 * zop_new_child() - a zop for making the persistent znode @name in the
 * directory @p (mkdir, a lock file's creation), @what naming it in the
 * one log line of a refusal: a name ZooKeeper or the path bounds refuse,
 * or a hidden one (EEXIST), is answered here.  Return: NULL once @req is
 * answered.
 * zop_create_child() - send its create with @data (@len bytes, or NULL):
 * persistent, or with @container a container; answered in @done.
 */
struct zop *zop_new_child(fuse_req_t req, struct node *p, const char *name,
			  const char *what);
void zop_create_child(struct zop *op, const char *data, int len, bool container,
		      string_stat_completion_t done);

/*
 * zop_fail() - answer @op with the errno of the ZooKeeper failure @rc and
 * free it; or, for a read that met a connection loss, send it again later.
 */
void zop_fail(struct zop *op, int rc);

/* zop_started() - after starting a call: answer now if it could not start. */
void zop_started(struct zop *op, int rc);

/*
 * zop_send() - send @op's read with @send on session @zks, and again, for
 * up to a session timeout, if it meets a connection loss or an expiry.
 */
void zop_send(struct zop *op, struct zks *zks, int (*send)(struct zop *op));

#endif
