// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: contexts, the one object every request goes through: for
 * requests that run in the background and workers that stay from one
 * request to the next, and, on the stack of a one-shot call, for that call
 * (populate.c).
 *
 * The backend is chosen once, when the context is made, and called only
 * through its ops (struct mpl_backend): with the module (device.c), a
 * context has a /dev/memprepop descriptor of its own, on which the module
 * keeps its workers, or for a one-shot call the cached one; with the
 * fallback (fallback.c), a pool of threads and an eventfd the last of a
 * request's threads writes, or for a one-shot call threads of its own.
 * Everything a backend writes to when a request is reaped lives in the
 * context until then.
 *
 * The state is under a lock so that memprepop_ctx_cancel() and
 * memprepop_ctx_progress() may come from any thread at any time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/**
 * mpl_ctx_init() - a context with its backend
 * @ctx: filled
 * @flags: MEMPREPOP_OPT_FALLBACK for the fallback only
 * @oneshot: for one call, on its stack
 *
 * The module where it can be had, else the fallback.
 *
 * Return: 0, or the fallback's -errno.
 */
int mpl_ctx_init(struct memprepop_ctx *ctx, unsigned int flags, bool oneshot)
{
	memset(ctx, 0, sizeof(*ctx));
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->pid = getpid();
	ctx->oneshot = oneshot;
	ctx->fd = -1;
	ctx->efd = -1;
	ctx->ops = &mpl_module_backend;
	if (!(flags & MEMPREPOP_OPT_FALLBACK) && !ctx->ops->init(ctx))
		return 0;
	ctx->ops = &mpl_fallback_backend;
	return ctx->ops->init(ctx);
}

/* Undoes mpl_ctx_init(); a background request must be reaped or dropped */
void mpl_ctx_fini(struct memprepop_ctx *ctx)
{
	ctx->ops->fini(ctx, ctx->pid != getpid());
	mpl_req_free(&ctx->req);
	pthread_mutex_destroy(&ctx->lock);
}

int memprepop_ctx_new(struct memprepop_ctx **ctxp, unsigned int flags)
{
	struct memprepop_ctx *ctx;
	int ret;

	if (flags & ~MEMPREPOP_OPT_FALLBACK)
		return -EINVAL;
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ret = mpl_ctx_init(ctx, flags, false);
	if (ret) {
		free(ctx);
		return ret;
	}
	*ctxp = ctx;
	return 0;
}

int memprepop_ctx_fd(struct memprepop_ctx *ctx)
{
	return ctx->ops->poll_fd(ctx);
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
	else
		ctx->ops->cancel(ctx);
}

/**
 * mpl_ctx_running() - the request's backend state is live
 * @ctx: the context
 * @job: the fallback's job, or NULL
 *
 * From here on a cancel and progress reach it; a cancel that came before
 * is applied now.
 */
void mpl_ctx_running(struct memprepop_ctx *ctx, struct mpl_job *job)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->job = job;
	ctx->running = true;
	if (ctx->cancel)
		mpl_ctx_cancel_locked(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

/* The fallback's job, given up before it is freed: NULL */
void mpl_ctx_set_job(struct memprepop_ctx *ctx, struct mpl_job *job)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->job = job;
	pthread_mutex_unlock(&ctx->lock);
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
	res->backend = ctx->ops->id;
	/* Before locking: an unsupported call leaves the ranges as they were */
	ret = ctx->req.nr ? ctx->ops->supported(ctx) : 0;
	if (ret)
		return mpl_req_finish(&ctx->req, ranges, nr, res, ret);
	mpl_req_lock(&ctx->req, ranges);
	return 1;
}

/**
 * mpl_ctx_populate() - a synchronous request through a context
 * @arg: the context
 * @ranges: the caller's ranges, @nr of them
 * @nr: entries of @ranges
 * @opts: the options, copied already
 * @res: the outcome
 *
 * As mpl_call() runs it, for memprepop_ctx_populate() and the one-shot
 * calls alike.
 *
 * Return: 0 or -errno, as memprepop_ctx_populate().
 */
int mpl_ctx_populate(void *arg, struct memprepop_range *ranges,
		     unsigned int nr, const struct memprepop_opts *opts,
		     struct memprepop_result *res)
{
	struct memprepop_ctx *ctx = arg;
	struct mpl_progress progress;
	int ret;

	ret = mpl_ctx_claim(ctx, MPL_CTX_SYNC);
	if (ret)
		return ret;
	ret = mpl_ctx_prepare(ctx, ranges, nr, opts, res);
	if (ret <= 0)
		goto out;
	mpl_progress_init(&progress, opts, ctx->req.total);
	ret = ctx->ops->run(ctx, &progress, res);
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
	/* No work still starts one, to be reaped alike */
	ret = ctx->ops->start(ctx);
	if (ret) {
		ret = mpl_req_finish(&ctx->req, ranges, nr, &res, ret);
		goto fail;
	}
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
	enum mpl_ctx_state state;
	int ret, outcome;

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
	ours.backend = ctx->ops->id;
	ret = ctx->ops->reap(ctx, flags & MEMPREPOP_WAIT_NOHANG, &ours,
			     &outcome);
	if (ret)
		return ret;
	ret = mpl_req_finish(&ctx->req, ctx->ranges, ctx->nr, &ours, outcome);
	mpl_ctx_release(ctx);
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
		*done = ctx->running ? ctx->ops->done(ctx) : 0;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

void memprepop_ctx_free(struct memprepop_ctx *ctx)
{
	if (!ctx)
		return;
	/* The outcome is dropped: nothing written to the caller's */
	if (ctx->pid == getpid() && ctx->state == MPL_CTX_BACKGROUND) {
		memprepop_ctx_cancel(ctx);
		ctx->ops->drop(ctx);
	}
	mpl_ctx_fini(ctx);
	free(ctx);
}
