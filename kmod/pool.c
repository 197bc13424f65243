// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the threads that work for a process through one open file,
 * kept between its calls, and stopped only by that process. Each is a
 * user worker thread of the process (vtask.c), which runs vhost's loop and
 * calls back the function it was given at creation, and never calls into
 * this file.
 *
 * Ownership is vhost's: a thread belongs to one pool, the threads of one
 * process on one file, and only that process's own context creates, stops
 * and frees it: its ioctl, its close of its last descriptor of the file
 * (flush)
 * and the file's release. No other process, kworker or timer ever stops
 * one, and nothing is shared between pools: there is no idle cache, no
 * reclaim and no bound across processes. A process's threads on a file are
 * bounded by the CPUs it may run on when it calls; beyond that they count
 * as its threads do (each is forked, against pids.max and RLIMIT_NPROC).
 *
 * Creating a thread and placing it costs more than a small populate call,
 * so a pool's threads stay, idle, between calls, until the process closes
 * its last descriptor of the file (or exits, or execs), or the file is
 * released.
 * A process waits for its own threads only killably: a thread at work is
 * waited for until its work is over or the process is killed; a killed
 * process's threads are dying with it, and it waits for them as exit
 * waits for its threads.
 *
 * Every thread is in one state (enum mpp_thread_state) under the pools'
 * lock, which is the file's.
 */
#include <linux/cred.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "internal.h"

static bool keep_workers = true;
module_param(keep_workers, bool, 0644);
MODULE_PARM_DESC(keep_workers,
		 "Keep a process's workers between its calls on a file (default: yes)");

/**
 * struct mpp_pool - the threads of one process on one file
 * @node: in &mpp_pools.list
 * @tgid: the process, referenced
 * @mm: the mm its threads share, compared only: after an exec the process
 *	has another, and its threads, killed by the exec, are stopped
 * @threads: all its threads, in whatever state
 * @nr: threads in @threads, and those being created for it
 * @users: crews of the process finding their threads in it
 * @flushing: the process is stopping them all: none is handed out
 */
struct mpp_pool {
	struct list_head node;
	struct pid *tgid;
	struct mm_struct *mm;
	struct list_head threads;
	unsigned int nr;
	unsigned int users;
	bool flushing;
};

/**
 * enum mpp_thread_state - where a thread is, under &mpp_pools.lock
 * @MPP_THREAD_HELD: created or taken by a crew, no work yet
 * @MPP_THREAD_WORKING: given work; only the thread itself leaves this state
 * @MPP_THREAD_IDLE: waiting for work in its pool
 * @MPP_THREAD_DEAD: killed with its process; the work it had, it ends on
 *	its way out, before its stop returns
 */
enum mpp_thread_state {
	MPP_THREAD_HELD,
	MPP_THREAD_WORKING,
	MPP_THREAD_IDLE,
	MPP_THREAD_DEAD,
};

/**
 * struct mpp_thread - a worker thread
 * @node: in &mpp_pool.threads
 * @task: the thread (vtask.c)
 * @pools: the file's pools, for their lock and wait queue
 * @pool: its pool
 * @nid: the node it was created on
 * @place: where its faults place pages without a VMA policy: it keeps
 *	its creator's task policy
 * @cred: its creator's credentials when it was created, which it keeps as
 *	its own: those signals, ptrace and its /proc files are checked
 *	against (it faults with its caller's, mpp_identity_enter())
 * @state: where it is, under &mpp_pools.lock
 * @held: a crew holds it, which starts it; a dead thread still held is
 *	stopped by the crew
 * @ops: its work, with @arg, set before it becomes %MPP_THREAD_WORKING
 * @arg: the work's argument
 * @begun: @ops->begin() was called for @arg; the thread's own
 */
struct mpp_thread {
	struct list_head node;
	struct mpp_task *task;
	struct mpp_pools *pools;
	struct mpp_pool *pool;
	int nid;
	struct mpp_placement place;
	const struct cred *cred;
	enum mpp_thread_state state;
	bool held;
	const struct mpp_work_ops *ops;
	void *arg;
	bool begun;
};

/* Do threads stay, idle, between a process's calls? (keep_workers) */
static bool mpp_pool_keeps(void)
{
	return READ_ONCE(keep_workers);
}

