// SPDX-License-Identifier: LGPL-2.1-or-later
/* libmemprepop: the caller's progress callback, rate-limited. */
#include <time.h>

#include "internal.h"

/* How often the callback is called, at most */
#define MPP_PROGRESS_NS	100000000ull

uint64_t mpp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CLOCK_REALTIME 100 ms from now, for pthread_cond_timedwait() */
void mpp_progress_deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_nsec += MPP_PROGRESS_NS;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

void mpp_progress_init(struct mpp_progress *p,
		       const struct memprepop_opts *opts, uint64_t total)
{
	p->fn = opts->progress;
	p->arg = opts->progress_arg;
	p->total = total;
	p->last_ns = mpp_now_ns();
}

/* Reports @done if 100 ms have passed; true when the caller cancels. */
bool mpp_progress_report(struct mpp_progress *p, uint64_t done)
{
	uint64_t now;

	if (!p->fn)
		return false;
	now = mpp_now_ns();
	if (now - p->last_ns < MPP_PROGRESS_NS)
		return false;
	p->last_ns = now;
	return p->fn(done, p->total, p->arg) != 0;
}

void mpp_progress_final(struct mpp_progress *p, uint64_t done)
{
	if (p->fn)
		p->fn(done, p->total, p->arg);
}
