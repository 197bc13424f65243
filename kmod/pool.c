// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the threads that work for a process, bounded, and kept between
 * calls. What kind of thread they are (a kernel thread, or a user worker
 * thread of the process) is the business of kthread.c or vtask.c, one of
 * which is built in (struct mpp_task); this file only counts, keeps and
 * hands out threads, and runs their work in steps.
 *
 * Threads are a shared resource, so they are bounded: at most one
 * per online CPU for one process (all its files and concurrent calls, idle
 * threads included), and at most max_threads in the whole system.
 *
 * Creating a thread and placing it costs more than a small populate call. So the
 * threads that work for a process through a file it opened stay, idle,
 * once their call is done, and serve its next calls from any of its files:
 * the model of vhost's workers, which live with the device's owner. They
 * are torn down when the last file that keeps them is released, and when
 * the process has exited (an idle thread looks once a second), so that
 * they never outlive it in its cgroups. A call from another process, on a
 * file passed to it, gets threads of its own that go when it is done.
 */
#include <linux/hashtable.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "internal.h"

static unsigned int max_threads;
module_param(max_threads, uint, 0644);
MODULE_PARM_DESC(max_threads,
		 "Most worker threads in the system at once (0: 4 per online CPU)");

static bool keep_workers = true;
module_param(keep_workers, bool, 0644);
MODULE_PARM_DESC(keep_workers,
		 "Keep a process's workers between its calls (default: yes)");

/**
 * struct mpp_pool - the threads of one process (one mm)
 * @node: in mpp_pools
 * @mm: the mm, a key; held with mmgrab() by each file that keeps the pool
 * @nr: its live threads, idle or working, kept or not
 * @files: open files that keep its idle threads
 * @idle: its threads waiting for work, under mpp_threads_lock
 */
struct mpp_pool {
	struct hlist_node node;
	struct mm_struct *mm;
	unsigned int nr;
	unsigned int files;
	struct list_head idle;
};

/**
 * struct mpp_thread - a worker thread
 * @node: in &mpp_pool.idle while it is idle and kept
 * @task: the thread, as kthread.c or vtask.c made it
 * @pool: the pool it counts in
 * @nid: the node it was created on
 * @kept: it stays, idle, once its work is done
 * @idle: it is on @pool's idle list
 * @started: it was given work once
 * @stopping: whoever set it stops the thread (mpp_task_stop()) and frees
 *	it; otherwise the thread frees itself as it exits
 * @ops: its work, done with @arg
 * @arg: set, with @ops, before it is woken; NULL while it has none, and
 *	MPP_THREAD_DEAD once it can take none (a killed user worker)
 * @begun: @ops->begin() was called for @arg, in the thread
 */
struct mpp_thread {
	struct list_head node;
	struct mpp_task *task;
	struct mpp_pool *pool;
	int nid;
	bool kept;
	bool idle;
	bool started;
	bool stopping;
	const struct mpp_work_ops *ops;
	void *arg;
	bool begun;
};

/* What a killed thread's @arg becomes: no work can be given to it */
#define MPP_THREAD_DEAD	((void *)1)

static DEFINE_SPINLOCK(mpp_threads_lock);
static DEFINE_HASHTABLE(mpp_pools, 6);
static unsigned int mpp_nr_threads;

static struct mpp_pool *mpp_pool_find(struct mm_struct *mm)
{
	struct mpp_pool *pool;

	hash_for_each_possible(mpp_pools, pool, node, (unsigned long)mm)
		if (pool->mm == mm)
			return pool;
	return NULL;
}

/* @mm's pool, added with @new (then NULL) when it has none; under lock */
static struct mpp_pool *mpp_pool_lookup(struct mm_struct *mm,
					struct mpp_pool **new)
{
	struct mpp_pool *pool = mpp_pool_find(mm);

	if (!pool) {
		pool = *new;
		*new = NULL;
		pool->mm = mm;
		INIT_LIST_HEAD(&pool->idle);
		hash_add(mpp_pools, &pool->node, (unsigned long)mm);
	}
	return pool;
}

