// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the threads that work for a process, bounded, kept between
 * calls, and stopped by one owner. What kind of thread they are (a kernel
 * thread, or a user worker thread of the process) is the business of
 * kthread.c or vtask.c, one of which is built in behind struct mpp_kind;
 * the kind runs the loop and calls back the function it was given at
 * creation, and never calls into this file. This file counts, keeps and
 * hands out threads, runs their work in steps, and frees them.
 *
 * Threads are a shared resource, so they are bounded: at most one per
 * online CPU for one process (all its files and concurrent calls, idle
 * threads included), at most max_user_threads for one user, and at most
 * max_threads in the whole system.
 *
 * Creating a thread and placing it costs more than a small populate call.
 * So the threads that work for a process through a file it opened stay,
 * idle, once their call is done, and serve its next calls from any of its
 * files: the model of vhost's workers, which live with the device's owner.
 * An idle thread stops after idle_ms, when the last file that keeps it is
 * released, when its process is gone, and when another process needs its
 * slot. A call from another process, on a file passed to it, gets threads
 * of its own that go when it is done.
 *
 * Every thread is in one state (enum mpp_thread_state) under
 * mpp_threads_lock. Only the transition to MPP_THREAD_STOPPING frees a
 * thread: its slot is given back there, at once, and its stop (which waits
 * for it to exit) is queued on this file's workqueue, which frees it. So no
 * caller, and no other process, ever waits for a thread to stop: a thread
 * of a stopped, frozen or traced process keeps nobody waiting but a kworker
 * until it runs again.
 */
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/jiffies.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include <linux/workqueue.h>

#include "internal.h"

static unsigned int max_threads;
module_param(max_threads, uint, 0644);
MODULE_PARM_DESC(max_threads,
		 "Most worker threads in the system at once (0: 4 per online CPU)");

static unsigned int max_user_threads;
module_param(max_user_threads, uint, 0644);
MODULE_PARM_DESC(max_user_threads,
		 "Most worker threads of one user at once (0: half of max_threads, at least the online CPUs)");

static bool keep_workers = true;
module_param(keep_workers, bool, 0644);
MODULE_PARM_DESC(keep_workers,
		 "Keep a process's workers between its calls (default: yes)");

static unsigned int idle_ms = 10000;
module_param(idle_ms, uint, 0644);
MODULE_PARM_DESC(idle_ms,
		 "How long a kept worker waits idle before it stops, in ms (default: 10000)");

/**
 * struct mpp_pool - the threads of one process (one mm)
 * @node: in mpp_pools
 * @mm: the mm, a key; held with mmgrab() by each file that keeps the pool
 * @nr: its threads that hold a slot, idle or working, kept or not
 * @files: open files that keep its idle threads
 * @idle: its threads waiting for work; empty while @files is 0, so that a
 *	retire of an idle thread never frees the pool
 */
struct mpp_pool {
	struct hlist_node node;
	struct mm_struct *mm;
	unsigned int nr;
	unsigned int files;
	struct list_head idle;
};

/**
 * struct mpp_user - the slots one user holds
 * @node: in mpp_users
 * @uid: the user
 * @nr: slots it holds
 */
struct mpp_user {
	struct hlist_node node;
	kuid_t uid;
	unsigned int nr;
};

/**
 * enum mpp_thread_state - where a thread is, under mpp_threads_lock
 * @MPP_THREAD_NEW: created for a crew, not given work yet
 * @MPP_THREAD_IDLE: on its pool's idle list
 * @MPP_THREAD_TAKEN: taken off the idle list for a crew, no work yet
 * @MPP_THREAD_WORKING: given work; only the thread itself leaves this state
 * @MPP_THREAD_DEAD: killed with its process while %MPP_THREAD_NEW or
 *	%MPP_THREAD_TAKEN: whoever has it stops it
 * @MPP_THREAD_STOPPING: its slot given back, its stop queued; the stop
 *	frees it
 */
enum mpp_thread_state {
	MPP_THREAD_NEW,
	MPP_THREAD_IDLE,
	MPP_THREAD_TAKEN,
	MPP_THREAD_WORKING,
	MPP_THREAD_DEAD,
	MPP_THREAD_STOPPING,
};

