// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: the fallback's threads, kept from one job to the next.
 *
 * A job needs a thread per entry of its plan. Missing threads are created
 * before the job starts (creating one maps its stack under mmap_lock for
 * write, which would stall every thread populating meanwhile), each on the
 * CPUs the plan gives it; threads made for an earlier job are pinned again
 * to this job's CPUs, within the caller's allowed CPUs at this call (those
 * the job does not need, to all of the caller's CPUs). Where a sandbox
 * refuses the affinity, threads run unpinned: placement is the memory
 * policy's, which pinning never decided. Each
 * thread takes the caller's task policy, as read for this job, before it
 * faults anything: it was made by another call, maybe another thread.
 * Signals are blocked in them: a process-directed signal is the caller's.
 * Each is named as the module's workers are.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct mpl_worker {
	struct mpl_pool *pool;
	pthread_t tid;
	unsigned int index;
	unsigned long gen;	/* under lock: the last job it looked at */
};

struct mpl_pool {
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* workers: a new job, or quit */
	pthread_cond_t idle;	/* the caller: the job's threads are done */
	struct mpl_worker **workers;
	unsigned int n, cap;

	/* Under lock */
	unsigned long gen;	/* job number */
	unsigned int active;	/* threads of the job: [0, active) */
	unsigned int running;	/* of them, not done yet */
	bool quit;
	void (*fn)(void *arg, unsigned int thread);
	void *arg;
	const struct mpl_plan *plan;
	uint64_t done_ns;	/* when running last reached 0 */

	int efd;		/* eventfd written when a job is done, or -1 */
};

int mpl_pool_new(struct mpl_pool **poolp, int efd)
{
	struct mpl_pool *pool = calloc(1, sizeof(*pool));

	if (!pool)
		return -ENOMEM;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->wake, NULL);
	pthread_cond_init(&pool->idle, NULL);
	pool->efd = efd;
	*poolp = pool;
	return 0;
}

/* The caller's task policy, as the plan read it; a failure leaves ours */
static void mpl_take_policy(const struct mpl_plan *plan)
{
	if (plan->task_mode < 0)
		return;
	if (plan->task_mode == MPOL_DEFAULT)
		set_mempolicy(MPOL_DEFAULT, NULL, 0);
	else
		set_mempolicy(plan->task_mode, plan->task_nodes->maskp,
			      plan->task_nodes->size + 1);
}

/*
 * Named as the module's workers are, "memprepop/<node>:<index>" (without a
 * node where it may run anywhere), for ps -L and top -H: the plan may give
 * it another node each job
 */
static void mpl_take_name(const struct mpl_plan *plan, unsigned int index)
{
	int node = plan->thread_node[index];
	char name[32];

	if (node >= 0)
		snprintf(name, sizeof(name), "memprepop/%d:%u", node, index);
	else
		snprintf(name, sizeof(name), "memprepop/%u", index);
	name[15] = 0;		/* what the kernel keeps of it */
	pthread_setname_np(pthread_self(), name);
}

