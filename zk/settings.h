/*
 * zk/settings.h - the settings a lock znode's data keeps: a semaphore's limit
 * and a lingering lock's time; and the key=value lines of any znode's data.
 *
 * `setfattr -n user.zklockfs.limit -v N DIR` stores a line "limit=N" (1 <=
 * N <= ZKG_LIMIT_MAX, zk/grant.h) in the data of DIR's znode, where every
 * mount and client reads it; `user.zklockfs.linger` a line "linger=MS"
 * (0 <= MS <= ZKSET_LINGER_MAX, zk/linger.c); other lines of that data are
 * kept as they are.  Pure code: no ZooKeeper, no FUSE, no locks, no
 * allocation; any thread.
 */
#ifndef ZK_SETTINGS_H
#define ZK_SETTINGS_H

#include <stddef.h>

/* A setting: its line's key ("limit=") and the values it may take. */
struct zkset_setting {
	const char *key;
	unsigned min, max;
};

extern const struct zkset_setting zkset_setting_limit;	/* limit=1..1000 */
extern const struct zkset_setting zkset_setting_linger;	/* linger=0..3600000 */
#define ZKSET_LINGER_MAX 3600000u

/*
 * zkset_data_value() - the value of @key ("host=", say) in @data (@len bytes,
 * anyone's writing, not NUL-terminated, may be NULL): the rest of the first
 * line that starts with @key.  Return: its start (inside @data) and length
 * *@vlen, or NULL if no line starts so.
 */
const char *zkset_data_value(const char *data, size_t len, const char *key, size_t *vlen);

/*
 * zkset_data_field() - zkset_data_value() of @key, made printable for a
 * terminal (zkesc()) into @out (@size bytes); "-" if no line has the
 * key, or an empty value.
 */
void zkset_data_field(const char *data, size_t len, const char *key, char *out,
		      size_t size);

/*
 * zkset_setting_parse() - the value @s has in @data (@len bytes, not
 * NUL-terminated, may hold anything another client wrote).
 * Return: N from the first line that starts with the key, if the rest is
 * exactly N in range with no leading zero; -1 (not set) otherwise.
 */
long zkset_setting_parse(const struct zkset_setting *s, const char *data, size_t len);

/*
 * zkset_setting_value() - the value a user gives setfattr: decimal digits,
 * no sign, no leading zero, an optional final newline.
 * Return: 0 and *@out, or -EINVAL (not a number, or out of range: refused,
 * not clamped).
 */
int zkset_setting_value(const struct zkset_setting *s, const char *val, size_t len,
			unsigned *out);

/*
 * zkset_setting_edit() - @data with its lines of @s replaced by one line of
 * @value (first, where the first one was, or appended), or removed when
 * @value is -1, into @out (@cap bytes; @out may not overlap @data).
 * Return: the new length, or -E2BIG if it does not fit.
 */
int zkset_setting_edit(const struct zkset_setting *s, const char *data, size_t len,
		       long value, char *out, size_t cap);

/* The limit: 0 when none is set (a plain lock). */
unsigned zkset_parse(const char *data, size_t len);
int zkset_value(const char *val, size_t len, unsigned *out);
/* @limit 0 removes it */
int zkset_edit(const char *data, size_t len, unsigned limit, char *out,
	       size_t cap);

#endif
