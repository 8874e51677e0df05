/*
 * tools/moves.c - print the tables of a waiter's small state machines
 * (zk/moves.h), a lock request's (fs/lrmoves.h), a session's
 * (zk/sessmoves.h) and an observer's (fs/obsmoves.h), and their legal
 * moves, from that one source, as docs/DESIGN.md shows them (§9).  `make check-docs` compares its output with the
 * document, so the table a reader trusts is the one the checker enforces.
 *
 *   build/moves        the tables, in Markdown, on stdout
 */
#include <stdio.h>

#include "fs/lrmoves.h"
#include "fs/obsmoves.h"
#include "zk/moves.h"
#include "zk/sessmoves.h"

struct state {
	const char *name, *what;
};

struct move {
	const char *from, *to, *when;
};

#define STATE(s, what) { #s, what },
#define MOVE(f, t, when) { #f, #t, when },
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void table(const char *field, const char *setter, const struct state *st,
		  size_t ns, const struct move *mv, size_t nm)
{
	printf("#### `%s` (`%s`)\n\n", field, setter);
	printf("| state | means |\n|---|---|\n");
	for (size_t i = 0; i < ns; i++)
		printf("| %s | %s |\n", st[i].name, st[i].what);
	printf("\n| from | to | when |\n|---|---|---|\n");
	for (size_t i = 0; i < nm; i++)
		printf("| %s | %s | %s |\n", mv[i].from, mv[i].to, mv[i].when);
	printf("\n");
}

int main(void)
{
	static const struct state wstates[] = { ZKE_WSTATES(STATE) };
	static const struct move wmoves[] = { ZKE_WSTATE_MOVES(MOVE) };
	static const struct state stalls[] = { ZKE_STALLS(STATE) };
	static const struct move smoves[] = { ZKE_STALL_MOVES(MOVE) };
	static const struct state answers[] = { ZKE_ANSWERS(STATE) };
	static const struct move amoves[] = { ZKE_ANSWER_MOVES(MOVE) };
	static const struct state entries[] = { ZKE_ENTRIES(STATE) };
	static const struct move emoves[] = { ZKE_ENTRY_MOVES(MOVE) };
	static const struct state watches[] = { ZKE_WATCHES(STATE) };
	static const struct move omoves[] = { ZKE_WATCH_MOVES(MOVE) };
	static const struct state lrstates[] = { ZKLFS_LR_STATES(STATE) };
	static const struct move lrmoves[] = { ZKLFS_LR_MOVES(MOVE) };
	static const struct state listates[] = { ZKLFS_LI_STATES(STATE) };
	static const struct move limoves[] = { ZKLFS_LI_MOVES(MOVE) };
	static const struct state links[] = { ZKS_LINKS(STATE) };
	static const struct move lkmoves[] = { ZKS_LINK_MOVES(MOVE) };
	static const struct state news[] = { ZKS_NEWS(STATE) };
	static const struct move nmoves[] = { ZKS_NEWS_MOVES(MOVE) };
	static const struct state fetches[] = { OBS_FETCHES(STATE) };
	static const struct move fmoves[] = { OBS_FETCH_MOVES(MOVE) };
	static const struct state owatches[] = { OBS_WATCHES(STATE) };
	static const struct move owmoves[] = { OBS_WATCH_MOVES(MOVE) };

	table("state", "zke_set_state_locked()", wstates, N(wstates), wmoves, N(wmoves));
	table("stall", "zke_stall_locked(), zke_unstall_locked()", stalls, N(stalls),
	      smoves, N(smoves));
	table("ans", "set_answer_locked(), zke_set_lost_locked()", answers, N(answers), amoves, N(amoves));
	table("entry", "zke_set_entry_locked()", entries, N(entries), emoves, N(emoves));
	table("own, dirwatch", "zke_set_own_locked(), zke_set_dirwatch_locked()", watches,
	      N(watches), omoves, N(omoves));
	table("lockreq.state", "lockreq_set_state_locked(), fs/lockreq.c", lrstates,
	      N(lrstates), lrmoves, N(lrmoves));
	table("lockreq.intr", "lockreq_set_intr_locked(), fs/lockreq.c", listates,
	      N(listates), limoves, N(limoves));
	table("zks.link", "set_link_locked(), zk/session.c", links, N(links), lkmoves,
	      N(lkmoves));
	table("zks.news", "set_news_locked(), zk/session.c", news, N(news), nmoves,
	      N(nmoves));
	table("observer.fetch", "set_fetch_locked(), fs/observe.c", fetches, N(fetches),
	      fmoves, N(fmoves));
	table("observer.watch", "set_watch_locked(), fs/observe.c", owatches,
	      N(owatches), owmoves, N(owmoves));
	return 0;
}
