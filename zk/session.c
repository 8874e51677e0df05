/*
 * zk/session.c - connecting, supervising, replacing an expired session.
 * The credentials and ACLs are zk/creds.c's; the calls on the current
 * handle zk/calls.c's.
 */
#include "zk/session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zk/clock.h"
#include "zk/errno.h"
#include "zk/metrics.h"
#include "zk/moves.h"
#include "zk/creds.h"
#include "zk/log.h"

/*
 * The clock of silence, ticks and lingers: CLOCK_BOOTTIME runs through a
 * suspend, as the server's clock does (CLOCK_MONOTONIC stops, and a host
 * resumed past the session timeout would think it heard the server a
 * moment ago).  The condition variable still waits on CLOCK_MONOTONIC (the
 * only other clock it takes); a wait that a suspend makes late is covered
 * by zks_quiet(), which reads this clock when asked.
 */
static uint64_t boot_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int margin_ms(const struct zks *s);
static bool quiet_locked(const struct zks *s);

/*
 * Publish until when the server surely keeps the session (abi/zklockfs.h):
 * the instant quiet_locked() turns true, so zklock and the daemon act at
 * once.  s->lock held; whenever last_heard_ms or the handle changes.
 */
static void publish_locked(struct zks *s)
{
	if (!s->hb)
		return;
	atomic_store_explicit(&s->hb->gen, s->hb_gen, memory_order_release);
	atomic_store_explicit(&s->hb->margin_ms, (uint64_t)margin_ms(s), memory_order_relaxed);
	atomic_store_explicit(&s->hb->until_ms, s->last_heard_ms +
			      (uint64_t)(s->negotiated_ms - margin_ms(s)), memory_order_release);
}

/* The client's own lines repeat per retry: only with -d.  We log events. */
static void zks_log_cb(const char *message)
{
	zklog(LOG_DEBUG, "zookeeper: %s", message);
}

/*
 * The one way each of the session's machines moves (s->lock held): a
 * move zk/sessmoves.h does not list aborts in the sanitizer builds
 * (ZKL_LOCKCHECK); a state repeated is no move.
 */
#define NAME(st, why) #st,
#define LINK_MOVE(f, t, why) { ZKS_LINK_##f, ZKS_LINK_##t },
#define NEWS_MOVE(f, t, why) { ZKS_NEWS_##f, ZKS_NEWS_##t },
static const char *const link_names[] = { ZKS_LINKS(NAME) };
static const char *const news_names[] = { ZKS_NEWS(NAME) };
static const struct zke_move link_moves[] = { ZKS_LINK_MOVES(LINK_MOVE) };
static const struct zke_move news_moves[] = { ZKS_NEWS_MOVES(NEWS_MOVE) };
#undef NAME
#undef LINK_MOVE
#undef NEWS_MOVE

static void set_link_locked(struct zks *s, enum zks_link to)
{
	if (s->link == to)
		return;
	zke_check_move(ZKE_MOVES(link_moves), link_names, "link", s->link, to, "session");
	s->link = to;
}

static void set_news_locked(struct zks *s, enum zks_news to)
{
	if (s->news == to)
		return;
	zke_check_move(ZKE_MOVES(news_moves), news_names, "news", s->news, to, "session");
	s->news = to;
}

