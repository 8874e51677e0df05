/*
 * bench/recipe.c - the baseline: the textbook lock recipe, synchronous,
 * written directly against the ZooKeeper C client (see bench/zkbench.h).
 */
#include "bench/zkbench.h"

/* the baseline recipe, synchronous: one waiter per session/process */

/* recipe_acquire() - wait for the lock. Return: 0, or -1 with r->err set. */
int recipe_acquire(struct recipe *r)
{
	char pred[256], path[1024], buf[256];
	struct String_vector kids;
	struct Stat st;
	struct gate g;
	long mine;
	int rc, blen;

	rc = zoo_create(r->zh, r->prefix, r->data, (int)strlen(r->data), &ZOO_OPEN_ACL_UNSAFE,
			ZOO_EPHEMERAL_SEQUENTIAL, r->mine, sizeof(r->mine));
	if (rc != ZOK) {
		fmt(r->err, sizeof(r->err), "create %s: %s", r->prefix, zerror(rc));
		return -1;
	}
	mine = seq_of(r->mine);
	for (;;) {
		bool wait;

		rc = zoo_get_children(r->zh, r->lock, 0, &kids);
		if (rc != ZOK) {
			fmt(r->err, sizeof(r->err), "children %s: %s", r->lock, zerror(rc));
			return -1;
		}
		wait = find_pred(&kids, mine, pred, sizeof(pred));
		deallocate_String_vector(&kids);
		if (!wait)
			return 0;
		fmt(path, sizeof(path), "%s/%s", r->lock, pred);
		gate_init(&g);
		/* getData, not exists: a missing node must leave no watch behind */
		blen = sizeof(buf);
		rc = zoo_wget(r->zh, path, gate_watcher, &g, buf, &blen, &st);
		if (rc == ZNONODE)
			continue;	/* it went before we looked */
		if (rc != ZOK) {
			fmt(r->err, sizeof(r->err), "watch %s: %s", path, zerror(rc));
			return -1;
		}
		if (!gate_wait(&g, 600)) {
			fmt(r->err, sizeof(r->err), "no watch event for %s in 600 s", path);
			return -1;
		}
	}
}

int recipe_release(struct recipe *r)
{
	int rc = zoo_delete(r->zh, r->mine, -1);

	if (rc != ZOK) {
		fmt(r->err, sizeof(r->err), "delete %s: %s", r->mine, zerror(rc));
		return -1;
	}
	return 0;
}
