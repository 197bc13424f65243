// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: a request to the module, in batches of what one ioctl
 * takes, one after the other: synchronously, with a thread that follows the
 * progress and cancels through the control block, or in the background,
 * each batch reaped and the next one started by whoever waits.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "internal.h"

void mpl_dev_init(struct mpl_dev *d, int fd, const struct memprepop_info *info,
		  struct mpl_req *req)
{
	memset(d, 0, sizeof(*d));
	d->fd = fd;
	d->req = req;
	/* A module before ranges takes one range a call */
	d->batch = info->max_ranges ? info->max_ranges : 1;
	/* A hint: an older module populates without helpers */
	if (req->opts.flags & MEMPREPOP_OPT_BORROW_CPUS)
		d->borrow = info->flags & MEMPREPOP_F_BORROW_CPUS;
}

/*
 * Issues the next batch of the work as @ranges, or, to a module that takes
 * no ranges, one range as @addr and @len. With no work at all, an empty
 * request, which a background one needs to be reaped through the device
 * like any.
 */
static int mpl_dev_issue(struct mpl_dev *d, uint64_t flags)
{
	struct memprepop_populate *k = &d->kreq;
	struct mpl_req *req = d->req;
	unsigned int n = req->nr - d->next;

	if (n > d->batch)
		n = d->batch;
	memset(k, 0, sizeof(*k));
	/* mlock2() has locked it: the module checks that it is */
	k->flags = flags | d->borrow | (req->opts.flags & MEMPREPOP_OPT_LOCK ?
					MEMPREPOP_F_REQUIRE_MLOCKED : 0);
	k->max_workers = req->opts.max_threads;
	k->control = (uintptr_t)&d->control;
	if (req->batch_pages) {
		k->node_pages = (uintptr_t)req->batch_pages;
		k->nr_node_pages = req->opts.nr_nodes;
	}
	d->single = d->batch == 1 && n;
	if (d->single) {
		k->addr = req->work[d->next].addr;
		k->len = req->work[d->next].len;
	} else if (n) {
		k->ranges = (uintptr_t)&req->work[d->next];
		k->nr_ranges = n;
		k->range_size = sizeof(struct memprepop_range);
	}
	d->cur = d->next;
	d->cur_n = n;
	d->next += n;
	__atomic_store_n(&d->control.done, 0, __ATOMIC_RELAXED);
	return ioctl(d->fd, MEMPREPOP_IOC_POPULATE, k) ? -errno : 0;
}

