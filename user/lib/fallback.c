// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the fallback as a context's backend, for kernels without
 * the module. A context's threads stay in its pool (pool.c) and its
 * eventfd says a background request is done; a one-shot call's threads
 * are its own. Its request is a job.c job, on the calling process's memory
 * or, as the remote backend, on another's (the request's target).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

struct mpl_threads {
	bool oneshot;
	bool supported;		/* the kernel said so once: it stays so */
	int efd;		/* written when a job is done, or -1 */
	struct mpl_pool *pool;	/* threads that stay, or NULL */
	struct mpl_latch latch;	/* live: the request's job, once started */
};

static void mpl_fallback_cancel(void *job)
{
	mpl_job_cancel(job);
}

static uint64_t mpl_fallback_done(void *job)
{
	return mpl_job_done(job);
}

static void mpl_threads_free(struct mpl_threads *t)
{
	if (t->efd >= 0)
		close(t->efd);
	mpl_latch_fini(&t->latch);
	free(t);
}

static int mpl_fallback_init(void **be, struct mpl_latch **latch,
			     bool oneshot)
{
	struct mpl_threads *t = calloc(1, sizeof(*t));
	int ret = 0;

	if (!t)
		return -ENOMEM;
	mpl_latch_init(&t->latch, mpl_fallback_cancel, mpl_fallback_done);
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
	*latch = &t->latch;
	return 0;
}

static void mpl_fallback_fini(void *be, bool forked)
{
	struct mpl_threads *t = be;

	if (forked) {
		/*
		 * A child's copy: the threads and the request are the
		 * parent's; its lock maybe taken by a thread of the parent
		 */
		if (t->latch.live)
			mpl_job_free(t->latch.live);
		mpl_pool_forget(t->pool);
	} else {
		mpl_pool_free(t->pool);
	}
	mpl_threads_free(t);
}

static int mpl_fallback_supported(void *be)
{
	struct mpl_threads *t = be;

	if (!t->supported)
		t->supported = mpl_job_supported();
	return t->supported ? 0 : -EOPNOTSUPP;
}

/* The kernel was asked when the context was made (mpl_target_open()) */
static int mpl_remote_supported(void *be __attribute__((unused)))
{
	return 0;
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
	bool threads;
	int ret;

	ret = mpl_job_start(&job, t->pool, req, progress);
	if (ret < 0)
		return ret;
	threads = ret > 0;
	mpl_latch_set(&t->latch, job);
	ret = mpl_job_wait(job, progress, res);
	mpl_latch_set(&t->latch, NULL);
	mpl_job_free(job);
	/* Only the pool's threads write it: the caller alone did not */
	if (threads)
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
	mpl_latch_set(&t->latch, job);
	return 0;
}

static int mpl_fallback_reap(void *be, bool nohang,
			     struct memprepop_result *res, int *outcome)
{
	struct mpl_threads *t = be;
	struct mpl_job *job;

	/* Set by whoever started it; only the reaper changes it from here */
	job = mpl_latch_live(&t->latch);
	if (nohang && job && !mpl_job_finished(job))
		return -EAGAIN;
	*outcome = job ? mpl_job_wait(job, NULL, res) : 0;
	mpl_fallback_drain(t);
	mpl_latch_set(&t->latch, NULL);
	if (job)
		mpl_job_free(job);
	return 0;
}

static void mpl_fallback_drop(void *be)
{
	struct mpl_threads *t = be;
	struct mpl_job *job = mpl_latch_live(&t->latch);

	if (!job)
		return;
	mpl_job_wait(job, NULL, NULL);
	mpl_latch_set(&t->latch, NULL);
	mpl_job_free(job);
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
	.poll_fd = mpl_fallback_poll_fd,
};

/* The same threads and jobs, on another process's memory */
const struct mpl_backend mpl_remote_backend = {
	.id = MEMPREPOP_BACKEND_REMOTE,
	.init = mpl_fallback_init,
	.fini = mpl_fallback_fini,
	.supported = mpl_remote_supported,
	.run = mpl_fallback_run,
	.start = mpl_fallback_start,
	.reap = mpl_fallback_reap,
	.drop = mpl_fallback_drop,
	.poll_fd = mpl_fallback_poll_fd,
};