/* Session events of the current handle (on the thread that drives it). */
static void zks_watcher(zhandle_t *zh, int type, int state, const char *path,
			void *ctx)
{
	struct zks *s = ctx;

	(void)path;
	if (type != ZOO_SESSION_EVENT)
		return;
	pthread_mutex_lock(&s->lock);
	if (zh == s->dead) {		/* the expired handle, being replaced */
		pthread_mutex_unlock(&s->lock);
		return;
	}
	s->state = state;
	if (state == ZOO_CONNECTED_STATE || state == ZOO_CONNECTING_STATE ||
	    state == ZOO_EXPIRED_SESSION_STATE)
		atomic_fetch_add(&s->links, 1);
	if (state == ZOO_CONNECTED_STATE) {
		int t = zoo_recv_timeout(zh);

		if (t > 0 && t != s->negotiated_ms) {
			if (t != s->timeout_ms)
				zklog(LOG_NOTICE, "ZooKeeper set the session timeout to %d ms (asked: %d)",
				      t, s->timeout_ms);
			s->negotiated_ms = t;
		}
		/*
		 * The server renewed the session when it read our
		 * ConnectRequest, a one-way delay before this event: on a
		 * slow link, longer than the margin.  When that was, no
		 * clock of ours says (the client sent the request from
		 * inside zookeeper_interest() and says not when), so it
		 * moves nothing: a ping sent now says, and a silence in force
		 * ends with its answer (ping_done()), which then tells the
		 * engine of the reconnect.
		 */
		s->tick_at = boot_ms();
		publish_locked(s);		/* the timeout may be another */
	}
	if (s->link == ZKS_LINK_EXPIRED) {
		/* a dead handle connects no more (and expires once): the
		 * supervisor renews it */
	} else if (state == ZOO_CONNECTED_STATE) {
		if (s->news == ZKS_NEWS_SILENT && !quiet_locked(s))
			set_news_locked(s, s->link == ZKS_LINK_DOWN ? ZKS_NEWS_BACK
								   : ZKS_NEWS_NONE);
		else if (s->news == ZKS_NEWS_NONE && s->link == ZKS_LINK_DOWN)
			set_news_locked(s, ZKS_NEWS_BACK);
		set_link_locked(s, ZKS_LINK_UP);
	} else if (state == ZOO_CONNECTING_STATE) {
		if (s->link != ZKS_LINK_DOWN)
			zkm_connection_lost();
		set_link_locked(s, ZKS_LINK_DOWN);
	} else if (state == ZOO_EXPIRED_SESSION_STATE) {
		zkm_expired();
		set_link_locked(s, ZKS_LINK_EXPIRED);
	}
	zkm_session_state(state);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/*
 * A ping of ours: the server had heard us when it read it, after @sent.
 *
 * It is a sync, not a read.  The leader alone expires sessions; a
 * follower passes on what it heard of ours at its own pings to the leader.
 * A follower cut off from its leader goes on answering reads for syncLimit
 * ticks (seconds, by default ten) before it notices and drops its
 * clients, while the leader counts our session silent from the cut.  A
 * sync goes through the leader: one answered means the follower still
 * reached its leader after our send.  What a follower heard of us reaches
 * the leader with its answer to the leader's next ping, half a tick later
 * at most; if the cut comes first, the leader last heard of an earlier
 * ping of ours.  So an answered ping counts from the send of the latest
 * one answered at least a period before it (recent[]): the leader had
 * heard of that one while a tick is at most two of our periods, and the
 * margin stays whole.
 */
struct ping {
	struct zks *s;
	uint64_t sent;
	uint64_t id;		/* s->ping_next when sent */
};

/* The send time to count an answered ping @sent from (see above).  s->lock
 * held; records @sent among the answered ones. */
static uint64_t heard_by_locked(struct zks *s, uint64_t sent)
{
	uint64_t by = 0, upto = sent - (uint64_t)margin_ms(s);

	for (int i = 0; i < ZKS_RECENT; i++)
		if (s->recent[i] <= upto && s->recent[i] > by)
			by = s->recent[i];
	s->recent[s->nrecent++ % ZKS_RECENT] = sent;
	return by;
}

static void ping_done(int rc, const char *value, const void *data)
{
	struct ping *p = (struct ping *)data;
	struct zks *s = p->s;

	(void)value;
	pthread_mutex_lock(&s->lock);
	if (p->id >= s->ping_done)	/* answered or failed: no more out */
		s->ping_done = p->id + 1;
	if (rc == ZOK && p->id >= s->ping_answered)
		s->ping_answered = p->id + 1;
	if (s->doubt)		/* the supervisor may end the doubt now */
		pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (rc == ZOK) {
		pthread_mutex_lock(&s->lock);
		uint64_t by = heard_by_locked(s, p->sent);

		if (by > s->last_heard_ms) {
			s->last_heard_ms = by;
			publish_locked(s);
		}
		/*
		 * A silence ends once the server surely heard us within the
		 * timeout less the margin again, with the connection up (a
		 * late reconnect, a slow link): the session lives, and the
		 * engine redoes what it failed, as after a reconnect.
		 */
		if (s->news == ZKS_NEWS_SILENT && s->link != ZKS_LINK_EXPIRED &&
		    s->state == ZOO_CONNECTED_STATE && !quiet_locked(s)) {
			set_news_locked(s, ZKS_NEWS_BACK);
			pthread_cond_broadcast(&s->cond);
		}
		pthread_mutex_unlock(&s->lock);
	}
	free(p);
}

static void send_ping(struct zks *s)
{
	struct ping *p = malloc(sizeof(*p));

	if (!p)
		return;
	p->s = s;
	p->sent = boot_ms();
	pthread_mutex_lock(&s->lock);
	if (s->ping_next - s->ping_done >= ZKS_PINGS_OUT) {
		pthread_mutex_unlock(&s->lock);	/* in doubt already */
		free(p);
		return;
	}
	p->id = s->ping_next++;
	s->pings_out[p->id % ZKS_PINGS_OUT] = p->sent;
	pthread_mutex_unlock(&s->lock);
	/* a ping that cannot go out is taken back (the supervisor alone
	 * sends them: it is still the last one) */
	if (zks_async_sync(s, "/", ping_done, p) != ZOK) {
		pthread_mutex_lock(&s->lock);
		if (s->ping_next == p->id + 1)
			s->ping_next = p->id;
		pthread_mutex_unlock(&s->lock);
		free(p);
	}
}

static zhandle_t *zks_init_handle(struct zks *s)
{
	zhandle_t *zh = zookeeper_init2(s->connect, zks_watcher, s->timeout_ms,
					NULL, s, 0, zks_log_cb);

	if (!zh)
		return NULL;
	/* The client re-resolves the server names (getaddrinfo: /etc/hosts,
	 * a netlink socket, /dev/urandom) every time it is asked what to
	 * poll for, which under load was a third of the daemon's CPU.  -1:
	 * resolve only when (re)connecting, as the Java client does. */
	zoo_set_servers_resolution_delay(zh, -1);
	if (s->auth)
		zoo_add_auth(zh, "digest", s->auth, (int)strlen(s->auth), NULL, NULL);
	return zh;
}

static int wait_connected(struct zks *s);
static void run_later(struct zks *s, bool go);

int zks_open(struct zks *s, const char *connect, int timeout_ms,
	     const char *auth_file, enum zkacl acl)
{
	zhandle_t *zh;
	int err = 0;

	memset(s, 0, sizeof(*s));
	s->inited = true;
	pthread_rwlock_init(&s->rw, NULL);
	pthread_mutex_init(&s->lock, NULL);
	zk_cond_init_monotonic(&s->cond);
	zks_calls_init(s, NULL);
	zkd_add(&s->client);
	s->timeout_ms = s->negotiated_ms = timeout_ms;
	s->connect = strdup(connect);
	if (!s->connect)
		return -ENOMEM;
	s->acl = zkcred_acl(auth_file ? acl : ZKACL_OPEN);
	if (auth_file) {
		err = zkcred_read_auth(auth_file, &s->auth);
		if (err)
			return err;
	}
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zh = zks_init_handle(s);
	if (!zh) {
		zklog(LOG_ERR, "cannot start a ZooKeeper client for '%s': %s",
		      connect, strerror(errno));
		return -EINVAL;
	}
	zks_replace(s, zh, false);
	err = wait_connected(s);
	if (err)
		zklog(LOG_ERR, "cannot reach ZooKeeper at %s within %d ms", connect,
		      timeout_ms);
	return err;
}

static bool connected_or_refused(void *arg)
{
	const struct zks *s = arg;

	return s->state == ZOO_CONNECTED_STATE || s->state == ZOO_AUTH_FAILED_STATE ||
	       s->link == ZKS_LINK_EXPIRED;
}

/* Wait, at most the session timeout, for the new handle's session. */
static int wait_connected(struct zks *s)
{
	struct timespec deadline;
	int err = 0;

	zk_deadline_in(&deadline, CLOCK_MONOTONIC, s->timeout_ms);
	pthread_mutex_lock(&s->lock);
	if (!zkd_wait(&s->lock, &s->cond, connected_or_refused, s, &deadline))
		err = -ETIMEDOUT;
	else if (s->state != ZOO_CONNECTED_STATE)
		err = -EACCES;
	pthread_mutex_unlock(&s->lock);
	return err;
}

/*
 * A call whose answer a thread of ours waits for (start-up, a barrier):
 * made as any other, then zkd_wait() until its completion says.
 */
struct waited {
	struct zks *s;
	bool done;
	int rc;
	struct Stat st;
	const char *path, *auth;	/* an ACL's judge */
	int verdict;
};

static bool waited_done(void *arg)
{
	return ((struct waited *)arg)->done;
}

static void waited_set(struct waited *w, int rc, const struct Stat *st)
{
	pthread_mutex_lock(&w->s->lock);
	w->rc = rc;
	if (st)
		w->st = *st;
	w->done = true;
	pthread_cond_broadcast(&w->s->cond);
	pthread_mutex_unlock(&w->s->lock);
}

static void waited_stat(int rc, const struct Stat *st, const void *data)
{
	waited_set((struct waited *)data, rc, st);
}

static void waited_created(int rc, const char *name, const struct Stat *st, const void *data)
{
	(void)name;
	waited_set((struct waited *)data, rc, st);
}

static void waited_listed(int rc, const struct String_vector *sv, const struct Stat *st,
			  const void *data)
{
	(void)sv;
	waited_set((struct waited *)data, rc, st);
}

static void waited_acl(int rc, struct ACL_vector *acl, struct Stat *st, const void *data)
{
	struct waited *w = (struct waited *)data;

	/* the listing before it succeeded: a failure is not ours to judge */
	w->verdict = rc == ZOK && acl ? zkcred_may_create(acl, w->path, w->auth) : 0;
	waited_set(w, rc, st);
}

/* Wait for @w's call, which returned @rc.  Return: its answer. */
static int waited_for(struct waited *w, int rc)
{
	if (rc != ZOK)
		return rc;
	pthread_mutex_lock(&w->s->lock);
	zkd_wait(&w->s->lock, &w->s->cond, waited_done, w, NULL);
	pthread_mutex_unlock(&w->s->lock);
	return w->rc;
}

/* Stop the supervisor (no zks_later() from now on) and join it. */
static void stop_supervisor(struct zks *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->started)
		pthread_join(s->supervisor, NULL);
	s->started = false;
	run_later(s, false);
}

