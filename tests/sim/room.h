/*
 * tests/sim/room.h - the simulator's growing arrays.
 *
 * SIM_ROOM(a, n, cap, first) - make room in the array @a, of @cap elements
 * with @n in use, for one more: @cap doubles when full (from @first).  Out
 * of memory it aborts: a simulation has no use for less.  One thread.
 */
#ifndef SIM_ROOM_H
#define SIM_ROOM_H

#include <stdlib.h>

#define SIM_ROOM(a, n, cap, first)						\
	do {									\
		if ((n) == (cap)) {						\
			(cap) = (cap) ? 2 * (cap) : (first);			\
			(a) = realloc((a), (size_t)(cap) * sizeof(*(a)));	\
			if (!(a))						\
				abort();					\
		}								\
	} while (0)

#endif
