// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the fallback's work, a job: for kernels without the module.
 *
 * What QEMU's preallocation does, done right, for all the ranges of a call
 * at once: every thread exists before any populating starts (pool.c); each
 * runs on the caller's allowed CPUs of the node its chunks' pages go to
 * (plan.c), so that they are zeroed node-locally; chunks of every range are
 * handed out dynamically to whichever thread of their nodes is free; and in
 * each range the lowest failure stops what lies above it in that range
 * only, so that each range ends where madvise(MADV_POPULATE_WRITE) over it
 * alone would, with its errno and an exact count of what was populated.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

struct mpl_job {
	struct mpl_plan plan;
	struct mpl_req *req;
	struct mpl_pool *pool;	/* NULL: the caller alone */
	bool own_pool;		/* made for this job, freed with it */
	long page_size;
	uint64_t t0;		/* in the background: when it started */

	/* Atomics */
	unsigned char *claimed;	/* per chunk: taken by a thread */
	unsigned char *done;	/* per chunk: populated completely */
	uint64_t bytes_done;	/* for progress */
	int cancelled;
	int stats_err;		/* the first counting failure */

	/*
	 * Per range, under lock (stop_at also read atomically): nothing at or
	 * above stop_at is to be populated; err is why.
	 */
	pthread_mutex_t lock;
	size_t *stop_at;
	int *err;

	uint64_t *counts;	/* per thread, nr_nodes each: scratch */
	unsigned int nr_nodes;
	void *state;		/* the block all of the above live in */
};

/*
 * Room for @n entries of @size bytes at the end of a block of *@len bytes,
 * aligned for them: their offset, *@len grown; SIZE_MAX on an overflow
 */
static size_t mpl_block_add(size_t *len, size_t n, size_t size)
{
	size_t at = (*len + size - 1) / size * size, bytes;

	if (at < *len || __builtin_mul_overflow(n, size, &bytes) ||
	    __builtin_add_overflow(at, bytes, len))
		return SIZE_MAX;
	return at;
}

/*
 * The job's per-chunk and per-range state and its scratch counts, in one
 * allocation: a small call's cost beside madvise() is mostly allocations.
 * 0 or -ENOMEM.
 */
static int mpl_job_alloc_state(struct mpl_job *job, unsigned int nr,
			       size_t nr_counts)
{
	size_t len = 0, nchunks = job->plan.nchunks + 1;
	size_t stop_at = mpl_block_add(&len, nr + 1, sizeof(*job->stop_at));
	size_t counts = mpl_block_add(&len, nr_counts, sizeof(*job->counts));
	size_t err = mpl_block_add(&len, nr + 1, sizeof(*job->err));
	size_t claimed = mpl_block_add(&len, nchunks, 1);
	size_t done = mpl_block_add(&len, nchunks, 1);
	char *block;

	if (stop_at == SIZE_MAX || counts == SIZE_MAX || err == SIZE_MAX ||
	    claimed == SIZE_MAX || done == SIZE_MAX)
		return -ENOMEM;
	block = calloc(1, len);
	if (!block)
		return -ENOMEM;
	job->state = block;
	job->stop_at = (size_t *)(block + stop_at);
	job->counts = (uint64_t *)(block + counts);
	job->err = (int *)(block + err);
	job->claimed = (unsigned char *)(block + claimed);
	job->done = (unsigned char *)(block + done);
	return 0;
}

/* Largest prefix of [p, p + len) that MADV_POPULATE_WRITE accepts */
static size_t mpl_good_prefix(const struct mpl_target *target, char *p,
			      size_t len, long page_size)
{
	size_t lo = 0, hi = len / page_size;

	/* The whole range is known to fail; pages [0, lo) known to work */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (!mpl_target_populate(target, p, mid * page_size))
			lo = mid;
		else
			hi = mid;
	}
	return lo * page_size;
}

/* Populates [p, p + len): 0, or -errno with *good the populated prefix */
static int mpl_populate_chunk(struct mpl_job *job, char *p, size_t len,
			      size_t *good)
{
	const struct mpl_target *target = job->req->target;
	int err;

	err = mpl_target_populate(target, p, len);
	/* The process gone or out of reach: nothing of it to look for */
	if (err && err != -ESRCH && err != -EPERM)
		*good = mpl_good_prefix(target, p, len, job->page_size);
	else if (err)
		*good = 0;
	return err;
}