/*
 * A barrier: one session's requests complete in order, so once this
 * returns every request sent before has completed (zookeeper_close() with
 * requests in flight may leak their completions).  Bounded by the
 * client's own timeout; never in a callback.
 */
static void drain(struct zks *s)
{
	struct waited w = { .s = s };
	bool connected;

	pthread_mutex_lock(&s->lock);
	connected = s->state == ZOO_CONNECTED_STATE && s->link != ZKS_LINK_EXPIRED;
	pthread_mutex_unlock(&s->lock);
	if (connected)
		waited_for(&w, zks_aexists(s, "/", waited_stat, &w));
}

void zks_hibernate(struct zks *s)
{
	stop_supervisor(s);
	drain(s);
	zks_replace(s, NULL, true);	/* a late call fails at once, unsent */
	pthread_mutex_lock(&s->lock);
	s->hb_gen++;
	publish_locked(s);
	pthread_mutex_unlock(&s->lock);
}

int zks_wake(struct zks *s)
{
	zhandle_t *zh;
	int err;

	pthread_mutex_lock(&s->lock);
	s->state = ZOO_CONNECTING_STATE;
	set_link_locked(s, ZKS_LINK_NEW);
	set_news_locked(s, ZKS_NEWS_NONE);
	s->tick_at = 0;
	s->nrecent = 0;
	memset(s->recent, 0, sizeof(s->recent));
	s->negotiated_ms = s->timeout_ms;
	pthread_mutex_unlock(&s->lock);
	zh = zks_init_handle(s);
	if (!zh)
		return -errno;
	zks_replace(s, zh, false);
	atomic_fetch_add(&s->links, 1);
	err = wait_connected(s);
	if (!err) {
		pthread_mutex_lock(&s->lock);
		s->stop = false;
		pthread_mutex_unlock(&s->lock);
		err = zks_start(s, &s->ev);
	}
	if (!err) {	/* a silence the engine was told of before is over */
		s->ev.connected(s->ev.arg);
	} else {
		zklog(LOG_WARNING, "cannot open another ZooKeeper session: %s", strerror(-err));
		zks_hibernate(s);
	}
	return err;
}

