/*
 * tests/sim/simnet_int.h - what simnet.c (requests, the server's side, the
 * client's reading and delivering) shares with simsess.c (connection
 * losses, expiries, the supervisor's events).  Not for the driver.
 */
#ifndef SIM_SIMNET_INT_H
#define SIM_SIMNET_INT_H

#include "tests/sim/simnet.h"

enum sn_op { OP_CREATE, OP_DELETE, OP_MULTI, OP_CHILDREN, OP_GET, OP_WGET,
	     OP_EXISTS, OP_UNWATCH, OP_SET, OP_WCHILDREN, OP_UNWATCHC, OP_SYNC };

/* A zklfs_zlater() call waiting for the supervisor's look. */
struct sn_later {
	void (*fn)(void *arg, bool go);
	void *arg;
	struct sn_later *next;
};

/* Any completion: ISO C converts function pointers only to function pointers. */
typedef void (*sn_fn)(void);

struct sn_req {
	struct sn_req *next;
	uint64_t id;
	enum sn_op op;
	char *path, *data;
	int len, mode;			/* OP_SET: mode is the version */
	int n;				/* multi: ops copied at the call */
	int *types, *versions;
	char **paths;
	zoo_op_result_t *results;
	watcher_fn watcher;
	void *wctx;
	sn_fn done;			/* the completion, cast back by op */
	const void *arg;
};

enum sn_kind { IT_REPLY, IT_WATCH, IT_SESSION };

struct sn_item {
	struct sn_item *next;
	enum sn_kind kind;
	struct sn_req *req;		/* IT_REPLY */
	int rc;
	bool answered;			/* the server answered (else lost) */
	char *value;			/* created path, or data */
	int vlen;
	struct Stat stat;
	struct String_vector sv;
	int *errs;
	int type, state;		/* IT_WATCH, IT_SESSION */
	char *path;
	struct sn_reg *regs;		/* collected when read */
	int nregs;
};

void *sni_xcalloc(size_t n, size_t sz);
char *sni_xstrdup(const char *s);
void sni_q_push(struct sn_queue *q, void *x);
void *sni_q_pop(struct sn_queue *q);
void sni_req_free(struct sn_req *r);
void sni_item_free(struct sn_item *it);
/* a session event to every watcher of @h (collected now), into inbound */
void sni_session_event(struct sn_handle *h, int state);
/* a watch that fired while @h was disconnected: SetWatches fires it later */
void sni_missed_add(struct sn_handle *h, int type, const char *path);
/* the server applies @r for @h's session; the reply goes to the wire */
void sni_apply(struct sn_handle *h, struct sn_req *r);
/* simzk's notify: a watch of session @sid fired */
void sni_notify(void *ctx, int64_t sid, int type, const char *path);

#endif