/* Adds the nodes of [p, p + len), just populated, to the call's counts */
static void mpl_count_nodes(struct mpl_job *job, unsigned int thread,
			    char *p, size_t len)
{
	uint64_t *counts = job->counts + (size_t)thread * job->nr_nodes;
	uint64_t *node_pages = job->req->node_pages;
	unsigned int i;
	int err, none = 0;

	if (!node_pages || !len)
		return;
	err = mpl_node_pages(job->req->target->pid, p, len, counts,
			     job->nr_nodes);
	if (err) {
		__atomic_compare_exchange_n(&job->stats_err, &none, err, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		return;
	}
	for (i = 0; i < job->nr_nodes; i++)
		if (counts[i])
			__atomic_add_fetch(&node_pages[i], counts[i],
					   __ATOMIC_RELAXED);
}

static void mpl_stop(struct mpl_job *job, unsigned int r, size_t at, int err)
{
	pthread_mutex_lock(&job->lock);
	if (at < job->stop_at[r]) {
		__atomic_store_n(&job->stop_at[r], at, __ATOMIC_RELEASE);
		job->err[r] = err;
	}
	pthread_mutex_unlock(&job->lock);
}

/*
 * A thread's share: the chunks its node serves, range by range, in address
 * order. @thread indexes the scratch counts; @node -1 takes any chunk.
 */
static void mpl_work(struct mpl_job *job, unsigned int thread, int node,
		     struct mpl_progress *progress)
{
	const struct mpl_plan *plan = &job->plan;
	size_t i;

	for (i = 0; i < plan->nchunks; i++) {
		const struct mpl_chunk *c = &plan->chunks[i];
		char *base = (char *)(uintptr_t)job->req->work[c->range].addr;
		size_t good;
		int err;

		if (__atomic_load_n(&job->cancelled, __ATOMIC_ACQUIRE))
			return;
		if (c->start >= __atomic_load_n(&job->stop_at[c->range],
						__ATOMIC_ACQUIRE)) {
			/* The rest of this range is not to be done */
			i = plan->first[c->range + 1] - 1;
			continue;
		}
		if (!mpl_plan_serves(plan, i, node))
			continue;
		if (__atomic_exchange_n(&job->claimed[i], 1, __ATOMIC_ACQ_REL))
			continue;

		err = mpl_populate_chunk(job, base + c->start,
					 c->end - c->start, &good);
		if (err) {
			mpl_count_nodes(job, thread, base + c->start, good);
			mpl_stop(job, c->range, c->start + good, err);
			continue;
		}
		__atomic_store_n(&job->done[i], 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&job->bytes_done, c->end - c->start,
				   __ATOMIC_RELAXED);
		mpl_count_nodes(job, thread, base + c->start,
				c->end - c->start);
		/* Working in the caller's own thread: it reports itself */
		if (progress && mpl_progress_report(progress,
				__atomic_load_n(&job->bytes_done,
						__ATOMIC_RELAXED)))
			__atomic_store_n(&job->cancelled, 1, __ATOMIC_RELEASE);
	}
}

static void mpl_thread_fn(void *arg, unsigned int thread)
{
	struct mpl_job *job = arg;

	mpl_work(job, thread, job->plan.thread_node[thread], NULL);
}

/*
 * MADV_POPULATE_WRITE came with Linux 5.14; an advice the kernel does not
 * know fails with EINVAL before the range is looked at. Without it (and
 * without the module) the call fails with -EOPNOTSUPP rather than touching
 * every page itself: that needs SIGBUS and SIGSEGV handlers to turn a failed
 * fault into an error, and a library cannot own those process-wide
 * handlers (QEMU has its own SIGBUS handler for memory errors).
 */
bool mpl_job_supported(void)
{
	return madvise(NULL, 0, MADV_POPULATE_WRITE) == 0;
}

void mpl_job_free(struct mpl_job *job)
{
	if (job->own_pool)
		mpl_pool_free(job->pool);
	mpl_plan_free(&job->plan);
	free(job->state);
	pthread_mutex_destroy(&job->lock);
	free(job);
}

/**
 * mpl_job_start() - plan a request and start its threads
 * @jobp: set to the job, for mpl_job_wait()
 * @pool: the threads to use, or NULL for threads of this job's own
 * @req: the request, kept by the caller until the job is waited for
 * @progress: the caller's progress, which may cancel the planning; NULL in
 *	the background, where the caller will not take part: at least one
 *	thread then, and the job's time is taken here
 *
 * Return: the number of threads started (0: the caller does it all when it
 * waits; in the background, there was nothing to do), or -errno with
 * nothing done. Free the job with mpl_job_free() once waited for.
 */
int mpl_job_start(struct mpl_job **jobp, struct mpl_pool *pool,
		       struct mpl_req *req, struct mpl_progress *progress)
{
	struct mpl_job *job = calloc(1, sizeof(*job));
	unsigned int r, nthreads;
	int ret;

	if (!job)
		return -ENOMEM;
	pthread_mutex_init(&job->lock, NULL);
	job->req = req;
	job->pool = pool;
	job->page_size = sysconf(_SC_PAGESIZE);
	/* A caller that waits times its call itself (ctx.c): no clock read */
	if (!progress)
		job->t0 = mpl_now_ns();
	/* No page is on a node beyond the possible ones */
	if (req->node_pages)
		job->nr_nodes = req->opts.nr_nodes < mpl_possible_nodes() ?
				req->opts.nr_nodes : mpl_possible_nodes();
	ret = mpl_plan_make(&job->plan, req->target, req->work, req->nr,
			    req->opts.max_threads,
			    req->opts.flags & MEMPREPOP_OPT_BORROW_CPUS,
			    !progress, progress);
	if (ret)
		goto fail;
	nthreads = job->plan.nthreads;
	ret = mpl_job_alloc_state(job, req->nr,
				  (size_t)(nthreads ? nthreads : 1) *
				  (job->nr_nodes ? job->nr_nodes : 1));
	if (ret)
		goto fail;
	for (r = 0; r < req->nr; r++)
		job->stop_at[r] = req->work[r].len;

	if (nthreads && !pool) {
		ret = mpl_pool_new(&job->pool, -1);
		if (ret)
			goto fail;
		job->own_pool = true;
	}
	if (nthreads) {
		ret = mpl_pool_start(job->pool, &job->plan, mpl_thread_fn, job);
		if (ret)
			goto fail;
	}
	*jobp = job;
	return nthreads;
fail:
	mpl_job_free(job);
	return ret;
}

void mpl_job_cancel(struct mpl_job *job)
{
	__atomic_store_n(&job->cancelled, 1, __ATOMIC_RELEASE);
}

uint64_t mpl_job_done(struct mpl_job *job)
{
	return __atomic_load_n(&job->bytes_done, __ATOMIC_RELAXED);
}

/* True when mpl_job_wait() would not wait for threads */
bool mpl_job_finished(struct mpl_job *job)
{
	return !job->plan.nthreads || mpl_pool_done(job->pool);
}

struct mpl_tick {
	struct mpl_job *job;
	struct mpl_progress *progress;
};

/* The caller, waiting for the threads: progress, maybe a cancel */
static void mpl_tick(void *arg)
{
	struct mpl_tick *t = arg;

	if (mpl_progress_report(t->progress, mpl_job_done(t->job)))
		mpl_job_cancel(t->job);
}

/* Range @r's populated and error, from its chunks */
static void mpl_range_result(struct mpl_job *job, unsigned int r)
{
	const struct mpl_plan *plan = &job->plan;
	struct memprepop_range *w = &job->req->work[r];
	size_t i = plan->first[r], last = plan->first[r + 1];
	size_t stop = job->stop_at[r], populated;

	while (i < last && job->done[i])
		i++;
	if (i == last) {
		populated = w->len < stop ? w->len : stop;
	} else {
		size_t start = plan->chunks[i].start;

		/* The first incomplete chunk holds the lowest failure, or
		 * never ran (cancelled) */
		if (stop > start && stop < plan->chunks[i].end)
			populated = stop;
		else
			populated = start < stop ? start : stop;
	}
	w->populated = populated;
	if (populated == w->len)
		w->error = 0;
	else if (populated == stop && job->err[r])
		w->error = job->err[r];
	else
		w->error = -ECANCELED;
}

/**
 * mpl_job_wait() - wait for a job and write its outcome
 * @job: from mpl_job_start()
 * @progress: the caller's callback (the caller waits), or NULL
 * @res: its workers, and without @progress its time (start to last
 *	thread's end), or NULL
 *
 * With no thread started, the caller does the work itself here. Each work
 * range's populated and error are written.
 *
 * Return: 0, or the -errno of counting the nodes (the call's, not a range's)
 * but for move_pages(2) refused or without NUMA (-EPERM, -ENOSYS): @res
 * says MEMPREPOP_RESULT_NODES_UNKNOWN then, as the populate succeeded.
 */
int mpl_job_wait(struct mpl_job *job, struct mpl_progress *progress,
		      struct memprepop_result *res)
{
	struct mpl_tick tick = { job, progress };
	unsigned int r;

	if (job->plan.nthreads) {
		mpl_pool_wait(job->pool, progress && progress->fn ?
			      mpl_tick : NULL, &tick);
		if (res) {
			res->workers = job->plan.nthreads;
			if (!progress)
				res->nsecs = mpl_pool_done_ns(job->pool) -
					     job->t0;
		}
	} else {
		/* Not worth a thread: the caller's own faults, its placement */
		mpl_work(job, 0, -1, progress);
		if (res) {
			res->workers = 1;
			if (!progress)
				res->nsecs = mpl_now_ns() - job->t0;
		}
	}
	for (r = 0; r < job->req->nr; r++)
		mpl_range_result(job, r);
	if (job->stats_err == -EPERM || job->stats_err == -ENOSYS) {
		if (res)
			res->flags |= MEMPREPOP_RESULT_NODES_UNKNOWN;
		return 0;
	}
	return job->stats_err;
}