static void mpp_thread_set_state(struct mpp_thread *t,
				 enum mpp_thread_state state)
{
	lockdep_assert_held(&t->pools->lock);
	/* Pairs with mpp_thread_fn(): the work is set before WORKING */
	smp_store_release(&t->state, state);
}

/**
 * mpp_pools_init() - a file's pools, none yet
 * @pools: the file's
 * @file: the file
 */
void mpp_pools_init(struct mpp_pools *pools, const struct file *file)
{
	spin_lock_init(&pools->lock);
	INIT_LIST_HEAD(&pools->list);
	init_waitqueue_head(&pools->wq);
	pools->file = file;
}

static struct mpp_pool *mpp_pool_find(struct mpp_pools *pools,
				      struct pid *tgid)
{
	struct mpp_pool *pool;

	lockdep_assert_held(&pools->lock);
	list_for_each_entry(pool, &pools->list, node)
		if (pool->tgid == tgid)
			return pool;
	return NULL;
}

/* Is a thread of the process @tgid stopping its threads on the file? */
static bool mpp_pool_flushing(struct mpp_pools *pools, struct pid *tgid)
{
	struct mpp_pool *pool;
	bool flushing;

	spin_lock(&pools->lock);
	pool = mpp_pool_find(pools, tgid);
	flushing = pool && pool->flushing;
	spin_unlock(&pools->lock);
	return flushing;
}

/*
 * Stop @t and free it: in its process's own context, with nobody else
 * holding it. vtask.c's stop waits for a thread that is neither at work
 * nor held: idle in its loop, or dying with its process.
 */
static void mpp_thread_stop(struct mpp_thread *t)
{
	struct mpp_pools *pools = t->pools;

	spin_lock(&pools->lock);
	list_del(&t->node);
	t->pool->nr--;
	spin_unlock(&pools->lock);
	mpp_vtask_stop(t->task);
	put_cred(t->cred);
	kfree(t);
	wake_up_all(&pools->wq);
}

/*
 * Is a thread created with @have, as its own credentials, what one the
 * calling thread creates now would be to signals, ptrace and /proc: the
 * same ids, user namespace and capabilities? (Not its security module's
 * label, which only the same credentials tell.) A process that changed
 * its credentials (setresuid() by each of its threads, say, which gives
 * each its own) does not have its threads created before kept: else one
 * could stay signallable by whoever could signal the process before.
 */
static bool mpp_cred_alike(const struct cred *have)
{
	const struct cred *want = current_cred();

	return have == want ||
	       (uid_eq(have->uid, want->uid) && uid_eq(have->euid, want->euid) &&
		uid_eq(have->suid, want->suid) &&
		uid_eq(have->fsuid, want->fsuid) &&
		gid_eq(have->gid, want->gid) && gid_eq(have->egid, want->egid) &&
		gid_eq(have->sgid, want->sgid) &&
		gid_eq(have->fsgid, want->fsgid) &&
		have->user_ns == want->user_ns &&
		cap_isidentical(have->cap_permitted, want->cap_permitted) &&
		cap_isidentical(have->cap_effective, want->cap_effective));
}

/*
 * A thread of @pool held by no crew that is dead, or idle and, unless
 * @idle, created with other credentials than the caller's, taken to be
 * stopped
 */
static struct mpp_thread *mpp_pool_take_stoppable(struct mpp_pools *pools,
						  struct mpp_pool *pool,
						  bool idle)
{
	struct mpp_thread *t;

	lockdep_assert_held(&pools->lock);
	list_for_each_entry(t, &pool->threads, node) {
		if (t->held || (t->state != MPP_THREAD_DEAD &&
				(t->state != MPP_THREAD_IDLE ||
				 (!idle && mpp_cred_alike(t->cred)))))
			continue;
		t->held = true;
		return t;
	}
	return NULL;
}

/*
 * Stop every thread of @pool that is dead now, or idle: with @idle every
 * one, else those the caller would not have created (mpp_cred_alike())
 */
static void mpp_pool_stop_idle(struct mpp_pools *pools, struct mpp_pool *pool,
			       bool idle)
{
	struct mpp_thread *t;

	for (;;) {
		spin_lock(&pools->lock);
		t = mpp_pool_take_stoppable(pools, pool, idle);
		spin_unlock(&pools->lock);
		if (!t)
			return;
		mpp_thread_stop(t);
	}
}

