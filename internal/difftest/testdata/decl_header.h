/* A library's header as a program might include it: types, and the
 * functions and variables that kinst, like bpftrace, reads and drops. */
#ifndef DECL_HEADER_H
#define DECL_HEADER_H

#define TS_SCALE 1000

struct ts {
	long sec;
	long nsec;
};

typedef struct ts ts_t;

enum unit { UNIT_S, UNIT_MS = 3 };

extern int ts_count;
extern const char *ts_names[];
struct ts *ts_now(void) __attribute__((warn_unused_result));
int ts_cmp(const struct ts *a, const struct ts *b);
void ts_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void (*ts_hook)(struct ts *);
static const char ts_sep = ':';
static inline long ts_ms(const struct ts *t)
{
	return t->sec * TS_SCALE + t->nsec / 1000000;
}

#endif