/**
 * struct mpp_thread - a worker thread
 * @node: in &mpp_pool.idle while %MPP_THREAD_IDLE
 * @task: the thread, as the kind made it
 * @pool: the pool its slot counts in, until %MPP_THREAD_STOPPING
 * @user: the user its slot counts for, until %MPP_THREAD_STOPPING
 * @nid: the node it was created on
 * @kept: it stays, idle, once its work is done
 * @state: where it is, under mpp_threads_lock
 * @idle_since: jiffies when it became idle
 * @ops: its work, with @arg, set before it becomes %MPP_THREAD_WORKING
 * @arg: the work's argument
 * @begun: @ops->begin() was called for @arg; the thread's own
 * @stop: its stop, queued on mpp_threads_wq
 */
struct mpp_thread {
	struct list_head node;
	struct mpp_task *task;
	struct mpp_pool *pool;
	struct mpp_user *user;
	int nid;
	bool kept;
	enum mpp_thread_state state;
	unsigned long idle_since;
	const struct mpp_work_ops *ops;
	void *arg;
	bool begun;
	struct work_struct stop;
};

static DEFINE_SPINLOCK(mpp_threads_lock);
static DEFINE_HASHTABLE(mpp_pools, 6);
static DEFINE_HASHTABLE(mpp_users, 6);
static unsigned int mpp_nr_threads;
static struct workqueue_struct *mpp_threads_wq;
static struct delayed_work mpp_reaper;

static void mpp_thread_set_state(struct mpp_thread *t,
				 enum mpp_thread_state state)
{
	lockdep_assert_held(&mpp_threads_lock);
	/* Pairs with mpp_thread_fn(): the work is set before WORKING */
	smp_store_release(&t->state, state);
}

static struct mpp_pool *mpp_pool_find(struct mm_struct *mm)
{
	struct mpp_pool *pool;

	lockdep_assert_held(&mpp_threads_lock);
	hash_for_each_possible(mpp_pools, pool, node, (unsigned long)mm)
		if (pool->mm == mm)
			return pool;
	return NULL;
}

/* @mm's pool, added with @new (then NULL) when it has none */
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

/* Free @pool if nothing counts in it any more */
static void mpp_pool_put_unused(struct mpp_pool *pool)
{
	lockdep_assert_held(&mpp_threads_lock);
	if (pool->nr || pool->files)
		return;
	hash_del(&pool->node);
	kfree(pool);
}

/* The calling user's slots, added with @new (then NULL) when it has none */
static struct mpp_user *mpp_user_lookup(kuid_t uid, struct mpp_user **new)
{
	struct mpp_user *user;

	lockdep_assert_held(&mpp_threads_lock);
	hash_for_each_possible(mpp_users, user, node, __kuid_val(uid))
		if (uid_eq(user->uid, uid))
			return user;
	user = *new;
	*new = NULL;
	user->uid = uid;
	hash_add(mpp_users, &user->node, __kuid_val(uid));
	return user;
}

static void mpp_user_put_unused(struct mpp_user *user)
{
	lockdep_assert_held(&mpp_threads_lock);
	if (user->nr)
		return;
	hash_del(&user->node);
	kfree(user);
}

/* Give back @nr slots of @pool and @user */
static void mpp_slots_put(struct mpp_pool *pool, struct mpp_user *user,
			  unsigned int nr)
{
	lockdep_assert_held(&mpp_threads_lock);
	pool->nr -= nr;
	user->nr -= nr;
	mpp_nr_threads -= nr;
	mpp_pool_put_unused(pool);
	mpp_user_put_unused(user);
}

/* The stop: in a kworker, the one place that waits for a thread */
static void mpp_thread_stop_work(struct work_struct *work)
{
	struct mpp_thread *t = container_of(work, struct mpp_thread, stop);

	mpp_kind.stop(t->task);
	kfree(t);
	/* Its module reference, taken when it was created */
	module_put(THIS_MODULE);
}