/**
 * mpp_pool_get() - the calling process's pool on a file
 * @pools: the file's pools
 *
 * In the caller's context. The pool's threads killed with the process's
 * threads (by an exec) are stopped first, and, where its mm is not the
 * caller's (it has exec'd since), its idle ones too, else its idle ones
 * created with other credentials than the caller's (mpp_cred_alike()),
 * unless it has a signal pending (mpp_pools_trim() says why).
 *
 * A pool is added only for a process that holds a descriptor of the file:
 * the call may have begun before another thread of it closed its last one,
 * whose flush found no pool to stop. Looked at once the pool is on the
 * list, so that a close before is seen here and a close after finds it.
 *
 * Return: the pool, added when the process had none, for the caller's crew
 * until mpp_pool_put(); or NULL when out of memory, while the process is
 * stopping its threads on the file, or when it has closed it.
 */
struct mpp_pool *mpp_pool_get(struct mpp_pools *pools)
{
	struct pid *tgid = task_tgid(current);
	struct mpp_pool *pool, *new;
	bool stale, added = false;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return NULL;
	spin_lock(&pools->lock);
	pool = mpp_pool_find(pools, tgid);
	if (!pool) {
		pool = new;
		new = NULL;
		pool->tgid = get_pid(tgid);
		pool->mm = current->mm;
		INIT_LIST_HEAD(&pool->threads);
		list_add(&pool->node, &pools->list);
		added = true;
	}
	stale = pool->mm != current->mm;
	pool->mm = current->mm;
	if (pool->flushing)
		pool = NULL;
	else
		pool->users++;
	spin_unlock(&pools->lock);
	kfree(new);
	if (!pool)
		return NULL;
	if (added && !mpp_file_held(pools->file)) {
		/* What its close would have done, had the pool been there */
		mpp_pool_put(pools, pool);
		mpp_pools_flush(pools);
		return NULL;
	}
	/* Not the idle of other credentials with a signal pending (trim) */
	if (stale || !signal_pending(current))
		mpp_pool_stop_idle(pools, pool, stale);
	return pool;
}

/*
 * Is idle @t what the calling thread would create, placing pages as it
 * does with @place?
 */
static bool mpp_thread_serves(const struct mpp_thread *t,
			      const struct mpp_placement *place)
{
	const struct mpp_placement *have = &t->place;

	if (!mpp_cred_alike(t->cred))
		return false;
	if (place->by_cpu || have->by_cpu)
		return place->by_cpu == have->by_cpu;
	return have->mode == place->mode && have->flags == place->flags &&
	       have->home_node == place->home_node &&
	       nodes_equal(have->nodes, place->nodes);
}

/**
 * mpp_pool_take() - an idle thread of @pool created on node @nid
 * @pools: the file's pools
 * @pool: the caller's pool
 * @nid: the node
 * @any: or, when there is none, one created on any node
 * @place: where the calling thread's faults place pages
 *
 * Only a thread that places pages as the calling thread would
 * (a user worker thread keeps its creator's task policy).
 *
 * Return: the thread, held for the caller's crew, or NULL when there is
 * none.
 */
