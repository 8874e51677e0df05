/*
 * bench/util.c - small helpers: the clock, formatting, percentiles, JSON
 * strings, mkdir -p, the recipe's sequence numbers (see bench/zkbench.h).
 */
#include "bench/zkbench.h"

/* small helpers */

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/*
 * fmt() - snprintf into @buf. Return: true if it all fitted.  Error
 * messages may be cut short; paths are checked where they are made.
 */
__attribute__((format(printf, 3, 4)))
bool fmt(char *buf, size_t size, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, size, f, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort @v and return its @pct percentile in microseconds (-1 if empty). */
double pct_us(int64_t *v, size_t n, int pct)
{
	if (n == 0)
		return -1;
	qsort(v, n, sizeof(*v), cmp_i64);
	return (double)v[(n * (size_t)pct) / 100 < n ? (n * (size_t)pct) / 100 : n - 1] / 1e3;
}

/* Print @s as a JSON string. */
void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* mkdir -p @path (absolute). Return: 0 or -errno. */
int mkdir_p(const char *path)
{
	char buf[PATH_MAX];

	if (!fmt(buf, sizeof(buf), "%s", path))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (c == '\0')
			return 0;
	}
}

/* The sequence number ending an entry's name (-1 if there is none). */
long seq_of(const char *name)
{
	size_t n = strlen(name);

	if (n < 10)
		return -1;
	for (size_t i = n - 10; i < n; i++)
		if (name[i] < '0' || name[i] > '9')
			return -1;
	return strtol(name + n - 10, NULL, 10);
}

/*
 * The entry just before @mine among @kids (the greatest sequence below
 * ours), copied into @pred.  Return: true if there is one (we must wait).
 */
bool find_pred(const struct String_vector *kids, long mine, char *pred,
		      size_t size)
{
	long best = -1;
	int bi = -1;

	for (int i = 0; i < kids->count; i++) {
		long s = seq_of(kids->data[i]);

		if (s >= 0 && s < mine && s > best) {
			best = s;
			bi = i;
		}
	}
	if (bi < 0)
		return false;
	fmt(pred, size, "%s", kids->data[bi]);
	return true;
}