/* Replace the expired handle: new one in, then the old one closed. */
static void zks_renew(struct zks *s)
{
	zhandle_t *nzh;

	zklog(LOG_WARNING, "ZooKeeper session expired: opening a new one");
	/* before the new handle exists: its first events must not be undone */
	pthread_mutex_lock(&s->lock);
	s->dead = s->zh;
	s->state = ZOO_CONNECTING_STATE;
	set_link_locked(s, ZKS_LINK_DOWN);	/* its CONNECTED redoes what failed */
	if (s->news == ZKS_NEWS_BACK)		/* the engine hears of the expiry */
		set_news_locked(s, ZKS_NEWS_NONE);
	/* the new session begins after this: the server hears it by then
	 * (this thread, before the handle exists: no event can come first) */
	s->last_heard_ms = boot_ms();
	s->hb_gen++;			/* what the old session held is lost */
	publish_locked(s);
	pthread_mutex_unlock(&s->lock);
	for (;;) {
		nzh = zks_init_handle(s);
		if (nzh)
			break;
		zklog(LOG_ERR, "cannot start a ZooKeeper client: %s", strerror(errno));
		struct timespec ts = { 0, 200 * 1000000L };
		nanosleep(&ts, NULL);
	}
	zks_replace(s, nzh, true);	/* the old one's completions fire now,
					   with errors */
	pthread_mutex_lock(&s->lock);
	s->dead = NULL;		/* no event of it comes any more */
	if (s->state == ZOO_CONNECTED_STATE)
		s->tick_at = boot_ms();	/* no ping went out while we closed */
	pthread_mutex_unlock(&s->lock);
}

