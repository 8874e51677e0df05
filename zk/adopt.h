/*
 * zk/adopt.h - after an unknown create: is a candidate entry ours?
 *
 * A create whose reply was lost (connection loss) may or may not have made
 * our entry.  The daemon then lists the queue and reads each entry whose
 * name could be ours.  Our data ends in a nonce line ("zkl=<hex>\n"), but
 * that data is world-readable: during the outage anyone may plant the same
 * line in an entry of their own, or (a client allowed to write our
 * entries) in another entry of our session.  So an entry is ours only if it
 * belongs to the session whose handle sent our create (ephemeralOwner) and
 * is no other waiter's entry already (@taken): then no entry ever has two
 * owners, whatever was planted.  Its data version is no sign: a semaphore's
 * release pokes a waiting entry by setting its data to what it was
 * (zk/sem.c), and that may befall ours before we find it again.  Pure: no
 * locks, any thread; inline, so that the engine and the unit test need no
 * object of it.
 */
#ifndef ZK_ADOPT_H
#define ZK_ADOPT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum zka_verdict {
	ZKA_OTHER,	/* no nonce of ours: not ours, look further */
	ZKA_OURS,	/* our entry: adopt it */
	ZKA_PLANTED,	/* carries our nonce but is not ours: leave it alone */
};

/*
 * zka_candidate() - is the entry with data @value (@len bytes) and
 * ephemeralOwner @owner the one our create made?  @nonce: our nonce line;
 * @session: the id of the session that sent the create (0 if unknown: then
 * nothing is ours); @taken: the entry is another waiter's of ours.
 */
static inline enum zka_verdict zka_candidate(const char *value, int len,
					     const char *nonce, int64_t owner,
					     int64_t session, bool taken)
{
	size_t nl = strlen(nonce);

	if (!value || len < 0 || (size_t)len < nl || nl == 0 ||
	    memcmp(value + len - nl, nonce, nl) != 0)
		return ZKA_OTHER;
	if (taken || session == 0 || owner != session)
		return ZKA_PLANTED;
	return ZKA_OURS;
}

#endif /* ZK_ADOPT_H */
