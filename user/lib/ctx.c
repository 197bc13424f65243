// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: contexts, for requests that run in the background and
 * workers that stay from one request to the next.
 *
 * With the module, a context has a /dev/memprepop descriptor of its own, on
 * which the module keeps its workers, and a background request is
 * MEMPREPOP_F_BACKGROUND, reaped with MEMPREPOP_IOC_WAIT: everything the
 * module writes to when it is reaped (the request, the ranges in its format,
 * the control block, the node counts) lives in the context until then. With
 * the fallback, a context has a pool of threads (pool.c) and an eventfd the
 * last of a request's threads writes.
 *
 * The state is under a lock so that memprepop_ctx_cancel() and
 * memprepop_ctx_progress() may come from any thread at any time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

enum mpl_ctx_state {
	MPL_CTX_IDLE,		/* takes a request */
	MPL_CTX_SYNC,		/* memprepop_ctx_populate() runs */
	MPL_CTX_BACKGROUND,	/* started, not reaped */
};

struct memprepop_ctx {
	pid_t pid;		/* the process that made it */
	int backend;
	int fd;			/* the module's descriptor, or -1 */
	int efd;		/* the fallback's eventfd, or -1 */
	struct memprepop_info info;
	struct mpl_pool *pool;

	pthread_mutex_t lock;
	enum mpl_ctx_state state;	/* under lock */
	bool running;		/* under lock: dev or job below is live */
	bool cancel;		/* under lock: cancelled before it was */

	/* The request */
	struct memprepop_range *ranges;	/* the caller's */
	unsigned int nr;
	struct mpl_req req;
	struct mpl_dev dev;
	struct mpl_job *job;
	uint64_t t0;
};

int memprepop_ctx_new(struct memprepop_ctx **ctxp, unsigned int flags)
{
	struct memprepop_ctx *ctx;
	int ret;

	if (flags & ~MEMPREPOP_OPT_FALLBACK)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->pid = getpid();
	ctx->fd = -1;
	ctx->efd = -1;
	ctx->backend = MEMPREPOP_BACKEND_FALLBACK;
	if (!(flags & MEMPREPOP_OPT_FALLBACK))
		ctx->fd = mpl_dev_open();
	/* A module too old for background requests is not used */
	if (ctx->fd >= 0 && !mpl_dev_info(ctx->fd, &ctx->info) &&
	    (ctx->info.flags & MEMPREPOP_F_BACKGROUND)) {
		ctx->backend = MEMPREPOP_BACKEND_MODULE;
		*ctxp = ctx;
		return 0;
	}
	if (ctx->fd >= 0)
		close(ctx->fd);
	ctx->fd = -1;
	ctx->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->efd < 0) {
		ret = -errno;
		goto fail;
	}
	ret = mpl_pool_new(&ctx->pool, ctx->efd);
	if (ret)
		goto fail;
	*ctxp = ctx;
	return 0;
fail:
	if (ctx->efd >= 0)
		close(ctx->efd);
	free(ctx);
	return ret;
}

int memprepop_ctx_fd(struct memprepop_ctx *ctx)
{
	return ctx->backend == MEMPREPOP_BACKEND_MODULE ? ctx->fd : ctx->efd;
}