/* Drop @pool if nothing counts in it any more; returns it to be freed */
static struct mpp_pool *mpp_pool_unused(struct mpp_pool *pool)
{
	if (pool->nr || pool->files)
		return NULL;
	hash_del(&pool->node);
	return pool;
}

/*
 * Take up to @want slots for @pool within both bounds; under the lock.
 * Returns how many.
 */
static unsigned int mpp_slots_take(struct mpp_pool *pool, unsigned int want,
				   unsigned int sys_max, unsigned int mm_max)
{
	unsigned int got = 0;

	if (mpp_nr_threads < sys_max && pool->nr < mm_max)
		got = min3(want, sys_max - mpp_nr_threads, mm_max - pool->nr);
	pool->nr += got;
	mpp_nr_threads += got;
	return got;
}

/*
 * At the system's bound, idle threads other processes keep give their
 * slots up for @pool: up to @nr of them, each from the pool that keeps the
 * most idle at that moment, moved to @reclaim to be stopped. Under the
 * lock. Idle kept threads are a cache; a caller that would otherwise get
 * no thread at all is not.
 */
static void mpp_slots_reclaim(struct mpp_pool *pool, unsigned int nr,
			      struct list_head *reclaim)
{
	while (nr--) {
		struct mpp_pool *p, *most = NULL;
		unsigned int most_idle = 0, bkt;
		struct mpp_thread *t;

		hash_for_each(mpp_pools, bkt, p, node) {
			unsigned int idle = 0;

			if (p == pool)
				continue;
			list_for_each_entry(t, &p->idle, node)
				idle++;
			if (idle > most_idle) {
				most = p;
				most_idle = idle;
			}
		}
		if (!most)
			return;
		t = list_first_entry(&most->idle, struct mpp_thread, node);
		t->idle = false;
		t->stopping = true;
		list_move(&t->node, reclaim);
	}
}

static void mpp_pool_threads_put(struct mpp_pool *pool, unsigned int nr);

/* A thread that is gone: its slot back, and it freed */
static void mpp_thread_free(struct mpp_thread *t)
{
	mpp_pool_threads_put(t->pool, 1);
	kfree(t);
}

/**
 * mpp_thread_stop() - stop a thread whose @stopping its caller set
 * @t: the thread, on no list
 *
 * Returns once it is gone, its slot given back and it freed.
 */
void mpp_thread_stop(struct mpp_thread *t)
{
	mpp_task_stop(t->task);
	mpp_thread_free(t);
}

/* Stop the threads on @list, taken off their idle lists: their slots free */
static void mpp_threads_stop(struct list_head *list)
{
	struct mpp_thread *t, *tmp;

	list_for_each_entry_safe(t, tmp, list, node)
		mpp_thread_stop(t);
}

/**
 * mpp_threads_get() - take thread slots for @mm
 * @mm: the caller's mm
 * @want: how many
 *
 * Within the bound per process and the bound of the system. At the
 * system's bound, idle threads kept by other processes are stopped for
 * slots (mpp_slots_reclaim()), so that no caller is left with none while
 * others only keep theirs.
 *
 * Return: how many it took, each to be used by mpp_thread_create() or
 * given back with mpp_threads_put().
 */
unsigned int mpp_threads_get(struct mm_struct *mm, unsigned int want)
{
	unsigned int sys_max = READ_ONCE(max_threads) ?: 4 * num_online_cpus();
	unsigned int mm_max = num_online_cpus();
	unsigned int got = 0, pass;

	/* The second pass takes what the first one's reclaim freed */
	for (pass = 0; pass < 2 && got < want; pass++) {
		struct mpp_pool *pool, *new, *gone;
		LIST_HEAD(reclaim);

		new = kzalloc(sizeof(*new), GFP_KERNEL);
		if (!new)
			break;
		spin_lock(&mpp_threads_lock);
		pool = mpp_pool_lookup(mm, &new);
		got += mpp_slots_take(pool, want - got, sys_max, mm_max);
		if (!pass && got < want && pool->nr < mm_max)
			mpp_slots_reclaim(pool,
					  min(want - got, mm_max - pool->nr),
					  &reclaim);
		gone = mpp_pool_unused(pool);
		spin_unlock(&mpp_threads_lock);
		kfree(gone);
		kfree(new);
		if (list_empty(&reclaim))
			break;
		/* Each gives its slot back as it exits */
		mpp_threads_stop(&reclaim);
	}
	return got;
}