struct mpp_thread *mpp_pool_take(struct mpp_pools *pools,
				 struct mpp_pool *pool, int nid, bool any,
				 const struct mpp_placement *place)
{
	struct mpp_thread *t, *found = NULL;

	spin_lock(&pools->lock);
	list_for_each_entry(t, &pool->threads, node) {
		if (t->held || t->state != MPP_THREAD_IDLE ||
		    (t->nid != nid && !any) || !mpp_thread_serves(t, place))
			continue;
		t->held = true;
		mpp_thread_set_state(t, MPP_THREAD_HELD);
		found = t;
		break;
	}
	spin_unlock(&pools->lock);
	return found;
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
 * The function vhost's loop calls, in the thread: one step of its work.
 * Returns false when it has none, to sleep.
 */
static bool mpp_thread_fn(void *data)
{
	struct mpp_thread *t = data;
	struct mpp_pools *pools = t->pools;
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
	spin_lock(&pools->lock);
	mpp_thread_set_state(t, MPP_THREAD_IDLE);
	spin_unlock(&pools->lock);
	/*
	 * Told only now, so that the call's next call finds the thread idle.
	 * From here on its process may stop it: the stop waits for this
	 * function to return.
	 */
	ops->done(arg);
	wake_up_all(&pools->wq);
	return false;
}

/*
 * vtask.c calls this in the thread when its process kills it (a process
 * that exits or execs), before it exits: the
 * work it had is ended, and its process stops it.
 */
static void mpp_thread_killed(void *data)
{
	struct mpp_thread *t = data;
	struct mpp_pools *pools = t->pools;
	const struct mpp_work_ops *ops;
	bool working;
	void *arg;

	/*
	 * Read and left under the lock: a crew that holds the thread either
	 * gave it its work before (WORKING, ended here) or finds it DEAD and
	 * does without it (mpp_thread_start())
	 */
	spin_lock(&pools->lock);
	working = t->state == MPP_THREAD_WORKING;
	mpp_thread_set_state(t, MPP_THREAD_DEAD);
	spin_unlock(&pools->lock);
	if (working) {
		mpp_thread_end_work(t, &ops, &arg);
		ops->done(arg);
	}
	wake_up_all(&pools->wq);
}

/**
 * mpp_thread_create() - a new worker thread of the caller, without work
 * @pools: the file's pools
 * @pool: the caller's pool there, from mpp_pool_get()
 * @nid: its node
 * @index: its index there, for its name
 * @place: where the calling thread's faults place pages
 *
 * In the caller's context: a user worker thread is one of the caller's.
 * The process has at most as many threads on the file as the caller may
 * use CPUs.
 *
 * Return: the thread, held for the caller's crew, or NULL: no room, or it
 * could not be created.
 */
struct mpp_thread *mpp_thread_create(struct mpp_pools *pools,
				     struct mpp_pool *pool, int nid,
				     unsigned int index,
				     const struct mpp_placement *place)
{
	unsigned int cpus = cpumask_weight(current->cpus_ptr);
	struct mpp_task *task;
	struct mpp_thread *t;
	bool room;

	spin_lock(&pools->lock);
	room = pool->nr < cpus;
	if (room)
		pool->nr++;
	spin_unlock(&pools->lock);
	if (!room)
		return NULL;
	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		goto out_unreserve;
	t->pools = pools;
	t->pool = pool;
	t->nid = nid;
	t->place = *place;
	t->cred = get_current_cred();
	t->state = MPP_THREAD_HELD;
	t->held = true;
	task = mpp_vtask_create(mpp_thread_fn, mpp_thread_killed, t, nid,
				index);
	if (IS_ERR(task))
		goto out_free;
	t->task = task;
	spin_lock(&pools->lock);
	list_add(&t->node, &pool->threads);
	spin_unlock(&pools->lock);
	return t;

out_free:
	put_cred(t->cred);
	kfree(t);
out_unreserve:
	spin_lock(&pools->lock);
	pool->nr--;
	spin_unlock(&pools->lock);
	return NULL;
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
	struct mpp_pools *pools = t->pools;

	t->ops = ops;
	t->arg = arg;
	spin_lock(&pools->lock);
	if (t->state != MPP_THREAD_DEAD) {
		mpp_thread_set_state(t, MPP_THREAD_WORKING);
		t->held = false;
		/* Under the lock: it is not stopped before it is woken */
		mpp_vtask_wake(t->task);
		spin_unlock(&pools->lock);
		return;
	}
	spin_unlock(&pools->lock);
	ops->done(arg);
	mpp_thread_stop(t);
}

/**
 * mpp_pools_trim() - the calling process's call on the file is over
 * @pools: the file's pools
 *
 * In its context, where its threads do not stay between calls (module
 * parameter keep_workers), its idle ones stop; else those it would not
 * create now (mpp_cred_alike()), whether or not the call had workers.
 * Not while the caller has a signal pending: a stop or the freezer that
 * reaches it reaches its idle threads too, which vhost_task_stop() cannot
 * wake then, and the caller would wait for them in D, holding up the stop
 * it is to join. They stay for its next call, or its close.
 */
void mpp_pools_trim(struct mpp_pools *pools)
{
	struct mpp_pool *pool;

	if (signal_pending(current))
		return;
	spin_lock(&pools->lock);
	pool = mpp_pool_find(pools, task_tgid(current));
	if (pool && !pool->flushing)
		pool->users++;
	else
		pool = NULL;
	spin_unlock(&pools->lock);
	if (!pool)
		return;
	mpp_pool_stop_idle(pools, pool, !mpp_pool_keeps());
	mpp_pool_put(pools, pool);
}

/*
 * Is @pool settled for its destroy: a thread to stop now, or nothing busy
 * any more (no thread at work or held, no crew being found)?
 */
static bool mpp_pool_settled(struct mpp_pools *pools, struct mpp_pool *pool)
{
	struct mpp_thread *t;
	bool busy = false;

	spin_lock(&pools->lock);
	busy = pool->users;
	list_for_each_entry(t, &pool->threads, node) {
		if (!t->held && t->state != MPP_THREAD_WORKING) {
			spin_unlock(&pools->lock);
			return true;
		}
		busy |= t->held || t->state == MPP_THREAD_WORKING;
	}
	spin_unlock(&pools->lock);
	return !busy;
}

/*
 * Stop all of @pool's threads, in its process's context, and free it. A
 * thread at work is waited for until its work is over, killably; once the
 * process is killed, its threads are dying with it, and they are waited
 * for as exit waits for a process's threads.
 */
static void mpp_pool_destroy(struct mpp_pools *pools, struct mpp_pool *pool)
{
	for (;;) {
		mpp_pool_stop_idle(pools, pool, true);
		spin_lock(&pools->lock);
		if (!pool->nr && !pool->users) {
			list_del(&pool->node);
			spin_unlock(&pools->lock);
			/* Another thread's flush of it waits for that */
			wake_up_all(&pools->wq);
			break;
		}
		spin_unlock(&pools->lock);
		if (fatal_signal_pending(current))
			wait_event(pools->wq, mpp_pool_settled(pools, pool));
		else
			wait_event_killable(pools->wq,
					    mpp_pool_settled(pools, pool));
	}
	put_pid(pool->tgid);
	kfree(pool);
}

/**
 * mpp_pool_put() - the caller's crew has its threads
 * @pools: the file's pools
 * @pool: the pool mpp_pool_get() gave it
 */
void mpp_pool_put(struct mpp_pools *pools, struct mpp_pool *pool)
{
	spin_lock(&pools->lock);
	pool->users--;
	spin_unlock(&pools->lock);
	wake_up_all(&pools->wq);
}

/**
 * mpp_pools_flush() - the calling process closes its last descriptor of
 *	the file
 * @pools: the file's pools
 *
 * Its threads on the file stop: the idle ones now, those at work once
 * their work is over (its caller's, or a background request the file
 * cancelled first). Only the process's own: another's stay its own. When
 * another thread of the process is stopping them already (it closed
 * another descriptor of the file at the same time), until that one is
 * done, killably.
 */
void mpp_pools_flush(struct mpp_pools *pools)
{
	struct pid *tgid = task_tgid(current);
	struct mpp_pool *pool;
	bool other;

	spin_lock(&pools->lock);
	pool = mpp_pool_find(pools, tgid);
	other = pool && pool->flushing;
	if (pool && !other)
		pool->flushing = true;
	spin_unlock(&pools->lock);
	if (!pool)
		return;
	if (!other) {
		mpp_pool_destroy(pools, pool);
		return;
	}
	/* Another thread of the process is stopping them: until it is done */
	wait_event_killable(pools->wq, !mpp_pool_flushing(pools, tgid));
}

/**
 * mpp_pools_release() - the file is released
 * @pools: the file's pools
 *
 * Every process that populated through the file closed its descriptors
 * of it before, which stopped its threads (mpp_pools_flush()); what is
 * left is the pools of processes gone, whose threads died with them, or
 * of a process whose descriptor table another process closed for it
 * (clone(CLONE_FILES)): those are stopped here, in whichever context.
 */
void mpp_pools_release(struct mpp_pools *pools)
{
	struct mpp_pool *pool;

	for (;;) {
		spin_lock(&pools->lock);
		pool = list_first_entry_or_null(&pools->list, struct mpp_pool,
						node);
		if (pool)
			pool->flushing = true;
		spin_unlock(&pools->lock);
		if (!pool)
			return;
		mpp_pool_destroy(pools, pool);
	}
}