struct zks_later {
	struct zks_later *next;
	void (*fn)(void *arg, bool go);
	void *arg;
};

int zks_later(struct zks *s, void (*fn)(void *arg, bool go), void *arg)
{
	struct zks_later *l = malloc(sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->fn = fn;
	l->arg = arg;
	pthread_mutex_lock(&s->lock);
	if (s->stop) {
		pthread_mutex_unlock(&s->lock);
		free(l);
		return -ESHUTDOWN;
	}
	l->next = s->later;
	s->later = l;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Run (@go) or give up every zks_later() queued so far. */
static void run_later(struct zks *s, bool go)
{
	struct zks_later *l, *next;

	pthread_mutex_lock(&s->lock);
	l = s->later;
	s->later = NULL;
	pthread_mutex_unlock(&s->lock);
	for (; l; l = next) {
		next = l->next;
		l->fn(l->arg, go);
		free(l);
	}
}

int zks_timeout_ms(struct zks *s)
{
	int t;

	pthread_mutex_lock(&s->lock);
	t = s->negotiated_ms;
	pthread_mutex_unlock(&s->lock);
	return t;
}

uint64_t zks_now_ms(void)
{
	return boot_ms();
}

/* The margin silence is declared by, before the server could expire us. */
static int margin_ms(const struct zks *s)
{
	int period = s->timeout_ms / 10;

	return period < 20 ? 20 : period > 1000 ? 1000 : period;
}

/* Has nothing been heard for the session timeout less the margin? s->lock held. */
static bool quiet_locked(const struct zks *s)
{
	return boot_ms() - s->last_heard_ms >= (uint64_t)(s->negotiated_ms - margin_ms(s));
}

bool zks_quiet(struct zks *s)
{
	bool q;

	pthread_mutex_lock(&s->lock);
	q = s->news == ZKS_NEWS_SILENT || s->link == ZKS_LINK_EXPIRED || quiet_locked(s);
	pthread_mutex_unlock(&s->lock);
	return q;
}

uint64_t zks_doubt_after_ms(int timeout_ms)
{
	int period = timeout_ms / 10;

	return 2 * (uint64_t)(period < 20 ? 20 : period > 1000 ? 1000 : period);
}

/* When the oldest ping out, unanswered, turns the session doubtful; 0:
 * none is out. */
static uint64_t doubt_due_locked(const struct zks *s)
{
	if (s->ping_done >= s->ping_next)
		return 0;
	return s->pings_out[s->ping_done % ZKS_PINGS_OUT] + zks_doubt_after_ms(s->timeout_ms);
}

/* See zks_doubtful(): is the session in doubt now?  s->lock held. */
static bool doubt_locked(const struct zks *s)
{
	uint64_t due = doubt_due_locked(s);

	if (s->state != ZOO_CONNECTED_STATE || s->link == ZKS_LINK_EXPIRED)
		return true;
	if (due && due <= boot_ms())
		return true;
	/* a doubt ends with a round trip begun after it began */
	return s->doubt && s->ping_answered <= s->doubt_ping;
}

bool zks_doubtful(struct zks *s)
{
	bool d;

	pthread_mutex_lock(&s->lock);
	d = s->doubt || doubt_locked(s);
	pthread_mutex_unlock(&s->lock);
	return d;
}

bool zks_settled(struct zks *s)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	ok = s->state == ZOO_CONNECTED_STATE && s->news != ZKS_NEWS_SILENT &&
	     s->link != ZKS_LINK_EXPIRED && !s->doubt && !quiet_locked(s) && !s->later;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

void zks_tick_by(struct zks *s, uint64_t at_ms)
{
	pthread_mutex_lock(&s->lock);
	if (!s->tick_at || at_ms < s->tick_at) {
		s->tick_at = at_ms;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Shorten *@wait (ms from @now) to end at @at (0: none), if that is sooner. */
static void sooner(int *wait, uint64_t at, uint64_t now)
{
	if (!at)
		return;
	if (at <= now)
		*wait = 0;
	else if (at - now < (uint64_t)*wait)
		*wait = (int)(at - now);
}

/*
 * How long the supervisor may wait for its next look (s->lock held): a
 * @period, or less, to come when a tick asked for (zks_tick_by()), the
 * silence or the doubt is due rather than up to a period late; no time if
 * a broadcast asked for a move while it was not waiting.
 */
static int next_look_locked(const struct zks *s, int period)
{
	uint64_t now = boot_ms();
	int wait = period;

	sooner(&wait, s->tick_at, now);
	/* the silence: the server may expire us a margin later */
	if (s->news != ZKS_NEWS_SILENT)
		sooner(&wait, s->last_heard_ms + (uint64_t)(s->negotiated_ms - period), now);
	if (!s->doubt)
		sooner(&wait, doubt_due_locked(s), now);
	if (doubt_locked(s) != s->doubt)
		wait = 0;
	return wait;
}

static void *zks_supervise(void *arg)
{
	struct zks *s = arg;
	int period = margin_ms(s);

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec deadline;
		bool ping, silent = false, renew = false, reconnected = false;
		bool doubt, tell_doubt;
		int timeout, wait = next_look_locked(s, period);

		zk_deadline_in(&deadline, CLOCK_MONOTONIC, wait);
		if (wait)
			pthread_cond_timedwait(&s->cond, &s->lock, &deadline);
		if (s->stop)
			break;
		if (s->tick_at && s->tick_at <= boot_ms())
			s->tick_at = 0;
		if (s->hb)
			atomic_store_explicit(&s->hb->alive_ms, boot_ms(), memory_order_relaxed);
		ping = s->state == ZOO_CONNECTED_STATE;
		/*
		 * The server expires us a session timeout (its own: it clamps
		 * ours) after it last heard us, at the earliest.  We declare
		 * silence a margin (a period) before that: the wait above ends
		 * then, so the margin is a period less this loop's own delay.
		 */
		reconnected = s->news == ZKS_NEWS_BACK;
		if (s->news != ZKS_NEWS_SILENT && quiet_locked(s)) {
			set_news_locked(s, ZKS_NEWS_SILENT);
			silent = true;
		} else if (reconnected) {
			set_news_locked(s, ZKS_NEWS_NONE);
		}
		timeout = s->negotiated_ms;
		doubt = doubt_locked(s);
		tell_doubt = doubt != s->doubt;	/* the engine heard s->doubt */
		if (doubt && !s->doubt)		/* a ping sent from now on ends it */
			s->doubt_ping = s->ping_next;
		s->doubt = doubt;
		renew = s->link == ZKS_LINK_EXPIRED;
		pthread_mutex_unlock(&s->lock);

		if (tell_doubt) {
			if (doubt)
				zklog(LOG_NOTICE, "no answer from ZooKeeper for %llu ms, or "
				      "no connection: held locks are in doubt",
				      (unsigned long long)zks_doubt_after_ms(s->timeout_ms));
			else
				zklog(LOG_NOTICE, "ZooKeeper answers again: held locks are "
				      "checked before they leave doubt");
			if (doubt)
				s->doubt_began_us = zkm_doubt_began();
			else
				zkm_doubt_ended(s->doubt_began_us);
			if (s->ev.doubt)
				s->ev.doubt(s->ev.arg, doubt);
		}
		if (ping) {
			send_ping(s);
			if (s->ev.tick)
				s->ev.tick(s->ev.arg);
		}
		if (silent) {
			zklog(LOG_WARNING, "nothing heard from ZooKeeper for %d ms: held locks are lost",
			      timeout - period);
			s->ev.silent(s->ev.arg);
		}
		if (renew) {
			zks_renew(s);
			s->ev.expired(s->ev.arg);
		} else if (reconnected) {
			zklog(LOG_NOTICE, "reconnected to ZooKeeper");
			s->ev.connected(s->ev.arg);
		}
		run_later(s, true);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

void zks_publish(struct zks *s, struct zk_heartbeat *hb)
{
	pthread_mutex_lock(&s->lock);
	s->hb = hb;
	publish_locked(s);
	pthread_mutex_unlock(&s->lock);
}

int zks_start(struct zks *s, const struct zks_events *ev)
{
	int err;

	s->ev = *ev;
	pthread_mutex_lock(&s->lock);
	/* no ping went out since zks_open(); and nothing was held before now:
	 * a lock is granted after the server read our create, which renewed
	 * the session then */
	s->last_heard_ms = boot_ms();
	publish_locked(s);
	pthread_mutex_unlock(&s->lock);
	err = pthread_create(&s->supervisor, NULL, zks_supervise, s);
	if (err)
		return -err;
	s->started = true;
	return 0;
}

/*
 * Digest credentials never fail to authenticate: a wrong password is just
 * another identity.  So the mount asks what it will ask all day, a listing
 * of ROOT, and fails now rather than answer every `ls` with EACCES.
 */
static int list_root(struct zks *s, const char *path)
{
	struct waited w = { .s = s };
	int rc = waited_for(&w, zks_achildren2(s, path, waited_listed, &w));

	if (rc == ZNOAUTH)
		zklog(LOG_ERR, "cannot list root znode %s: %s", path, s->auth ?
		      "the credentials of auth_file may not read it" :
		      "it needs credentials (-o auth_file=PATH)");
	else if (rc != ZOK)
		zklog(LOG_ERR, "cannot list root znode %s: %s", path, zerror(rc));
	return rc;
}

int zks_check_root(struct zks *s, const char *path, bool create, bool write)
{
	char *p = strdup(path), *slash;
	int rc = ZOK;

	if (!p)
		return -ENOMEM;
	for (slash = strchr(p + 1, '/');; slash = strchr(slash + 1, '/')) {
		struct waited w = { .s = s };
		const struct Stat *st = &w.st;

		if (slash)
			*slash = '\0';
		if (strcmp(p, "/") != 0) {
			rc = waited_for(&w, zks_aexists(s, p, waited_stat, &w));
			if (rc == ZNONODE && !create) {
				zklog(LOG_ERR, "ROOT %s does not exist in ZooKeeper (%s is "
				      "missing): check it for a typo, or mount with -o "
				      "create_root to make it", path, p);
				free(p);
				return -ENOENT;
			}
			if (rc == ZNONODE) {
				struct waited c = { .s = s };

				rc = waited_for(&c, zks_acreate(s, p, NULL, -1, 0, waited_created,
								&c, NULL));
				if (rc == ZNODEEXISTS)
					rc = ZOK;
			} else if (rc == ZOK && st->ephemeralOwner != 0) {
				zklog(LOG_ERR, "%s is an ephemeral znode, not a directory", p);
				free(p);
				return -ENOTDIR;
			}
			if (rc != ZOK) {
				zklog(LOG_ERR, "cannot use root znode %s: %s", p, zerror(rc));
				break;
			}
		}
		if (!slash)
			break;
		*slash = '/';
	}
	free(p);
	if (rc == ZOK)
		rc = list_root(s, path);
	if (rc == ZOK && write) {	/* with credentials or without */
		struct waited w = { .s = s, .path = path, .auth = s->auth };

		waited_for(&w, zks_aget_acl(s, path, waited_acl, &w));
		return w.verdict;
	}
	return zk_errno(rc);
}

int64_t zks_session_id(struct zks *s)
{
	int64_t id;

	pthread_rwlock_rdlock(&s->rw);
	id = s->zh ? zoo_client_id(s->zh)->client_id : 0;
	pthread_rwlock_unlock(&s->rw);
	return id;
}

int64_t zks_session_of(struct zks *s, uint64_t gen)
{
	int64_t id = 0;

	pthread_rwlock_rdlock(&s->rw);
	if (s->gen == gen && s->zh)
		id = zoo_client_id(s->zh)->client_id;
	pthread_rwlock_unlock(&s->rw);
	return id;
}

void zks_close(struct zks *s)
{
	if (!s->inited)
		return;
	s->inited = false;
	stop_supervisor(s);		/* no zks_later() from now on */
	if (s->doubt)			/* a doubt that ends with the session */
		zkm_doubt_ended(s->doubt_began_us);
	drain(s);			/* the deletes of the last RELEASEs */
	zks_replace(s, NULL, false);
	zkd_remove(&s->client);
	zks_calls_destroy(s);
	free(s->connect);
	if (s->auth)
		explicit_bzero(s->auth, strlen(s->auth));
	free(s->auth);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	pthread_rwlock_destroy(&s->rw);
}