static void mpp_pool_threads_put(struct mpp_pool *pool, unsigned int nr)
{
	struct mpp_pool *gone;

	spin_lock(&mpp_threads_lock);
	pool->nr -= nr;
	mpp_nr_threads -= nr;
	gone = mpp_pool_unused(pool);
	spin_unlock(&mpp_threads_lock);
	kfree(gone);
}

/**
 * mpp_threads_put() - give back slots mpp_threads_get() took
 * @mm: the mm they were taken for
 * @nr: how many
 */
void mpp_threads_put(struct mm_struct *mm, unsigned int nr)
{
	struct mpp_pool *pool;

	if (!nr)
		return;
	spin_lock(&mpp_threads_lock);
	pool = mpp_pool_find(mm);
	spin_unlock(&mpp_threads_lock);
	mpp_pool_threads_put(pool, nr);
}

/**
 * mpp_pool_keep() - a file keeps the threads of the calling process
 * @keep: the file's pool, set here to the caller's if it has none yet
 *
 * A file keeps the pool of the first process that populates through it.
 *
 * Return: the caller's pool when the file keeps it, so that its threads may
 * stay; NULL otherwise (another process's file, workers not kept, or no
 * memory).
 */
struct mpp_pool *mpp_pool_keep(struct mpp_pool **keep)
{
	struct mm_struct *mm = current->mm;
	struct mpp_pool *pool, *new;

	if (!READ_ONCE(keep_workers))
		return NULL;
	pool = READ_ONCE(*keep);
	if (pool)
		return pool->mm == mm ? pool : NULL;
	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return NULL;
	spin_lock(&mpp_threads_lock);
	if (!*keep) {
		pool = mpp_pool_lookup(mm, &new);
		pool->files++;
		mmgrab(mm);
		WRITE_ONCE(*keep, pool);
	}
	pool = *keep;
	spin_unlock(&mpp_threads_lock);
	kfree(new);
	return pool->mm == mm ? pool : NULL;
}

/**
 * mpp_pool_release() - a file no longer keeps its pool
 * @pool: the pool mpp_pool_keep() gave it, or NULL
 *
 * With the last file of the process that keeps them, its idle threads stop
 * now, and those at work stop when their work is done.
 */
void mpp_pool_release(struct mpp_pool *pool)
{
	struct mpp_pool *gone = NULL;
	struct mpp_thread *t, *tmp;
	struct mm_struct *mm;
	LIST_HEAD(stop);

	if (!pool)
		return;
	mm = pool->mm;
	spin_lock(&mpp_threads_lock);
	if (!--pool->files) {
		list_for_each_entry_safe(t, tmp, &pool->idle, node) {
			t->idle = false;
			t->stopping = true;
			list_move(&t->node, &stop);
		}
		gone = mpp_pool_unused(pool);
	}
	spin_unlock(&mpp_threads_lock);
	kfree(gone);
	/*
	 * Each exits, giving its slot back, and the pool goes with the last
	 * thread of it: @pool is not to be touched from here on.
	 */
	mpp_threads_stop(&stop);
	mmdrop(mm);
}

/* The process of @pool has exited: its threads are not wanted any more */
static bool mpp_pool_orphaned(struct mpp_pool *pool)
{
	return !atomic_read(&pool->mm->mm_users);
}

/*
 * After its work: back on the idle list, or false when it is to go, its
 * pool not kept any more, its process gone, or the thread still in the
 * caller's cgroups (it could not leave them: an idle kernel thread never
 * stays in a cgroup that may be frozen, which it would hold up).
 */
static bool mpp_thread_rest(struct mpp_thread *t)
{
	struct mpp_pool *pool = t->pool;
	bool rest = false;

	if (!mpp_identity_disowned())
		return false;
	spin_lock(&mpp_threads_lock);
	if (t->kept && pool->files && !mpp_pool_orphaned(pool)) {
		list_add(&t->node, &pool->idle);
		t->idle = true;
		rest = true;
	}
	spin_unlock(&mpp_threads_lock);
	return rest;
}

