// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the fallback as a context's backend, for kernels without
 * the module. A context's threads stay in its pool (pool.c) and its
 * eventfd says a background request is done; a one-shot call's threads
 * are its own. Its request is a job.c job.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

struct mpl_threads {
	bool oneshot;
	int efd;		/* written when a job is done, or -1 */
	struct mpl_pool *pool;	/* threads that stay, or NULL */
	pthread_mutex_t lock;
	struct mpl_job *job;	/* under lock: the request's, once started */
	bool cancelled;		/* under lock: since the request was claimed */
};

static void mpl_threads_free(struct mpl_threads *t)
{
	if (t->efd >= 0)
		close(t->efd);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static int mpl_fallback_init(void **be, bool oneshot)
{
	struct mpl_threads *t = calloc(1, sizeof(*t));
	int ret = 0;

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->oneshot = oneshot;
	t->efd = -1;
	if (!oneshot) {
		t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ret = t->efd < 0 ? -errno : mpl_pool_new(&t->pool, t->efd);
	}
	if (ret) {
		mpl_threads_free(t);
		return ret;
	}
	*be = t;
	return 0;
}

static void mpl_fallback_fini(void *be, bool forked)
{
	struct mpl_threads *t = be;

	if (forked) {
		/* A child's copy: the threads and the request are the parent's */
		if (t->job)
			mpl_job_free(t->job);
		mpl_pool_forget(t->pool);
	} else {
		mpl_pool_free(t->pool);
	}
	mpl_threads_free(t);
}

static int mpl_fallback_supported(void *be __attribute__((unused)))
{
	return mpl_job_supported() ? 0 : -EOPNOTSUPP;
}

/* The request's job, or none once it is over: a cancel then acts on it */
static void mpl_fallback_set_job(struct mpl_threads *t, struct mpl_job *job)
{
	pthread_mutex_lock(&t->lock);
	t->job = job;
	if (job && t->cancelled)
		mpl_job_cancel(job);
	pthread_mutex_unlock(&t->lock);
}

/* A stale completion of the eventfd: a synchronous job also writes it */
static void mpl_fallback_drain(struct mpl_threads *t)
{
	uint64_t v;

	if (t->efd >= 0)
		(void)!read(t->efd, &v, sizeof(v));
}

/* A synchronous request: the context's threads, or its own, or the caller */
static int mpl_fallback_run(void *be, struct mpl_req *req,
			    struct mpl_progress *progress,
			    struct memprepop_result *res)
{
	struct mpl_threads *t = be;
	struct mpl_job *job;
	int ret;

	ret = mpl_job_start(&job, t->pool, req, progress);
	if (ret < 0)
		return ret;
	mpl_fallback_set_job(t, job);
	ret = mpl_job_wait(job, progress, res);
	mpl_fallback_set_job(t, NULL);
	mpl_job_free(job);
	mpl_fallback_drain(t);
	return ret;
}

static int mpl_fallback_start(void *be, struct mpl_req *req)
{
	struct mpl_threads *t = be;
	struct mpl_job *job;
	int ret;

	ret = mpl_job_start(&job, t->pool, req, NULL);
	if (ret < 0)
		return ret;
	/* No thread: nothing to do, done already */
	if (!ret) {
		uint64_t one = 1;

		(void)!write(t->efd, &one, sizeof(one));
	}
	mpl_fallback_set_job(t, job);
	return 0;
}

static int mpl_fallback_reap(void *be, bool nohang,
			     struct memprepop_result *res, int *outcome)
{
	struct mpl_threads *t = be;
	struct mpl_job *job;

	/* Set by whoever started it; only the reaper changes it from here */
	pthread_mutex_lock(&t->lock);
	job = t->job;
	pthread_mutex_unlock(&t->lock);
	if (nohang && job && !mpl_job_finished(job))
		return -EAGAIN;
	*outcome = job ? mpl_job_wait(job, NULL, res) : 0;
	mpl_fallback_drain(t);
	mpl_fallback_set_job(t, NULL);
	if (job)
		mpl_job_free(job);
	return 0;
}

static void mpl_fallback_drop(void *be)
{
	struct mpl_threads *t = be;
	struct mpl_job *job;

	pthread_mutex_lock(&t->lock);
	job = t->job;
	pthread_mutex_unlock(&t->lock);
	if (!job)
		return;
	mpl_job_wait(job, NULL, NULL);
	mpl_fallback_set_job(t, NULL);
	mpl_job_free(job);
}

static void mpl_fallback_arm(void *be)
{
	struct mpl_threads *t = be;

	pthread_mutex_lock(&t->lock);
	t->cancelled = false;
	pthread_mutex_unlock(&t->lock);
}

static void mpl_fallback_cancel(void *be)
{
	struct mpl_threads *t = be;

	pthread_mutex_lock(&t->lock);
	t->cancelled = true;
	if (t->job)
		mpl_job_cancel(t->job);
	pthread_mutex_unlock(&t->lock);
}

static uint64_t mpl_fallback_done(void *be)
{
	struct mpl_threads *t = be;
	uint64_t done;

	pthread_mutex_lock(&t->lock);
	done = t->job ? mpl_job_done(t->job) : 0;
	pthread_mutex_unlock(&t->lock);
	return done;
}

static int mpl_fallback_poll_fd(void *be)
{
	struct mpl_threads *t = be;

	return t->efd;
}

const struct mpl_backend mpl_fallback_backend = {
	.id = MEMPREPOP_BACKEND_FALLBACK,
	.init = mpl_fallback_init,
	.fini = mpl_fallback_fini,
	.supported = mpl_fallback_supported,
	.run = mpl_fallback_run,
	.start = mpl_fallback_start,
	.reap = mpl_fallback_reap,
	.drop = mpl_fallback_drop,
	.arm = mpl_fallback_arm,
	.cancel = mpl_fallback_cancel,
	.done = mpl_fallback_done,
	.poll_fd = mpl_fallback_poll_fd,
};
