// SPDX-License-Identifier: LGPL-2.1-or-later
/* libmemprepop: the caller's progress callback, rate-limited. */
#include <time.h>

#include "internal.h"

/* How often the callback is called, at most */
#define MPL_PROGRESS_NS	100000000ull

uint64_t mpl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CLOCK_REALTIME 100 ms from now, for pthread_cond_timedwait() */
void mpl_progress_deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_nsec += MPL_PROGRESS_NS;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

void mpl_progress_init(struct mpl_progress *p,
		       const struct memprepop_opts *opts, uint64_t total)
{
	p->fn = opts->progress;
	p->arg = opts->progress_arg;
	p->total = total;
	/* Without a callback nothing reads it: no clock read for nothing */
	p->last_ns = p->fn ? mpl_now_ns() : 0;
}

/* Reports @done if 100 ms have passed; true when the caller cancels. */
bool mpl_progress_report(struct mpl_progress *p, uint64_t done)
{
	uint64_t now;

	if (!p->fn)
		return false;
	now = mpl_now_ns();
	if (now - p->last_ns < MPL_PROGRESS_NS)
		return false;
	p->last_ns = now;
	return p->fn(done, p->total, p->arg) != 0;
}

void mpl_progress_final(struct mpl_progress *p, uint64_t done)
{
	if (p->fn)
		p->fn(done, p->total, p->arg);
}