/*
 * @t is to go: its slot back now, its stop queued. From here on only the
 * stop touches it.
 */
static void mpp_thread_retire(struct mpp_thread *t)
{
	lockdep_assert_held(&mpp_threads_lock);
	if (t->state == MPP_THREAD_IDLE)
		list_del(&t->node);
	mpp_thread_set_state(t, MPP_THREAD_STOPPING);
	mpp_slots_put(t->pool, t->user, 1);
	t->pool = NULL;
	t->user = NULL;
	queue_work(mpp_threads_wq, &t->stop);
}

/* How many threads of @pool wait for work now */
static unsigned int mpp_pool_count_idle(struct mpp_pool *pool)
{
	struct mpp_thread *t;
	unsigned int nr = 0;

	lockdep_assert_held(&mpp_threads_lock);
	list_for_each_entry(t, &pool->idle, node)
		nr++;
	return nr;
}

/*
 * At the system's or the user's bound, idle threads kept by other processes
 * give their slots up for @pool: up to @nr of them, each from the pool that
 * keeps the most idle at that moment, and, at the user's bound, of that
 * user. Idle kept threads are a cache; a caller that would otherwise get no
 * thread at all is not. Their slots come back at once.
 */
static void mpp_slots_reclaim(struct mpp_pool *pool, struct mpp_user *user,
			      bool user_bound, unsigned int nr)
{
	while (nr--) {
		struct mpp_thread *t, *victim = NULL;
		unsigned int most_idle = 0, bkt;
		struct mpp_pool *p;

		hash_for_each(mpp_pools, bkt, p, node) {
			unsigned int idle = 0;
			struct mpp_thread *first = NULL;

			if (p == pool)
				continue;
			list_for_each_entry(t, &p->idle, node) {
				if (user_bound && t->user != user)
					continue;
				first = first ?: t;
				idle++;
			}
			if (idle > most_idle) {
				victim = first;
				most_idle = idle;
			}
		}
		if (!victim)
			return;
		mpp_thread_retire(victim);
	}
}

static unsigned int mpp_sys_max(void)
{
	return READ_ONCE(max_threads) ?: 4 * num_online_cpus();
}

static unsigned int mpp_user_max(void)
{
	return READ_ONCE(max_user_threads) ?:
	       max(mpp_sys_max() / 2, num_online_cpus());
}

/* Slots free for @pool of @user within every bound */
static unsigned int mpp_slots_free(struct mpp_pool *pool,
				   struct mpp_user *user)
{
	unsigned int sys_max = mpp_sys_max(), user_max = mpp_user_max();
	unsigned int mm_max = num_online_cpus();

	lockdep_assert_held(&mpp_threads_lock);
	if (mpp_nr_threads >= sys_max || user->nr >= user_max ||
	    pool->nr >= mm_max)
		return 0;
	return min3(sys_max - mpp_nr_threads, user_max - user->nr,
		    mm_max - pool->nr);
}

/**
 * mpp_threads_get() - take thread slots for @mm and the calling user
 * @mm: the caller's mm
 * @want: how many
 *
 * Within the bounds per process, per user and of the system. At a bound,
 * idle threads kept by other processes give up their slots
 * (mpp_slots_reclaim()), so that no caller is left with none while others
 * only keep theirs; nothing here waits for them to stop.
 *
 * Return: how many it took, each to be used by mpp_thread_create() or
 * given back with mpp_threads_put().
 */
unsigned int mpp_threads_get(struct mm_struct *mm, unsigned int want)
{
	struct mpp_pool *pool, *new_pool;
	struct mpp_user *user, *new_user;
	unsigned int got = 0, room;

	new_pool = kzalloc(sizeof(*new_pool), GFP_KERNEL);
	new_user = kzalloc(sizeof(*new_user), GFP_KERNEL);
	if (!new_pool || !new_user)
		goto out_free;
	spin_lock(&mpp_threads_lock);
	pool = mpp_pool_lookup(mm, &new_pool);
	user = mpp_user_lookup(current_uid(), &new_user);
	room = mpp_slots_free(pool, user);
	if (room < want && pool->nr + room < num_online_cpus()) {
		bool user_bound = user->nr + room >= mpp_user_max();

		mpp_slots_reclaim(pool, user, user_bound, want - room);
		room = mpp_slots_free(pool, user);
	}
	got = min(want, room);
	pool->nr += got;
	user->nr += got;
	mpp_nr_threads += got;
	mpp_pool_put_unused(pool);
	mpp_user_put_unused(user);
	spin_unlock(&mpp_threads_lock);
out_free:
	kfree(new_user);
	kfree(new_pool);
	return got;
}