/**
 * mpp_thread_orphaned() - is an idle thread's process gone?
 * @t: the thread, in its own context, idle
 *
 * Then it is taken off the idle list, unless it was taken off for work or
 * to be stopped, and is to exit.
 *
 * Return: true when it is to exit.
 */
bool mpp_thread_orphaned(struct mpp_thread *t)
{
	bool leave = false;

	spin_lock(&mpp_threads_lock);
	if (t->idle && mpp_pool_orphaned(t->pool)) {
		list_del(&t->node);
		t->idle = false;
		leave = true;
	}
	spin_unlock(&mpp_threads_lock);
	return leave;
}

/*
 * @arg's work is over for this thread: ended where it began, then taken
 * away, so that the thread can take the next.
 */
static void mpp_thread_end(struct mpp_thread *t, void *arg)
{
	if (t->begun)
		t->ops->end(arg);
	else
		t->ops->abandon(arg);
	t->begun = false;
}

/**
 * mpp_thread_work() - the next step of a thread's work
 * @t: the thread, in its own context, from its loop (kthread.c, vtask.c)
 *
 * Begins the work mpp_thread_start() gave, does one step of it, and once
 * it has no more, ends it and rests.
 *
 * Return: %MPP_IDLE without work (the state the loop set is kept, to
 * sleep in), %MPP_WORKED after a step (running), or %MPP_DONE when its
 * work is over and it is not kept: it is to go.
 */
enum mpp_step mpp_thread_work(struct mpp_thread *t)
{
	/* Pairs with mpp_thread_start(): @ops and the work it reads */
	void *arg = smp_load_acquire(&t->arg);

	if (!arg || arg == MPP_THREAD_DEAD)
		return MPP_IDLE;
	__set_current_state(TASK_RUNNING);
	if (!t->begun) {
		t->begun = true;
		t->ops->begin(arg);
	}
	if (t->ops->step(arg))
		return MPP_WORKED;
	mpp_thread_end(t, arg);
	WRITE_ONCE(t->arg, NULL);
	mpp_task_work_done();
	return mpp_thread_rest(t) ? MPP_WORKED : MPP_DONE;
}

/**
 * mpp_thread_exit() - a thread leaves on its own
 * @t: the thread, in its own context, after mpp_thread_work() said
 *	%MPP_DONE, mpp_thread_orphaned() true, or its stop was asked for
 *
 * Return: true when it freed @t; false when a stopper will.
 */
bool mpp_thread_exit(struct mpp_thread *t)
{
	if (READ_ONCE(t->stopping))
		return false;
	mpp_task_free(t->task);
	mpp_thread_free(t);
	return true;
}

/**
 * mpp_thread_retire() - a thread that cannot exit by itself is done
 * @t: the thread, in its own context, after mpp_thread_work() said
 *	%MPP_DONE
 *
 * A user worker thread is stopped by another (vtask.c): that is asked for
 * here, once.
 */
void mpp_thread_retire(struct mpp_thread *t)
{
	bool stop;

	spin_lock(&mpp_threads_lock);
	stop = !t->stopping;
	t->stopping = true;
	spin_unlock(&mpp_threads_lock);
	if (stop)
		mpp_task_stop_async(t->task);
}

/**
 * mpp_thread_killed() - a thread's process killed it
 * @t: the thread, in its own context, about to exit (a user worker thread
 *	of a process that exits or execs)
 *
 * The work it had, begun or not, is ended, and no more can be given to it.
 * It is stopped by another, once: here when it was idle or had work; by
 * mpp_thread_start() when it was taken for work not yet given, which then
 * finds it dead; by mpp_thread_retire() already when it was done.
 */
void mpp_thread_killed(struct mpp_thread *t)
{
	void *arg = xchg(&t->arg, MPP_THREAD_DEAD);
	bool retire = arg;

	if (arg)
		mpp_thread_end(t, arg);
	spin_lock(&mpp_threads_lock);
	if (t->idle) {
		list_del(&t->node);
		t->idle = false;
		retire = true;
	}
	spin_unlock(&mpp_threads_lock);
	if (retire)
		mpp_thread_retire(t);
}

