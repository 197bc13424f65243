// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: contexts, the one object every request goes through: for
 * requests that run in the background and workers that stay from one
 * request to the next, and, on the stack of a one-shot call, for that call
 * (populate.c).
 *
 * The backend is chosen once, when the context is made, and called only
 * through its ops (struct mpl_backend) on the state it made: the module's
 * (module.c), or the fallback's (fallback.c), which also populates another
 * process's memory (the remote backend, on a target of target.c). It keeps what it writes to
 * when a request is reaped; the context keeps the request.
 *
 * The state is under a lock so that memprepop_ctx_cancel() and
 * memprepop_ctx_progress() may come from any thread at any time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK	18
#endif

/*
 * What tells a context kept across calls that its process forked, without
 * a getpid() system call each call: a page of its own that fork() gives
 * the child zeroed (MADV_WIPEONFORK, since Linux 4.14). Where that cannot
 * be had (an older kernel, a sandbox refusing it), the pid it was made in.
 */
static void mpl_ctx_mark(struct memprepop_ctx *ctx)
{
	long page_size = sysconf(_SC_PAGESIZE);
	void *p;

	ctx->pid = getpid();
	p = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (madvise(p, page_size, MADV_WIPEONFORK)) {
		munmap(p, page_size);
		return;
	}
	*(volatile char *)p = 1;
	ctx->mark = p;
}

static void mpl_ctx_unmark(struct memprepop_ctx *ctx)
{
	if (ctx->mark)
		munmap((void *)ctx->mark, sysconf(_SC_PAGESIZE));
	ctx->mark = NULL;
}

/* Is this the child of a fork() since the context was made? */
static bool mpl_ctx_forked(const struct memprepop_ctx *ctx)
{
	if (ctx->oneshot)
		return false;
	if (ctx->mark)
		return !*ctx->mark;
	return ctx->pid != getpid();
}

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
	int ret;

	memset(ctx, 0, sizeof(*ctx));
	pthread_mutex_init(&ctx->lock, NULL);
	/* One call on the caller's stack: no fork() can come between */
	ctx->oneshot = oneshot;
	if (!oneshot)
		mpl_ctx_mark(ctx);
	ctx->target = MPL_TARGET_SELF;
	ctx->ops = &mpl_module_backend;
	if (!(flags & MEMPREPOP_OPT_FALLBACK) &&
	    !ctx->ops->init(&ctx->be, &ctx->latch, oneshot))
		return 0;
	ctx->ops = &mpl_fallback_backend;
	ret = ctx->ops->init(&ctx->be, &ctx->latch, oneshot);
	if (ret)
		mpl_ctx_unmark(ctx);
	return ret;
}

/* Undoes mpl_ctx_init(); a background request must be reaped or dropped */
void mpl_ctx_fini(struct memprepop_ctx *ctx)
{
	ctx->ops->fini(ctx->be, mpl_ctx_forked(ctx));
	mpl_req_free(&ctx->req);
	mpl_target_close(&ctx->target);
	mpl_ctx_unmark(ctx);
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

int memprepop_ctx_new_pid(struct memprepop_ctx **ctxp, int pidfd,
			  unsigned int flags)
{
	struct memprepop_ctx *ctx;
	int ret;

	if (flags)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->lock, NULL);
	mpl_ctx_mark(ctx);
	ctx->ops = &mpl_remote_backend;
	ret = mpl_target_open(&ctx->target, pidfd);
	if (!ret) {
		ret = ctx->ops->init(&ctx->be, &ctx->latch, false);
		if (ret)
			mpl_target_close(&ctx->target);
	}
	if (ret) {
		mpl_ctx_unmark(ctx);
		pthread_mutex_destroy(&ctx->lock);
		free(ctx);
		return ret;
	}
	*ctxp = ctx;
	return 0;
}

int memprepop_ctx_fd(struct memprepop_ctx *ctx)
{
	return ctx->ops->poll_fd(ctx->be);
}