/**
 * mpp_threads_put() - give back slots mpp_threads_get() took
 * @mm: the mm they were taken for, by the calling user
 * @nr: how many
 */
void mpp_threads_put(struct mm_struct *mm, unsigned int nr)
{
	struct mpp_user *user, *none = NULL;

	if (!nr)
		return;
	spin_lock(&mpp_threads_lock);
	user = mpp_user_lookup(current_uid(), &none);
	mpp_slots_put(mpp_pool_find(mm), user, nr);
	spin_unlock(&mpp_threads_lock);
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
 * With the last file of the process that keeps them, its idle threads stop,
 * and those at work stop when their work is done. Waits for none of them.
 */
void mpp_pool_release(struct mpp_pool *pool)
{
	struct mpp_thread *t, *tmp;
	struct mm_struct *mm;

	if (!pool)
		return;
	mm = pool->mm;
	spin_lock(&mpp_threads_lock);
	/* While the file still counts, so that no retire frees the pool */
	if (pool->files == 1) {
		list_for_each_entry_safe(t, tmp, &pool->idle, node)
			mpp_thread_retire(t);
	}
	pool->files--;
	mpp_pool_put_unused(pool);
	spin_unlock(&mpp_threads_lock);
	mmdrop(mm);
}

/* How long a kept thread stays idle */
static unsigned long mpp_idle_jiffies(void)
{
	return msecs_to_jiffies(READ_ONCE(idle_ms));
}

/*
 * Idle threads that waited idle_ms, and those of processes that are gone,
 * stop; it looks again while any thread is idle.
 */
static void mpp_reaper_fn(struct work_struct *work)
{
	unsigned long timeout = mpp_idle_jiffies();
	struct mpp_thread *t, *tmp;
	struct mpp_pool *pool;
	bool idle = false;
	unsigned int bkt;

	spin_lock(&mpp_threads_lock);
	/* A pool with idle threads has files: no retire here frees it */
	hash_for_each(mpp_pools, bkt, pool, node) {
		bool gone;

		if (list_empty(&pool->idle))
			continue;
		t = list_first_entry(&pool->idle, struct mpp_thread, node);
		gone = mpp_kind.orphaned(t->task, pool->mm);
		list_for_each_entry_safe(t, tmp, &pool->idle, node) {
			if (gone || time_after_eq(jiffies,
						  t->idle_since + timeout))
				mpp_thread_retire(t);
			else
				idle = true;
		}
	}
	spin_unlock(&mpp_threads_lock);
	if (idle)
		queue_delayed_work(mpp_threads_wq, &mpp_reaper,
				   min(timeout, (unsigned long)HZ));
}

/*
 * In the thread: @t's work is over, ended where it began. Returns the work
 * in *@ops and *@arg, for its done() once the thread is off it.
 */
static void mpp_thread_end_work(struct mpp_thread *t,
				const struct mpp_work_ops **ops, void **arg)
{
	*ops = t->ops;
	*arg = t->arg;
	if (t->begun)
		t->ops->end(t->arg);
	t->begun = false;
}

/*
 * After its work, in the thread: back on the idle list, or it goes: its
 * pool not kept any more, its process gone, or the thread unable to leave
 * the caller's cgroups (an idle kernel thread never stays in a cgroup that
 * may be frozen, which it would hold up).
 */
static void mpp_thread_rest(struct mpp_thread *t)
{
	bool disowned = !mpp_kind.disowned || mpp_kind.disowned();

	spin_lock(&mpp_threads_lock);
	if (disowned && t->kept && t->pool->files &&
	    !mpp_kind.orphaned(t->task, t->pool->mm)) {
		t->idle_since = jiffies;
		list_add(&t->node, &t->pool->idle);
		mpp_thread_set_state(t, MPP_THREAD_IDLE);
		queue_delayed_work(mpp_threads_wq, &mpp_reaper,
				   min(mpp_idle_jiffies(), (unsigned long)HZ));
	} else {
		mpp_thread_retire(t);
	}
	spin_unlock(&mpp_threads_lock);
}

/*
 * The function the kind's loop calls, in the thread: one step of its work.
 * Returns false when it has none, to sleep.
 */
static bool mpp_thread_fn(void *data)
{
	struct mpp_thread *t = data;
	const struct mpp_work_ops *ops;
	void *arg;

	/* Pairs with mpp_thread_set_state(): its work is set */
	if (smp_load_acquire(&t->state) != MPP_THREAD_WORKING)
		return false;
	__set_current_state(TASK_RUNNING);
	if (!t->begun) {
		t->begun = true;
		t->ops->begin(t->arg);
	}
	if (t->ops->step(t->arg))
		return true;
	mpp_thread_end_work(t, &ops, &arg);
	if (mpp_kind.work_done)
		mpp_kind.work_done();
	mpp_thread_rest(t);
	/*
	 * Told only now, so that the call's next call finds the thread idle.
	 * Another call may have taken it meanwhile: its state says so.
	 */
	ops->done(arg);
	return true;
}

/*
 * The kind calls this in the thread when its process kills it (a user
 * worker thread of a process that exits or execs), before it exits: the
 * work it had is ended, and whoever has it stops it.
 */
static void mpp_thread_killed(void *data)
{
	struct mpp_thread *t = data;
	const struct mpp_work_ops *ops = NULL;
	void *arg = NULL;

	/* Only the thread leaves WORKING: its work is still there */
	if (smp_load_acquire(&t->state) == MPP_THREAD_WORKING)
		mpp_thread_end_work(t, &ops, &arg);
	spin_lock(&mpp_threads_lock);
	switch (t->state) {
	case MPP_THREAD_NEW:
	case MPP_THREAD_TAKEN:
		/* Its crew has it: mpp_thread_start() or _discard() stops it */
		mpp_thread_set_state(t, MPP_THREAD_DEAD);
		break;
	case MPP_THREAD_IDLE:
	case MPP_THREAD_WORKING:
		mpp_thread_retire(t);
		break;
	case MPP_THREAD_DEAD:
	case MPP_THREAD_STOPPING:
		break;
	}
	spin_unlock(&mpp_threads_lock);
	/* Its stop waits for this thread to return: @t is still there */
	if (ops)
		ops->done(arg);
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
	struct mpp_user *none = NULL;
	struct mpp_task *task;
	struct mpp_thread *t;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		goto out_put_slot;
	INIT_WORK(&t->stop, mpp_thread_stop_work);
	t->nid = nid;
	t->state = MPP_THREAD_NEW;
	spin_lock(&mpp_threads_lock);
	t->pool = mpp_pool_find(mm);
	t->user = mpp_user_lookup(current_uid(), &none);
	spin_unlock(&mpp_threads_lock);
	t->kept = pool == t->pool;
	/* It may run module code until its stop is done */
	__module_get(THIS_MODULE);
	task = mpp_kind.create(mpp_thread_fn, mpp_thread_killed, t, nid,
			       index);
	if (IS_ERR(task))
		goto out_module_put;
	t->task = task;
	return t;

out_module_put:
	module_put(THIS_MODULE);
	kfree(t);
out_put_slot:
	mpp_threads_put(mm, 1);
	return NULL;
}

/**
 * mpp_thread_discard() - a thread that will not be used after all
 * @t: a thread from mpp_thread_create() or mpp_pool_take(), not started
 */
void mpp_thread_discard(struct mpp_thread *t)
{
	spin_lock(&mpp_threads_lock);
	if (t->state == MPP_THREAD_TAKEN && t->pool->files) {
		/* Kept and idle: back where it came from */
		t->idle_since = jiffies;
		list_add(&t->node, &t->pool->idle);
		mpp_thread_set_state(t, MPP_THREAD_IDLE);
	} else {
		mpp_thread_retire(t);
	}
	spin_unlock(&mpp_threads_lock);
}

/**
 * mpp_pool_take() - an idle thread of @pool created on node @nid
 * @pool: the caller's pool, or NULL
 * @nid: the node
 * @any: or, when there is none, one created on any node
 * @place: where the calling thread's faults place pages
 *
 * Only a thread that can serve the calling thread (mpp_kind.serves()): one
 * that cannot stops instead.
 *
 * Return: the thread, off the idle list, or NULL when there is none.
 */
struct mpp_thread *mpp_pool_take(struct mpp_pool *pool, int nid, bool any,
				 const struct mpp_placement *place)
{
	struct mpp_thread *t, *tmp, *found = NULL;

	if (!pool)
		return NULL;
	spin_lock(&mpp_threads_lock);
	list_for_each_entry_safe(t, tmp, &pool->idle, node) {
		if (t->nid != nid && !any)
			continue;
		if (mpp_kind.serves && !mpp_kind.serves(t->task, place)) {
			mpp_thread_retire(t);
			continue;
		}
		list_del(&t->node);
		mpp_thread_set_state(t, MPP_THREAD_TAKEN);
		found = t;
		break;
	}
	spin_unlock(&mpp_threads_lock);
	return found;
}

/* How many threads of @pool wait for work now */
unsigned int mpp_pool_idle(struct mpp_pool *pool)
{
	unsigned int nr;

	spin_lock(&mpp_threads_lock);
	nr = mpp_pool_count_idle(pool);
	spin_unlock(&mpp_threads_lock);
	return nr;
}

/* The task of @t, to make it the caller's before it starts */
struct task_struct *mpp_thread_task(struct mpp_thread *t)
{
	return mpp_kind.task(t->task);
}

/**
 * mpp_thread_kill() - end the waits of @t's work that only a fatal signal
 * ends, where its kind can without ending its process
 * @t: a thread at work, held there by its crew's lock
 */
void mpp_thread_kill(struct mpp_thread *t)
{
	if (mpp_kind.kill)
		mpp_kind.kill(t->task);
}

/**
 * mpp_thread_start() - give @t its work and wake it
 * @t: a thread from mpp_thread_create() or mpp_pool_take()
 * @ops: the work
 * @arg: its argument
 *
 * A thread killed meanwhile (its process exits) cannot take it: the work
 * is done here instead, without it, and the thread stopped.
 */
void mpp_thread_start(struct mpp_thread *t, const struct mpp_work_ops *ops,
		      void *arg)
{
	t->ops = ops;
	t->arg = arg;
	spin_lock(&mpp_threads_lock);
	if (t->state != MPP_THREAD_DEAD) {
		mpp_thread_set_state(t, MPP_THREAD_WORKING);
		/* Under the lock: no stop is queued before it is woken */
		mpp_kind.wake(t->task);
		spin_unlock(&mpp_threads_lock);
		return;
	}
	spin_unlock(&mpp_threads_lock);
	/* DEAD is left by its owner only: the work is done with @t first */
	ops->done(arg);
	spin_lock(&mpp_threads_lock);
	mpp_thread_retire(t);
	spin_unlock(&mpp_threads_lock);
}

int mpp_threads_init(void)
{
	int ret;

	mpp_threads_wq = alloc_workqueue("memprepop", WQ_UNBOUND, 0);
	if (!mpp_threads_wq)
		return -ENOMEM;
	INIT_DELAYED_WORK(&mpp_reaper, mpp_reaper_fn);
	ret = mpp_kind.init ? mpp_kind.init() : 0;
	if (ret)
		destroy_workqueue(mpp_threads_wq);
	return ret;
}

/* The module goes: no thread is left, the last stops are done */
void mpp_threads_exit(void)
{
	cancel_delayed_work_sync(&mpp_reaper);
	destroy_workqueue(mpp_threads_wq);
	if (mpp_kind.exit)
		mpp_kind.exit();
}