static void mpl_dev_set_stop(struct mpl_dev *d, int err)
{
	int none = 0;

	__atomic_compare_exchange_n(&d->stop, &none, err, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/*
 * The batch in flight ended with @err (0, or -errno of its ioctl or of its
 * wait's result): its ranges' outputs, the counts, and whether to go on.
 */
static void mpl_dev_batch_end(struct mpl_dev *d, int err)
{
	struct memprepop_populate *k = &d->kreq;
	struct mpl_req *req = d->req;
	bool range_failed = false;
	uint64_t done = 0;
	unsigned int i;

	if (d->single) {
		req->work[d->cur].populated = k->populated;
		req->work[d->cur].error = err;
	}
	for (i = d->cur; i < d->cur + d->cur_n; i++) {
		struct memprepop_range *w = &req->work[i];

		range_failed |= w->error != 0;
		/* The call failed as a whole: so did each range of it */
		if (err && !w->error && w->populated < w->len)
			w->error = err;
		done += w->populated;
	}
	if (req->batch_pages && d->cur_n)
		for (i = 0; i < req->opts.nr_nodes; i++)
			req->node_pages[i] += req->batch_pages[i];
	__atomic_add_fetch(&d->base, done, __ATOMIC_RELAXED);
	if (k->workers > d->workers)
		d->workers = k->workers;
	d->nsecs += k->nsecs;
	/*
	 * A cancel, a fatal signal, or an error of the call rather than of a
	 * range (which the rest would meet too) ends the request here.
	 */
	if (err == -ECANCELED || err == -EINTR ||
	    (err && d->cur_n > 1 && !range_failed))
		mpl_dev_set_stop(d, err);
	d->cur_n = 0;
}

/*
 * What stopped the request, if it cut a range short: a cancel that came
 * after the last range was done changes nothing.
 */
int mpl_dev_outcome(const struct mpl_dev *d)
{
	const struct mpl_req *req = d->req;
	unsigned int i;

	for (i = 0; i < req->nr; i++)
		if (!req->work[i].error &&
		    req->work[i].populated < req->work[i].len)
			return d->stop;
	return 0;
}

void mpl_dev_cancel(struct mpl_dev *d)
{
	__atomic_store_n(&d->control.cancel, 1, __ATOMIC_RELAXED);
	mpl_dev_set_stop(d, -ECANCELED);
}

/* Bytes populated so far: the batches done, and the module's count of
 * the one in flight */
uint64_t mpl_dev_done(struct mpl_dev *d)
{
	return __atomic_load_n(&d->base, __ATOMIC_RELAXED) +
	       __atomic_load_n(&d->control.done, __ATOMIC_RELAXED);
}

/*
 * With a progress callback: the calling thread issues the ioctls, so that
 * the module sees the caller's CPU, node and task policy, and this thread,
 * created before them, follows the module's progress through the control
 * block and cancels through it.
 */
struct mpl_watch {
	struct mpl_dev *d;
	struct mpl_progress *progress;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;		/* under lock: the ioctls returned */
};

static void *mpl_watch_fn(void *arg)
{
	struct mpl_watch *w = arg;
	struct timespec ts;

	pthread_mutex_lock(&w->lock);
	while (!w->finished) {
		mpl_progress_deadline(&ts);
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		if (w->finished)
			break;
		pthread_mutex_unlock(&w->lock);
		if (mpl_progress_report(w->progress, mpl_dev_done(w->d)))
			mpl_dev_cancel(w->d);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/**
 * mpl_dev_run() - the request, synchronously, batch after batch
 * @d: from mpl_dev_init()
 * @progress: the caller's callback
 *
 * Return: 0, or the error that stopped it before its last batch; each
 * range's outcome is in the work.
 */
int mpl_dev_run(struct mpl_dev *d, struct mpl_progress *progress)
{
	struct mpl_watch w = {
		.d = d,
		.progress = progress,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	bool watching = progress->fn != NULL;
	pthread_t tid;

	if (watching && pthread_create(&tid, NULL, mpl_watch_fn, &w))
		watching = false;
	while (d->next < d->req->nr &&
	       !__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE))
		mpl_dev_batch_end(d, mpl_dev_issue(d, 0));
	if (watching) {
		pthread_mutex_lock(&w.lock);
		w.finished = true;
		pthread_cond_signal(&w.cond);
		pthread_mutex_unlock(&w.lock);
		pthread_join(tid, NULL);
	}
	return mpl_dev_outcome(d);
}

/* poll() says the background request wants reaping */
static bool mpl_dev_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

/* Starts the request in the background: its first batch */
int mpl_dev_start(struct mpl_dev *d)
{
	return mpl_dev_issue(d, MEMPREPOP_F_BACKGROUND);
}

/**
 * mpl_dev_reap() - reap the batch in flight, start the next
 * @d: started with mpl_dev_start()
 * @nohang: do not wait for the module's workers
 *
 * With @nohang, a request whose descriptor is readable is reaped even if
 * that waits: the module reports it readable at once when part of it is
 * left to the reaping thread, which then faults that part itself.
 *
 * Return: 0 when the whole request is done (its outcome: d->stop and the
 * work), -EAGAIN while it is not (with @nohang), or the -errno of the wait
 * (-EINTR: a fatal signal; the request goes on).
 */
int mpl_dev_reap(struct mpl_dev *d, bool nohang)
{
	for (;;) {
		struct memprepop_wait wt = {
			.flags = nohang ? MEMPREPOP_WAIT_NOHANG : 0,
		};
		int err;

		if (ioctl(d->fd, MEMPREPOP_IOC_WAIT, &wt)) {
			if (errno != EAGAIN || !mpl_dev_readable(d->fd))
				return -errno;
			/*
			 * Ready, yet not done: part of the request is the
			 * reaper's (userfaultfd-armed mappings, or no worker
			 * could be had). Only this thread can do it: waiting
			 * again without NOHANG would not change that.
			 */
			wt.flags = 0;
			if (ioctl(d->fd, MEMPREPOP_IOC_WAIT, &wt))
				return -errno;
		}
		mpl_dev_batch_end(d, wt.result);
		if (d->next >= d->req->nr ||
		    __atomic_load_n(&d->stop, __ATOMIC_ACQUIRE))
			return 0;
		err = mpl_dev_issue(d, MEMPREPOP_F_BACKGROUND);
		if (err) {
			/* It never started: its ranges fail, the rest too */
			mpl_dev_batch_end(d, err);
			mpl_dev_set_stop(d, err);
			return 0;
		}
		if (nohang)
			return -EAGAIN;
	}
}
