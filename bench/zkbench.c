/*
 * bench/zkbench.c - the measuring half of `make bench`; bench/run drives it
 * and prints the table.  Every mode prints one JSON object on stdout.  This
 * file is the command line and main(); each mode has a file of its own
 * (cycles.c, scale.c, ceiling.c, serverstats.c; bench/zkbench.h).
 *
 *   zkbench cycles --side zk|fs ...   P processes loop acquire/release on
 *                                     K locks (P = K: many locks; K = 1:
 *                                     contended; P = K = 1: uncontended)
 *   zkbench scale --side zk|fs ...    N waiters on one lock: enqueue, then
 *                                     a cascade (each leaves once granted)
 *   zkbench ceiling --zk H:P --lock ZNODE [--sessions N] [--depth D]
 *                                     the server's own limit: D async
 *                                     create+delete pairs in flight per
 *                                     session, no recipe, no waiting
 *   zkbench watchcheck --zk H:P --lock ZNODE
 *                                     checks mntr's watch counters against
 *                                     a case whose count we know
 *   zkbench mntr --zk H:P             mntr's watch counters
 *
 * The baseline (--side zk) is the textbook recipe written directly against
 * the ZooKeeper C client: create an ephemeral-sequential entry, list the
 * lock's children, watch (getData with a watch) only the entry just before
 * ours, list again when it goes; release = delete.  --side fs is
 * open(DIR/NAME, O_CREAT|O_WRONLY) and close() on zklockfs mounts.
 *
 * Timing: CLOCK_MONOTONIC, in nanoseconds.  A cycle is req (acquire
 * called) -> enter (granted) -> exit (about to release) -> done (release
 * returned).  Mutual exclusion is checked twice: a shared holder count per
 * lock (a grant while it is not 0 is a violation) and, afterwards, the
 * [enter, exit] intervals of each lock sorted by enter (an overlap is an
 * interval starting before an earlier one ended).
 */
#include "bench/zkbench.h"

/* ------------------------------------------------------------------ */
/* options */

void usage(void)
{
	fprintf(stderr,
		"usage: zkbench cycles --side zk|fs|lf --lock L[,L...] [--zk H:P] [--znode Z]\n"
		"           [--procs P] [--locks K] [--seconds S] [--cycles C] [--warmup W]\n"
		"           [--timeout T] [--mntr]\n"
		"       zkbench scale --side zk|fs --zk H:P --lock L [--znode Z] --waiters N\n"
		"           [--pid DAEMON] [--stack KIB] [--same-name] [--timeout T]\n"
		"       zkbench ceiling --zk H:P --lock ZNODE [--sessions N] [--depth D]\n"
		"           [--seconds S] [--warmup PAIRS] [--timeout T]\n"
		"       zkbench watchcheck --zk H:P --lock ZNODE\n"
		"       zkbench mntr --zk H:P\n"
		"zk: --lock is a znode; fs: --lock is one directory per mount, same lock\n");
	exit(2);
}

void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "side", required_argument, NULL, 's' },
		{ "zk", required_argument, NULL, 'z' },
		{ "lock", required_argument, NULL, 'l' },
		{ "znode", required_argument, NULL, 'n' },
		{ "procs", required_argument, NULL, 'p' },
		{ "locks", required_argument, NULL, 'k' },
		{ "waiters", required_argument, NULL, 'w' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "timeout", required_argument, NULL, 't' },
		{ "mntr", no_argument, NULL, 'm' },
		{ "pid", required_argument, NULL, 'P' },
		{ "stack", required_argument, NULL, 'K' },
		{ "same-name", no_argument, NULL, 'N' },
		{ "sessions", required_argument, NULL, 'E' },
		{ "depth", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	char *save, *d;
	int c;

	memset(o, 0, sizeof(*o));
	o->procs = o->locks = 1;
	o->seconds = 5;
	o->cycles = 1000000;
	o->warmup = -1;
	o->timeout = 120;
	o->stack_kib = 64;
	o->sessions = 1;
	o->depth = 64;
	if (argc < 2)
		usage();
	o->mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (strcmp(optarg, "fs") != 0 && strcmp(optarg, "zk") != 0 &&
			    strcmp(optarg, "lf") != 0)
				usage();
			o->lf = strcmp(optarg, "lf") == 0;
			o->fs = o->lf || strcmp(optarg, "fs") == 0;
			break;
		case 'z': o->zk = optarg; break;
		case 'l':
			for (d = strtok_r(optarg, ",", &save); d && o->ndirs < MAX_DIRS;
			     d = strtok_r(NULL, ",", &save))
				o->dirs[o->ndirs++] = d;
			break;
		case 'n': o->znode = optarg; break;
		case 'p': o->procs = atoi(optarg); break;
		case 'k': o->locks = atoi(optarg); break;
		case 'w': o->waiters = atoi(optarg); break;
		case 'S': o->seconds = atof(optarg); break;
		case 'c': o->cycles = atol(optarg); break;
		case 'W': o->warmup = atol(optarg); break;
		case 't': o->timeout = atoi(optarg); break;
		case 'm': o->mntr = true; break;
		case 'P': o->pid = (pid_t)atoi(optarg); break;
		case 'K': o->stack_kib = atoi(optarg); break;
		case 'N': o->same_name = true; break;
		case 'E': o->sessions = atoi(optarg); break;
		case 'D': o->depth = atoi(optarg); break;
		default: usage();
		}
	}
	if (o->procs < 1 || o->locks < 1 || o->locks > MAX_LOCKS || o->cycles < 1 ||
	    o->sessions < 1 || o->sessions > 64 || o->depth < 1 || o->depth > 4096)
		usage();
	/* ceiling: two rounds of every slot go uncounted (the pipeline fills in one) */
	if (o->warmup < 0 && strcmp(o->mode, "ceiling") == 0)
		o->warmup = 2L * o->depth * o->sessions;
	else if (o->warmup < 0)
		o->warmup = o->procs * 2 > 10 ? o->procs * 2 : 10;
}

int main(int argc, char **argv)
{
	struct opts o;

	parse(argc, argv, &o);
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(o.mode, "cycles") == 0)
		return run_cycles(&o);
	if (strcmp(o.mode, "scale") == 0)
		return run_scale(&o);
	if (strcmp(o.mode, "ceiling") == 0)
		return run_ceiling(&o);
	if (strcmp(o.mode, "watchcheck") == 0)
		return run_watchcheck(&o);
	if (strcmp(o.mode, "mntr") == 0)
		return run_mntr(&o);
	usage();
	return 2;
}
