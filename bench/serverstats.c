/*
 * bench/serverstats.c - what the server and a daemon say of themselves:
 * /proc/PID/status, mntr's watch counters, and the watchcheck and mntr
 * modes (see bench/zkbench.h).
 */
#include "bench/zkbench.h"

/* /proc/PID/status */

int pstat_read(pid_t pid, struct pstat *ps)
{
	char path[64], line[256];
	FILE *f;

	memset(ps, 0, sizeof(*ps));
	if (pid > 0)
		fmt(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		fmt(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld", &ps->rss_kib);
		sscanf(line, "VmHWM: %ld", &ps->hwm_kib);
		sscanf(line, "Threads: %ld", &ps->threads);
	}
	fclose(f);
	return 0;
}

void pstat_json(const char *key, const struct pstat *ps)
{
	printf("\"%s\":{\"rss_kib\":%ld,\"hwm_kib\":%ld,\"threads\":%ld}", key,
	       ps->rss_kib, ps->hwm_kib, ps->threads);
}

/* ------------------------------------------------------------------ */
/* mntr: the server's watch counters (4lw, whitelisted by bench/zoo.cfg) */

static const struct {
	const char *key;
	size_t off;
} mntr_keys[] = {
	{ "zk_watch_count", offsetof(struct mntr, watches) },
	{ "zk_sum_node_deleted_watch_count", offsetof(struct mntr, del_sum) },
	{ "zk_cnt_node_deleted_watch_count", offsetof(struct mntr, del_cnt) },
	{ "zk_sum_node_children_watch_count", offsetof(struct mntr, chi_sum) },
	{ "zk_sum_node_changed_watch_count", offsetof(struct mntr, chg_sum) },
	{ "zk_sum_node_created_watch_count", offsetof(struct mntr, cre_sum) },
};

/* mntr_read() - ask the server at @hostport. Return: 0 or -errno. */
int mntr_read(const char *hostport, struct mntr *m)
{
	char host[256], buf[65536], *port, *line, *save;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct timeval tv = { 5, 0 };
	size_t got = 0;
	ssize_t n;
	int fd, found = 0;

	fmt(host, sizeof(host), "%s", hostport);
	port = strrchr(host, ':');
	if (!port)
		return -EINVAL;
	*port++ = '\0';
	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -EHOSTUNREACH;
	fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return err;
	}
	freeaddrinfo(ai);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(fd, "mntr", 4) != 4) {
		close(fd);
		return -EIO;
	}
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	memset(m, 0, sizeof(*m));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (!tab)
			continue;
		*tab = '\0';
		for (size_t i = 0; i < sizeof(mntr_keys) / sizeof(mntr_keys[0]); i++) {
			if (strcmp(line, mntr_keys[i].key) == 0) {
				*(long long *)((char *)m + mntr_keys[i].off) = atoll(tab + 1);
				found++;
			}
		}
	}
	return found == (int)(sizeof(mntr_keys) / sizeof(mntr_keys[0])) ? 0 : -EPROTO;
}

void mntr_delta_json(const char *key, const struct mntr *a, const struct mntr *b)
{
	printf("\"%s\":{\"node_deleted\":%lld,\"node_deleted_events\":%lld,"
	       "\"node_children\":%lld,\"node_changed\":%lld,\"node_created\":%lld,"
	       "\"watches_before\":%lld,\"watches_after\":%lld}", key,
	       b->del_sum - a->del_sum, b->del_cnt - a->del_cnt, b->chi_sum - a->chi_sum,
	       b->chg_sum - a->chg_sum, b->cre_sum - a->cre_sum, a->watches, b->watches);
}

long long mntr_fired(const struct mntr *a, const struct mntr *b)
{
	return (b->del_sum - a->del_sum) + (b->chi_sum - a->chi_sum) +
	       (b->chg_sum - a->chg_sum) + (b->cre_sum - a->cre_sum);
}


/* ------------------------------------------------------------------ */
/* watchcheck: does mntr count what we think it counts? */

