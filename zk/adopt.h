/*
 * zk/adopt.h - after an unknown create: is a candidate entry ours?
 *
 * A create whose reply was lost (connection loss) may or may not have made
 * our entry.  The daemon then lists the queue and reads each entry whose
 * name could be ours.  Our data ends in a nonce line ("zkl=<hex>\n"), but
 * that data is world-readable: during the outage anyone may plant the same
 * line in an entry of their own.  So an entry is ours only if it also was
 * never set since its create (version 0) and belongs to the session whose
 * handle sent our create (ephemeralOwner).  Pure: no locks, any thread;
 * inline, so that the engine and the unit test need no object of it.
 */
#ifndef ZK_ADOPT_H
#define ZK_ADOPT_H

#include <stdint.h>
#include <string.h>

enum zka_verdict {
	ZKA_OTHER,	/* no nonce of ours: not ours, look further */
	ZKA_OURS,	/* our entry: adopt it */
	ZKA_PLANTED,	/* carries our nonce but is not ours: leave it alone */
};

/*
 * zka_candidate() - is the entry with data @value (@len bytes), data
 * version @version and ephemeralOwner @owner the one our create made?
 * @nonce: our nonce line; @session: the id of the session that sent the
 * create (0 if unknown: then nothing is ours).
 */
static inline enum zka_verdict zka_candidate(const char *value, int len,
					     const char *nonce, int32_t version,
					     int64_t owner, int64_t session)
{
	size_t nl = strlen(nonce);

	if (!value || len < 0 || (size_t)len < nl || nl == 0 ||
	    memcmp(value + len - nl, nonce, nl) != 0)
		return ZKA_OTHER;
	if (version != 0 || session == 0 || owner != session)
		return ZKA_PLANTED;
	return ZKA_OURS;
}

#endif /* ZK_ADOPT_H */
