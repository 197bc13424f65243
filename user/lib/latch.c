// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: a request's cancel, whenever it comes. A context's
 * memprepop_ctx_cancel() may come from any thread before the backend has
 * its request running, while it runs, or after: the latch remembers it
 * from the claim on and hands it to the running request (the module's
 * batches, the fallback's job) as soon as there is one. Each backend has
 * one; the context arms, cancels and asks it.
 */
#include "internal.h"

void mpl_latch_init(struct mpl_latch *l, void (*cancel)(void *live),
		    uint64_t (*done)(void *live))
{
	pthread_mutex_init(&l->lock, NULL);
	l->live = NULL;
	l->cancelled = false;
	l->cancel = cancel;
	l->done = done;
}

void mpl_latch_fini(struct mpl_latch *l)
{
	pthread_mutex_destroy(&l->lock);
}

/* A request is claimed: no cancel is pending for it yet */
void mpl_latch_arm(struct mpl_latch *l)
{
	pthread_mutex_lock(&l->lock);
	l->cancelled = false;
	pthread_mutex_unlock(&l->lock);
}

/* Cancels the request now, or as soon as it runs */
void mpl_latch_cancel(struct mpl_latch *l)
{
	pthread_mutex_lock(&l->lock);
	l->cancelled = true;
	if (l->live)
		l->cancel(l->live);
	pthread_mutex_unlock(&l->lock);
}

/* The request runs as @live, or (NULL) no longer: a cancel before acts */
void mpl_latch_set(struct mpl_latch *l, void *live)
{
	pthread_mutex_lock(&l->lock);
	l->live = live;
	if (live && l->cancelled)
		l->cancel(live);
	pthread_mutex_unlock(&l->lock);
}

/* The running request, or NULL */
void *mpl_latch_live(struct mpl_latch *l)
{
	void *live;

	pthread_mutex_lock(&l->lock);
	live = l->live;
	pthread_mutex_unlock(&l->lock);
	return live;
}

/* Bytes the running request has done: 0 before it runs and after */
uint64_t mpl_latch_done(struct mpl_latch *l)
{
	uint64_t done;

	pthread_mutex_lock(&l->lock);
	done = l->live ? l->done(l->live) : 0;
	pthread_mutex_unlock(&l->lock);
	return done;
}