int run_watchcheck(const struct opts *o)
{
	struct zconn za, zb, zc, zd;
	zhandle_t *a, *b, *c, *d;
	struct gate g[7];
	struct mntr m0, m1, m2;
	struct String_vector sv;
	struct Stat st;
	char x[1024], y[1024], z[1024], buf[64];
	const char *base;
	int blen, rc = 0, fired = 0;
	bool ok;

	if (!o->zk || o->ndirs != 1)
		usage();
	base = o->dirs[0];
	fmt(x, sizeof(x), "%s/x", base);
	fmt(y, sizeof(y), "%s/y", base);
	fmt(z, sizeof(z), "%s/z", base);
	a = zconn_connect(o->zk, &za);
	b = zconn_connect(o->zk, &zb);
	c = zconn_connect(o->zk, &zc);
	d = zconn_connect(o->zk, &zd);
	if (!a || !b || !c || !d) {
		printf("{\"mode\":\"watchcheck\",\"ok\":false,\"error\":\"cannot connect\"}\n");
		return 1;
	}
	zoo_delete(d, x, -1);
	zoo_delete(d, y, -1);
	zoo_delete(d, z, -1);
	if (zconn_mkdir_p(d, x) != ZOK || zconn_mkdir_p(d, y) != ZOK) {
		printf("{\"mode\":\"watchcheck\",\"ok\":false,"
		       "\"error\":\"cannot create %s\"}\n", x);
		return 1;
	}
	for (int i = 0; i < 7; i++)
		gate_init(&g[i]);
	mntr_read(o->zk, &m0);
	/* three sessions watch x (C twice: one watch on the server), A the children */
	rc |= zoo_wexists(a, x, gate_watcher, &g[0], &st);
	rc |= zoo_wget_children(a, base, gate_watcher, &g[1], &sv);
	deallocate_String_vector(&sv);
	blen = sizeof(buf);
	rc |= zoo_wget(b, x, gate_watcher, &g[2], buf, &blen, &st);
	rc |= zoo_wexists(c, x, gate_watcher, &g[3], &st);
	blen = sizeof(buf);
	rc |= zoo_wget(c, x, gate_watcher, &g[4], buf, &blen, &st);
	/* B watches y's data, A waits for z to be created */
	blen = sizeof(buf);
	rc |= zoo_wget(b, y, gate_watcher, &g[5], buf, &blen, &st);
	if (zoo_wexists(a, z, gate_watcher, &g[6], &st) != ZNONODE)
		rc = -1;
	mntr_read(o->zk, &m1);
	rc |= zoo_delete(d, x, -1);
	rc |= zoo_set(d, y, "v", 1, -1);
	rc |= zoo_create(d, z, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
	for (int i = 0; i < 7; i++)
		fired += gate_wait(&g[i], 5);
	sleep_ms(100);
	mntr_read(o->zk, &m2);
	zoo_delete(d, y, -1);
	zoo_delete(d, z, -1);
	ok = rc == 0 && fired == 7 && m1.watches - m0.watches == 6 &&
	     m2.del_sum - m1.del_sum == 3 && m2.del_cnt - m1.del_cnt == 1 &&
	     m2.chi_sum - m1.chi_sum == 1 && m2.chg_sum - m1.chg_sum == 1 &&
	     m2.cre_sum - m1.cre_sum == 1 && m2.watches == m0.watches;
	printf("{\"mode\":\"watchcheck\",\"ok\":%s,\"client_events\":%d,"
	       "\"expected\":{\"armed\":6,\"node_deleted\":3,\"node_deleted_events\":1,"
	       "\"node_children\":1,\"node_changed\":1,\"node_created\":1,\"left\":0},"
	       "\"got\":{\"armed\":%lld,\"node_deleted\":%lld,\"node_deleted_events\":%lld,"
	       "\"node_children\":%lld,\"node_changed\":%lld,\"node_created\":%lld,\"left\":%lld},"
	       "\"case\":",
	       ok ? "true" : "false", fired, m1.watches - m0.watches,
	       m2.del_sum - m1.del_sum, m2.del_cnt - m1.del_cnt, m2.chi_sum - m1.chi_sum,
	       m2.chg_sum - m1.chg_sum, m2.cre_sum - m1.cre_sum, m2.watches - m0.watches);
	json_str("sessions A,B,C watch x (C twice: exists+getData), A watches the children "
		 "of its parent, B y's data, A z's creation; D deletes x, sets y, creates z");
	printf("}\n");
	zookeeper_close(a);
	zookeeper_close(b);
	zookeeper_close(c);
	zookeeper_close(d);
	return ok ? 0 : 1;
}

int run_mntr(const struct opts *o)
{
	struct mntr m;

	if (!o->zk)
		usage();
	if (mntr_read(o->zk, &m) != 0) {
		fprintf(stderr, "zkbench: cannot read mntr from %s\n", o->zk);
		return 1;
	}
	printf("{\"mode\":\"mntr\",\"watches\":%lld,\"node_deleted\":%lld,"
	       "\"node_deleted_events\":%lld,\"node_children\":%lld,\"node_changed\":%lld,"
	       "\"node_created\":%lld}\n", m.watches, m.del_sum, m.del_cnt, m.chi_sum,
	       m.chg_sum, m.cre_sum);
	return 0;
}