/**
 * mpp_thread_create() - a new worker thread, without work
 * @mm: the mm a slot was taken for with mpp_threads_get()
 * @pool: the pool mpp_pool_keep() gave, for a thread that stays, or NULL
 * @nid: its node
 * @index: its index there, for its name
 *
 * In the caller's context: a user worker thread is one of the caller's.
 *
 * Return: the thread, using the slot, or NULL (the slot given back).
 */
struct mpp_thread *mpp_thread_create(struct mm_struct *mm,
				     struct mpp_pool *pool, int nid,
				     unsigned int index)
{
	struct mpp_task *task;
	struct mpp_thread *t;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		goto out_put_slot;
	spin_lock(&mpp_threads_lock);
	t->pool = mpp_pool_find(mm);
	spin_unlock(&mpp_threads_lock);
	t->kept = pool == t->pool;
	t->nid = nid;
	task = mpp_task_create(t, nid, index);
	if (IS_ERR(task))
		goto out_free;
	t->task = task;
	return t;

out_free:
	kfree(t);
out_put_slot:
	mpp_threads_put(mm, 1);
	return NULL;
}

/**
 * mpp_thread_discard() - a thread that will not be used after all
 * @t: a thread from mpp_thread_create() never started, or from
 *	mpp_pool_take()
 */
void mpp_thread_discard(struct mpp_thread *t)
{
	if (t->started) {
		/* Kept and idle: back where it came from */
		spin_lock(&mpp_threads_lock);
		list_add(&t->node, &t->pool->idle);
		t->idle = true;
		spin_unlock(&mpp_threads_lock);
		return;
	}
	t->stopping = true;
	mpp_thread_stop(t);
}

/**
 * mpp_pool_take() - an idle thread of @pool created on node @nid
 * @pool: the caller's pool, or NULL
 * @nid: the node
 * @any: or, when there is none, one created on any node
 *
 * Return: the thread, off the idle list, or NULL when there is none.
 */
struct mpp_thread *mpp_pool_take(struct mpp_pool *pool, int nid, bool any)
{
	struct mpp_thread *t, *found = NULL;

	if (!pool)
		return NULL;
	spin_lock(&mpp_threads_lock);
	list_for_each_entry(t, &pool->idle, node) {
		if (t->nid == nid || any) {
			list_del(&t->node);
			t->idle = false;
			found = t;
			break;
		}
	}
	spin_unlock(&mpp_threads_lock);
	return found;
}

/* How many threads of @pool wait for work now */
unsigned int mpp_pool_idle(struct mpp_pool *pool)
{
	struct mpp_thread *t;
	unsigned int nr = 0;

	spin_lock(&mpp_threads_lock);
	list_for_each_entry(t, &pool->idle, node)
		nr++;
	spin_unlock(&mpp_threads_lock);
	return nr;
}

/* The task of @t, to make it the caller's before it starts */
struct task_struct *mpp_thread_task(struct mpp_thread *t)
{
	return mpp_task_struct(t->task);
}

/**
 * mpp_thread_kill() - end the waits of @t's work that only a fatal signal
 * ends
 * @t: a thread at work
 */
void mpp_thread_kill(struct mpp_thread *t)
{
	mpp_task_kill(t->task);
}

/**
 * mpp_thread_start() - give @t its work and wake it
 * @t: a thread from mpp_thread_create() or mpp_pool_take()
 * @ops: the work
 * @arg: its argument, not NULL
 *
 * A thread killed meanwhile (its process exits) cannot take it: the work
 * is abandoned here instead.
 */
void mpp_thread_start(struct mpp_thread *t, const struct mpp_work_ops *ops,
		      void *arg)
{
	t->started = true;
	t->ops = ops;
	/* Pairs with the thread's smp_load_acquire(), which may not sleep */
	if (cmpxchg_release(&t->arg, NULL, arg) == MPP_THREAD_DEAD) {
		ops->abandon(arg);
		mpp_thread_retire(t);
		return;
	}
	mpp_task_wake(t->task);
}