static void *mpl_worker_fn(void *arg)
{
	struct mpl_worker *w = arg;
	struct mpl_pool *pool = w->pool;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		void (*fn)(void *arg, unsigned int thread);
		const struct mpl_plan *plan;
		void *job;

		while (!pool->quit && w->gen == pool->gen)
			pthread_cond_wait(&pool->wake, &pool->lock);
		if (pool->quit)
			break;
		w->gen = pool->gen;
		if (w->index >= pool->active)
			continue;
		fn = pool->fn;
		job = pool->arg;
		plan = pool->plan;
		pthread_mutex_unlock(&pool->lock);

		mpl_take_policy(plan);
		mpl_take_name(plan, w->index);
		fn(job, w->index);

		pthread_mutex_lock(&pool->lock);
		if (!--pool->running) {
			uint64_t one = 1;

			pool->done_ns = mpl_now_ns();
			/* Under the lock: a reaper that saw it done finds it */
			if (pool->efd >= 0)
				(void)!write(pool->efd, &one, sizeof(one));
			pthread_cond_broadcast(&pool->idle);
		}
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

static int mpl_worker_new(struct mpl_pool *pool, const cpu_set_t *cpus)
{
	struct mpl_worker *w;
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	if (pool->n == pool->cap) {
		unsigned int cap = pool->cap ? 2 * pool->cap : 8;
		struct mpl_worker **workers = realloc(pool->workers,
						      cap * sizeof(*workers));

		if (!workers)
			return -ENOMEM;
		pool->workers = workers;
		pool->cap = cap;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->pool = pool;
	w->index = pool->n;
	w->gen = pool->gen;	/* no job runs while threads are made */
	ret = pthread_attr_init(&attr);
	if (ret) {
		free(w);
		return -ret;
	}
	/* It starts on its CPUs: nothing to migrate later */
	pthread_attr_setaffinity_np(&attr, sizeof(*cpus), cpus);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&w->tid, &attr, mpl_worker_fn, w);
	pthread_attr_destroy(&attr);
	/*
	 * A sandbox that refuses sched_setaffinity() (QEMU's
	 * resourcecontrol=deny under libvirt) fails the create: the thread
	 * then runs wherever the caller may, its pages placed by policy all
	 * the same
	 */
	if (ret == EPERM || ret == EINVAL)
		ret = pthread_create(&w->tid, NULL, mpl_worker_fn, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		free(w);
		return -ret;
	}
	pool->workers[pool->n++] = w;
	return 0;
}

/**
 * mpl_pool_start() - run fn(arg, i) on threads [0, plan->nthreads)
 * @pool: no job running
 * @plan: the threads' CPUs and the caller's task policy; kept by the caller
 *	until the job is done
 * @fn: the work of thread i
 * @arg: passed to @fn
 *
 * Return: 0 when the job runs; -errno (-EAGAIN: a thread could not be
 * made) when it does not, nothing having run.
 */
int mpl_pool_start(struct mpl_pool *pool, const struct mpl_plan *plan,
		   void (*fn)(void *arg, unsigned int thread), void *arg)
{
	unsigned int n = plan->nthreads, old = pool->n, i;
	int ret;

	for (i = old; i < n; i++) {
		ret = mpl_worker_new(pool, &plan->thread_cpus[i]);
		if (ret)
			return ret;
	}
	/*
	 * Those without a part in it wait within the caller's CPUs. Where
	 * the affinity is refused (a sandbox), they stay where they are:
	 * only how near they run to their memory, not where it goes, depends
	 * on it
	 */
	for (i = 0; i < old; i++)
		pthread_setaffinity_np(pool->workers[i]->tid, sizeof(cpu_set_t),
				       i < n ? &plan->thread_cpus[i] :
				       &plan->allowed);
	pthread_mutex_lock(&pool->lock);
	pool->fn = fn;
	pool->arg = arg;
	pool->plan = plan;
	pool->active = n;
	pool->running = n;
	pool->gen++;
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

bool mpl_pool_done(struct mpl_pool *pool)
{
	bool done;

	pthread_mutex_lock(&pool->lock);
	done = !pool->running;
	pthread_mutex_unlock(&pool->lock);
	return done;
}

uint64_t mpl_pool_done_ns(struct mpl_pool *pool)
{
	uint64_t ns;

	pthread_mutex_lock(&pool->lock);
	ns = pool->done_ns;
	pthread_mutex_unlock(&pool->lock);
	return ns;
}

/* Waits for the job's threads; @tick, if any, every 100 ms meanwhile */
void mpl_pool_wait(struct mpl_pool *pool, void (*tick)(void *arg), void *arg)
{
	pthread_mutex_lock(&pool->lock);
	while (pool->running) {
		struct timespec ts;

		if (!tick) {
			pthread_cond_wait(&pool->idle, &pool->lock);
			continue;
		}
		mpl_progress_deadline(&ts);
		pthread_cond_timedwait(&pool->idle, &pool->lock, &ts);
		if (!pool->running)
			break;
		pthread_mutex_unlock(&pool->lock);
		tick(arg);
		pthread_mutex_lock(&pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
}

/* Waits for a job still running, then ends and frees every thread */
void mpl_pool_free(struct mpl_pool *pool)
{
	unsigned int i;

	if (!pool)
		return;
	mpl_pool_wait(pool, NULL, NULL);
	pthread_mutex_lock(&pool->lock);
	pool->quit = true;
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->n; i++)
		pthread_join(pool->workers[i]->tid, NULL);
	mpl_pool_forget(pool);
}

/*
 * In a child after fork(): the threads are the parent's, and the lock may
 * have been held by one of them when it forked. Only the memory is freed.
 */
void mpl_pool_forget(struct mpl_pool *pool)
{
	unsigned int i;

	if (!pool)
		return;
	for (i = 0; i < pool->n; i++)
		free(pool->workers[i]);
	free(pool->workers);
	free(pool);
}
