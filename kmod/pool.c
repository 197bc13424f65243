// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the kernel threads that work for a process, bounded, and kept
 * between calls.
 *
 * Kernel threads are a shared resource, so they are bounded: at most one
 * per online CPU for one process (all its files and concurrent calls, idle
 * threads included), and at most max_threads in the whole system.
 *
 * Creating a thread, attaching it to the caller's cgroups (a system-wide
 * lock) and placing it costs more than a small populate call. So the
 * threads that work for a process through a file it opened stay, idle,
 * once their call is done, and serve its next calls from any of its files:
 * the model of vhost's workers, which live with the device's owner. They
 * are torn down when the last file that keeps them is released, and when
 * the process has exited (an idle thread looks once a second), so that
 * they never outlive it in its cgroups. A call from another process, on a
 * file passed to it, gets threads of its own that go when it is done.
 */
#include <linux/freezer.h>
#include <linux/hashtable.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
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

/* How often an idle thread looks whether its process is still there */
#define MPP_IDLE_CHECK	HZ

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
 * @task: the thread
 * @pool: the pool it counts in
 * @nid: the node it was created on
 * @kept: it stays, idle, once its work is done
 * @idle: it is on @pool's idle list
 * @started: it was woken once: it holds a module reference
 * @stopping: taken off @pool's idle list to be stopped: its stopper frees it
 * @fn: its work, called with @arg
 * @arg: set, with @fn, before it is woken; NULL while it has none
 */
struct mpp_thread {
	struct list_head node;
	struct task_struct *task;
	struct mpp_pool *pool;
	int nid;
	bool kept;
	bool idle;
	bool started;
	bool stopping;
	void (*fn)(void *arg);
	void *arg;
};

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

/* Stop the threads on @list, taken off their idle lists: their slots free */
static void mpp_threads_stop(struct list_head *list)
{
	struct mpp_thread *t, *tmp;

	list_for_each_entry_safe(t, tmp, list, node) {
		kthread_stop(t->task);
		put_task_struct(t->task);
		kfree(t);
	}
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
 * After its work: back on the idle list, or false when it is to exit, its
 * pool not kept any more, its process gone, or the thread still in the
 * caller's cgroups (it could not leave them: an idle thread never stays
 * in a cgroup that may be frozen, which a kernel thread would hold up).
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

/*
 * Idle, and its process gone: off the idle list, unless it was taken off
 * for work or to be stopped.
 */
static bool mpp_thread_leave(struct mpp_thread *t)
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
 * Whatever SIGKILL mpp_kill() sent it for its last work. A kernel thread's
 * SIGKILL has no queue entry, only its bit; anything else pending stays so
 * (recalc_sigpending()). Its own sighand is stable: it never execs.
 */
static void mpp_thread_forget_kill(void)
{
	struct sighand_struct *sighand =
		rcu_dereference_protected(current->sighand, true);

	spin_lock_irq(&sighand->siglock);
	sigdelset(&current->pending.signal, SIGKILL);
	recalc_sigpending();
	spin_unlock_irq(&sighand->siglock);
}

static int mpp_thread_fn(void *data)
{
	struct mpp_thread *t = data;
	struct mpp_pool *pool = t->pool;
	bool stopping;

	/* SIGKILL ends its killable waits (mpp_kill()); nothing else does */
	allow_signal(SIGKILL);
	/* Frozen for suspend while it sleeps, and between chunks */
	set_freezable();
	for (;;) {
		void *arg;

		set_current_state(TASK_IDLE | TASK_FREEZABLE);
		/* Pairs with mpp_thread_start(): @fn and the work it reads */
		arg = smp_load_acquire(&t->arg);
		if (arg) {
			__set_current_state(TASK_RUNNING);
			t->fn(arg);
			WRITE_ONCE(t->arg, NULL);
			mpp_thread_forget_kill();
			if (!mpp_thread_rest(t))
				break;
			continue;
		}
		if (kthread_should_stop())
			break;
		if (!schedule_timeout(MPP_IDLE_CHECK) && mpp_thread_leave(t))
			break;
	}
	__set_current_state(TASK_RUNNING);

	stopping = t->stopping;
	mpp_pool_threads_put(pool, 1);
	if (!stopping) {
		put_task_struct(t->task);
		kfree(t);
	}
	module_put_and_kthread_exit(0);
}

/**
 * mpp_thread_create() - a new worker thread, not yet running
 * @mm: the mm a slot was taken for with mpp_threads_get()
 * @pool: the pool mpp_pool_keep() gave, for a thread that stays, or NULL
 * @nid: its node
 * @index: its index there, for its name
 *
 * Return: the thread, using the slot, or NULL (the slot given back).
 */
struct mpp_thread *mpp_thread_create(struct mm_struct *mm,
				     struct mpp_pool *pool, int nid,
				     unsigned int index)
{
	struct task_struct *task;
	struct mpp_thread *t;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		goto out_put_slot;
	spin_lock(&mpp_threads_lock);
	t->pool = mpp_pool_find(mm);
	spin_unlock(&mpp_threads_lock);
	t->kept = pool == t->pool;
	t->nid = nid;
	task = kthread_create_on_node(mpp_thread_fn, t, nid, "memprepop/%d:%u",
				      nid, index);
	if (IS_ERR(task))
		goto out_free;
	/*
	 * Never an OOM victim: a memory.oom.group kill of the caller's
	 * cgroup, where the thread works, would otherwise mark it one, and a
	 * kernel thread never clears that mark (suspend then cannot freeze).
	 * The caller's own processes are the ones to kill; its workers stop
	 * with them.
	 */
	task->signal->oom_score_adj = OOM_SCORE_ADJ_MIN;
	get_task_struct(task);
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
	/* Never woken, it exits without running mpp_thread_fn() */
	kthread_stop(t->task);
	put_task_struct(t->task);
	mpp_pool_threads_put(t->pool, 1);
	kfree(t);
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
	return t->task;
}

/**
 * mpp_thread_start() - give @t its work and wake it
 * @t: a thread from mpp_thread_create() or mpp_pool_take()
 * @fn: the work
 * @arg: its argument, not NULL
 */
void mpp_thread_start(struct mpp_thread *t, void (*fn)(void *arg),
		      void *arg)
{
	if (!t->started) {
		t->started = true;
		__module_get(THIS_MODULE);
	}
	t->fn = fn;
	/* Pairs with the thread's smp_load_acquire(), which may not sleep */
	smp_store_release(&t->arg, arg);
	wake_up_process(t->task);
}