/* Takes the context for a request: -EBUSY, or -EPERM after fork() */
static int mpl_ctx_claim(struct memprepop_ctx *ctx, enum mpl_ctx_state state)
{
	int ret = 0;

	if (ctx->pid != getpid())
		return -EPERM;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->state != MPL_CTX_IDLE) {
		ret = -EBUSY;
	} else {
		ctx->state = state;
		ctx->running = false;
		ctx->cancel = false;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

static void mpl_ctx_release(struct memprepop_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->state = MPL_CTX_IDLE;
	ctx->running = false;
	ctx->job = NULL;
	pthread_mutex_unlock(&ctx->lock);
}

static void mpl_ctx_cancel_locked(struct memprepop_ctx *ctx)
{
	if (!ctx->running)
		ctx->cancel = true;	/* for when it is */
	else if (ctx->backend == MEMPREPOP_BACKEND_MODULE)
		mpl_dev_cancel(&ctx->dev);
	else if (ctx->job)
		mpl_fallback_cancel(ctx->job);
}

/* The request's backend state is live: cancel and progress reach it */
static void mpl_ctx_running(struct memprepop_ctx *ctx, struct mpl_job *job)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->job = job;
	ctx->running = true;
	if (ctx->cancel)
		mpl_ctx_cancel_locked(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

/* A stale completion of the eventfd: a synchronous job also writes it */
static void mpl_ctx_drain(struct memprepop_ctx *ctx)
{
	uint64_t v;

	if (ctx->efd >= 0)
		(void)!read(ctx->efd, &v, sizeof(v));
}

/*
 * Checks the call and makes its work, locked if asked, in the context.
 * Return: 1 with work for the backend, 0 with none (the outcome is
 * written), or -errno with nothing started (written too, if it got that
 * far).
 */
static int mpl_ctx_prepare(struct memprepop_ctx *ctx,
			   struct memprepop_range *ranges, unsigned int nr,
			   const struct memprepop_opts *opts,
			   struct memprepop_result *res)
{
	int ret;

	ret = mpl_req_prepare(&ctx->req, ranges, nr, opts);
	if (ret)
		return ret;
	ctx->ranges = ranges;
	ctx->nr = nr;
	ctx->t0 = mpl_now_ns();
	res->backend = ctx->backend;
	if (ctx->req.nr && ctx->backend == MEMPREPOP_BACKEND_FALLBACK &&
	    !mpl_fallback_supported())
		return mpl_req_finish(&ctx->req, ranges, nr, res, -EOPNOTSUPP);
	mpl_req_lock(&ctx->req, ranges);
	return 1;
}

static int mpl_ctx_populate(void *arg, struct memprepop_range *ranges,
			    unsigned int nr, const struct memprepop_opts *opts,
			    struct memprepop_result *res)
{
	struct memprepop_ctx *ctx = arg;
	struct mpl_progress progress;
	struct mpl_job *job;
	int ret;

	ret = mpl_ctx_claim(ctx, MPL_CTX_SYNC);
	if (ret)
		return ret;
	ret = mpl_ctx_prepare(ctx, ranges, nr, opts, res);
	if (ret <= 0)
		goto out;
	mpl_progress_init(&progress, opts, ctx->req.total);
	if (ctx->backend == MEMPREPOP_BACKEND_MODULE) {
		mpl_dev_init(&ctx->dev, ctx->fd, &ctx->info, &ctx->req);
		mpl_ctx_running(ctx, NULL);
		ret = mpl_dev_run(&ctx->dev, &progress);
		res->workers = ctx->dev.workers;
	} else {
		ret = mpl_fallback_start(&job, ctx->pool, &ctx->req, false);
		if (ret >= 0) {
			mpl_ctx_running(ctx, job);
			ret = mpl_fallback_wait(job, &progress, res);
			pthread_mutex_lock(&ctx->lock);
			ctx->job = NULL;
			pthread_mutex_unlock(&ctx->lock);
			mpl_fallback_free(job);
			mpl_ctx_drain(ctx);
		}
	}
	mpl_progress_final(&progress, mpl_req_populated(&ctx->req));
	ret = mpl_req_finish(&ctx->req, ranges, nr, res, ret);
out:
	mpl_ctx_release(ctx);
	return ret;
}

int memprepop_ctx_populate(struct memprepop_ctx *ctx,
			   struct memprepop_range *ranges, unsigned int nr,
			   const struct memprepop_opts *opts,
			   struct memprepop_result *res)
{
	return mpl_call(mpl_ctx_populate, ctx, ranges, nr, opts, res);
}

int memprepop_ctx_start(struct memprepop_ctx *ctx,
			struct memprepop_range *ranges, unsigned int nr,
			const struct memprepop_opts *opts)
{
	struct memprepop_result res = { .size = sizeof(res) };
	struct memprepop_opts copy;
	struct mpl_job *job = NULL;
	int ret;

	ret = mpl_opts_copy(&copy, opts);
	if (ret)
		return ret;
	if (copy.progress)
		return -EINVAL;
	ret = mpl_ctx_claim(ctx, MPL_CTX_BACKGROUND);
	if (ret)
		return ret;
	ret = mpl_ctx_prepare(ctx, ranges, nr, &copy, &res);
	if (ret < 0)
		goto fail;
	if (ctx->backend == MEMPREPOP_BACKEND_MODULE) {
		/* No work still goes through the module, to be reaped alike */
		mpl_dev_init(&ctx->dev, ctx->fd, &ctx->info, &ctx->req);
		ret = mpl_dev_start(&ctx->dev);
		if (ret) {
			ret = mpl_req_finish(&ctx->req, ranges, nr, &res, ret);
			goto fail;
		}
	} else {
		ret = mpl_fallback_start(&job, ctx->pool, &ctx->req, true);
		if (ret < 0) {
			ret = mpl_req_finish(&ctx->req, ranges, nr, &res, ret);
			goto fail;
		}
		/* No thread: nothing to do, done already */
		if (!ret) {
			uint64_t one = 1;

			(void)!write(ctx->efd, &one, sizeof(one));
		}
	}
	mpl_ctx_running(ctx, job);
	return 0;
fail:
	mpl_ctx_release(ctx);
	return ret;
}

/* Is a request there to act on: 0, -ENOENT, or -EPERM after fork() */
static int mpl_ctx_check(struct memprepop_ctx *ctx, enum mpl_ctx_state *state)
{
	if (ctx->pid != getpid())
		return -EPERM;
	pthread_mutex_lock(&ctx->lock);
	*state = ctx->state;
	pthread_mutex_unlock(&ctx->lock);
	return *state == MPL_CTX_IDLE ? -ENOENT : 0;
}

int memprepop_ctx_wait(struct memprepop_ctx *ctx, unsigned int flags,
		       struct memprepop_result *res)
{
	struct memprepop_result ours = { .size = sizeof(ours) };
	bool nohang = flags & MEMPREPOP_WAIT_NOHANG;
	enum mpl_ctx_state state;
	struct mpl_job *job;
	int ret;

	if (flags & ~MEMPREPOP_WAIT_NOHANG)
		return -EINVAL;
	if (res && res->size < MPL_RESULT_SIZE_VER0)
		return -EINVAL;
	ret = mpl_ctx_check(ctx, &state);
	if (ret)
		return ret;
	/* A synchronous call of another thread is not ours to reap */
	if (state != MPL_CTX_BACKGROUND)
		return -EBUSY;
	ours.backend = ctx->backend;
	if (ctx->backend == MEMPREPOP_BACKEND_MODULE) {
		ret = mpl_dev_reap(&ctx->dev, nohang);
		if (ret)
			return ret;
		ret = mpl_dev_outcome(&ctx->dev);
		ours.workers = ctx->dev.workers;
		ours.nsecs = ctx->dev.nsecs;
		job = NULL;
	} else {
		job = ctx->job;
		if (nohang && job && !mpl_fallback_finished(job))
			return -EAGAIN;
		ret = job ? mpl_fallback_wait(job, NULL, &ours) : 0;
		mpl_ctx_drain(ctx);
	}
	ret = mpl_req_finish(&ctx->req, ctx->ranges, ctx->nr, &ours, ret);
	mpl_ctx_release(ctx);
	if (job)
		mpl_fallback_free(job);
	if (res)
		mpl_result_copy(res, &ours);
	return ret;
}

int memprepop_ctx_cancel(struct memprepop_ctx *ctx)
{
	int ret = 0;

	if (ctx->pid != getpid())
		return -EPERM;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->state == MPL_CTX_IDLE)
		ret = -ENOENT;
	else
		mpl_ctx_cancel_locked(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int memprepop_ctx_progress(struct memprepop_ctx *ctx, uint64_t *done,
			   uint64_t *total)
{
	int ret = 0;

	if (ctx->pid != getpid())
		return -EPERM;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->state == MPL_CTX_IDLE) {
		ret = -ENOENT;
	} else {
		*total = ctx->running ? ctx->req.total : 0;
		*done = !ctx->running ? 0 :
			ctx->backend == MEMPREPOP_BACKEND_MODULE ?
			mpl_dev_done(&ctx->dev) :
			ctx->job ? mpl_fallback_done(ctx->job) : 0;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

void memprepop_ctx_free(struct memprepop_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->pid != getpid()) {
		/* A child's copy: the threads and request are the parent's */
		if (ctx->job)
			mpl_fallback_free(ctx->job);
		mpl_pool_forget(ctx->pool);
		goto out;
	}
	if (ctx->state == MPL_CTX_BACKGROUND) {
		/* The outcome is dropped: nothing written to the caller's */
		memprepop_ctx_cancel(ctx);
		if (ctx->backend == MEMPREPOP_BACKEND_MODULE) {
			while (mpl_dev_reap(&ctx->dev, false) == -EINTR)
				;
		} else if (ctx->job) {
			mpl_fallback_wait(ctx->job, NULL, NULL);
			mpl_fallback_free(ctx->job);
		}
	}
	mpl_pool_free(ctx->pool);
out:
	mpl_req_free(&ctx->req);
	if (ctx->fd >= 0)
		close(ctx->fd);
	if (ctx->efd >= 0)
		close(ctx->efd);
	free(ctx);
}