/* Takes the context for a request: -EBUSY, or -EPERM after fork() */
static int mpl_ctx_claim(struct memprepop_ctx *ctx, enum mpl_ctx_state state)
{
	int ret = 0;

	if (mpl_ctx_forked(ctx))
		return -EPERM;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->state != MPL_CTX_IDLE) {
		ret = -EBUSY;
	} else {
		ctx->state = state;
		ctx->prepared = false;
		/* Under the lock: no cancel of the last request comes after */
		mpl_latch_arm(ctx->latch);
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

static void mpl_ctx_release(struct memprepop_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->state = MPL_CTX_IDLE;
	ctx->prepared = false;
	pthread_mutex_unlock(&ctx->lock);
}

/* The request is ready: its progress may be asked for */
static void mpl_ctx_prepared(struct memprepop_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->prepared = true;
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

	ret = mpl_req_prepare(&ctx->req, &ctx->target, ranges, nr, opts);
	if (ret)
		return ret;
	ctx->ranges = ranges;
	ctx->nr = nr;
	res->backend = ctx->ops->id;
	/* Before locking: an unsupported call leaves the ranges as they were */
	ret = ctx->req.nr ? ctx->ops->supported(ctx->be) : 0;
	if (ret)
		return mpl_req_finish(&ctx->req, ranges, nr, res, ret);
	mpl_req_lock(&ctx->req, ranges);
	mpl_ctx_prepared(ctx);
	return 1;
}

/*
 * A synchronous request: the caller's structures checked and copied in, the
 * backend run on our copies, the outcome copied out with the call's time.
 */
int memprepop_ctx_populate(struct memprepop_ctx *ctx,
			   struct memprepop_range *ranges, unsigned int nr,
			   const struct memprepop_opts *opts,
			   struct memprepop_result *res)
{
	struct memprepop_result ours = { .size = sizeof(ours) };
	struct memprepop_opts copy;
	struct mpl_progress progress;
	/* The call's time, for a caller that asks for it */
	uint64_t t0 = res ? mpl_now_ns() : 0;
	int ret;

	if (res && res->size < MPL_RESULT_SIZE_VER0)
		return -EINVAL;
	ret = mpl_opts_copy(&copy, opts);
	if (ret)
		goto out;
	ret = mpl_ctx_claim(ctx, MPL_CTX_SYNC);
	if (ret)
		goto out;
	ret = mpl_ctx_prepare(ctx, ranges, nr, &copy, &ours);
	if (ret > 0) {
		mpl_progress_init(&progress, &copy, ctx->req.total);
		ret = ctx->ops->run(ctx->be, &ctx->req, &progress, &ours);
		mpl_progress_final(&progress, mpl_req_populated(&ctx->req));
		ret = mpl_req_finish(&ctx->req, ranges, nr, &ours, ret);
	}
	mpl_ctx_release(ctx);
out:
	if (res) {
		ours.nsecs = mpl_now_ns() - t0;
		mpl_result_copy(res, &ours);
	}
	return ret;
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
	ret = ctx->ops->start(ctx->be, &ctx->req);
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
	if (mpl_ctx_forked(ctx))
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
	ret = ctx->ops->reap(ctx->be, flags & MEMPREPOP_WAIT_NOHANG, &ours,
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

	if (mpl_ctx_forked(ctx))
		return -EPERM;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->state == MPL_CTX_IDLE)
		ret = -ENOENT;
	else
		mpl_latch_cancel(ctx->latch);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int memprepop_ctx_progress(struct memprepop_ctx *ctx, uint64_t *done,
			   uint64_t *total)
{
	int ret = 0;

	if (mpl_ctx_forked(ctx))
		return -EPERM;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->state == MPL_CTX_IDLE) {
		ret = -ENOENT;
	} else {
		*total = ctx->prepared ? ctx->req.total : 0;
		*done = ctx->prepared ? mpl_latch_done(ctx->latch) : 0;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

void memprepop_ctx_free(struct memprepop_ctx *ctx)
{
	if (!ctx)
		return;
	/* The outcome is dropped: nothing written to the caller's */
	if (!mpl_ctx_forked(ctx) && ctx->state == MPL_CTX_BACKGROUND) {
		memprepop_ctx_cancel(ctx);
		ctx->ops->drop(ctx->be);
	}
	mpl_ctx_fini(ctx);
	free(ctx);
}
