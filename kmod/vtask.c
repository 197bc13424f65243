// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: workers as user worker threads of the calling process
 * (vhost_task: 6.11 and later, with CONFIG_VHOST_TASK, as
 * probe/vhost_task.c finds), the way vhost's workers are its owner's
 * threads.
 *
 * Such a thread is the caller's by construction: it is created by the
 * calling thread as one of its process's threads (CLONE_THREAD, CLONE_VM),
 * so its mm, cgroups, rlimits, rusage and CPU times, autogroup, I/O
 * context, OOM kills, the cgroup freezer and suspend's freezer are the
 * process's, with nothing copied, and its task memory policy is its own
 * copy of its creator's, which the kernel made and frees. ps -L shows it
 * among the process's threads. It runs vhost's loop, which calls the
 * function pool.c gave and between calls handles signals: there group
 * stops, the cgroup freezer and suspend's freezer stop it, between steps,
 * and a fatal signal to the process ends it.
 *
 * A thread kept from an earlier call serves a later one only if its policy
 * places pages as the later caller's would (mpp_vtask_serves()).
 *
 * A vhost_task cannot end by itself: it is stopped by another thread, with
 * vhost_task_stop(), which waits for it; pool.c does that from a kworker.
 *
 * No signal is sent to one by mpp_kill(): a SIGKILL to any thread is fatal
 * to the whole process (only RLIMIT_RTTIME's is meant to be). Its waits
 * that only a fatal signal ends end when the process is killed, as a
 * thread's inside madvise() do.
 */
/* The one kind this kernel builds (probe/vhost_task.c) */
#include "probes.h"

#ifdef MPP_HAVE_VHOST_TASK
#include <linux/completion.h>
#include <linux/err.h>
#include <linux/freezer.h>
#include <linux/mempolicy.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/jobctl.h>
#include <linux/sched/rt.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/vhost_task.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "internal.h"

/**
 * struct mpp_task - a user worker thread of the calling process
 * @vtsk: its vhost_task
 * @task: its task_struct, referenced, as it found itself on its first run
 * @fn: what its loop calls, with @arg
 * @killed: what it calls when its process kills it, with @arg
 * @arg: the argument
 * @running: completed once it has run, or was killed before
 * @first: 0 until its first run (%MPP_VTASK_RAN) or its creator gave up
 *	waiting for it (%MPP_VTASK_ABANDONED), whichever came first; once
 *	abandoned it calls nothing, and @stop stops it
 * @stop: stops an abandoned thread
 */
struct mpp_task {
	struct vhost_task *vtsk;
	struct task_struct *task;
	bool (*fn)(void *arg);
	void (*killed)(void *arg);
	void *arg;
	struct completion running;
	int first;
	struct work_struct stop;
};

#define MPP_VTASK_RAN		1
#define MPP_VTASK_ABANDONED	2

static struct workqueue_struct *mpp_vtask_wq;

/*
 * RLIMIT_RTTIME, as the kernel applies it to a thread (check_thread_timers()
 * in kernel/time/posix-cpu-timers.c): the CPU time a real-time thread has
 * run without blocking is counted for a vhost_task too, but checked from
 * task work at the return to user mode, which a vhost_task never reaches
 * (its loop only handles signals). So it is checked here, between steps:
 * past the hard limit, SIGKILL, which ends the process as it would for its
 * pthread; past the soft limit, SIGXCPU to the process, and the soft limit
 * one second further on, as the kernel does.
 */
static void mpp_vtask_rttime(void)
{
	unsigned long hard = task_rlimit_max(current, RLIMIT_RTTIME);
	unsigned long soft = task_rlimit(current, RLIMIT_RTTIME);
	unsigned long rttime;

	if (soft == RLIM_INFINITY || !rt_task(current))
		return;
	rttime = current->rt.timeout * (USEC_PER_SEC / HZ);
	if (hard != RLIM_INFINITY && rttime >= hard) {
		send_sig(SIGKILL, current, 1);
		return;
	}
	if (rttime < soft)
		return;
	kill_pid(task_tgid(current), SIGXCPU, 1);
	/* Under the lock that do_prlimit() writes limits under */
	task_lock(current->group_leader);
	current->signal->rlim[RLIMIT_RTTIME].rlim_cur = soft + USEC_PER_SEC;
	task_unlock(current->group_leader);
}

/* Called by vhost's loop, in TASK_INTERRUPTIBLE: false to sleep in it */
static bool mpp_vtask_fn(void *data)
{
	struct mpp_task *vt = data;

	if (!vt->task) {
		vt->task = get_task_struct(current);
		if (!cmpxchg(&vt->first, 0, MPP_VTASK_RAN))
			complete(&vt->running);
	}
	if (READ_ONCE(vt->first) != MPP_VTASK_RAN || !vt->fn(vt->arg))
		return false;
	mpp_vtask_rttime();
	return true;
}

/* Its process got a fatal signal: it exits when this returns */
static void mpp_vtask_killed(void *data)
{
	struct mpp_task *vt = data;

	if (READ_ONCE(vt->first) == MPP_VTASK_RAN)
		vt->killed(vt->arg);
	else
		/* Before it ever ran: its creator stops waiting */
		complete(&vt->running);
}

/* Stop it and wait until it is gone; in a kworker */
static void mpp_vtask_stop(struct mpp_task *vt)
{
	vhost_task_stop(vt->vtsk);
	if (vt->task)
		put_task_struct(vt->task);
	kfree(vt);
}

static void mpp_vtask_stop_work(struct work_struct *work)
{
	struct mpp_task *vt = container_of(work, struct mpp_task, stop);

	mpp_vtask_stop(vt);
	module_put(THIS_MODULE);
}

/*
 * Is the calling thread to stop for a group stop, a ptrace trap, the cgroup
 * freezer or suspend? Then it waits for no thread.
 */
static bool mpp_caller_stopping(void)
{
	return (READ_ONCE(current->jobctl) &
		(JOBCTL_PENDING_MASK | JOBCTL_TRAP_FREEZE)) ||
	       freezing(current);
}

/*
 * Its first run, which needs nothing from us and only sets @vt->task. It
 * starts without a signal pending (a fork with one pending fails), but it
 * joins a group stop or a freeze under way before it runs: the creator
 * then gives up rather than wait, as it does when killed.
 */
static int mpp_vtask_wait_running(struct mpp_task *vt)
{
	while (!wait_for_completion_killable_timeout(&vt->running, 1))
		if (mpp_caller_stopping())
			break;
	/* Whichever comes first: its first run, or giving up on it */
	if (cmpxchg(&vt->first, 0, MPP_VTASK_ABANDONED) == MPP_VTASK_RAN)
		return 0;
	return -EINTR;
}

/**
 * mpp_vtask_create() - a user worker thread of the caller's process
 * @fn: what its loop calls
 * @killed: what it calls when its process kills it
 * @arg: their argument
 * @nid: its node, for its name (it is placed by workers.c)
 * @index: its index there, for its name
 *
 * In the caller's context. It is running, idle, when this returns. The
 * pids controller and RLIMIT_NPROC refuse it as they refuse a
 * pthread_create().
 *
 * Return: the task, or an ERR_PTR().
 */
static struct mpp_task *mpp_vtask_create(bool (*fn)(void *arg),
					 void (*killed)(void *arg), void *arg,
					 int nid, unsigned int index)
{
	char name[TASK_COMM_LEN];
	struct vhost_task *vtsk;
	struct mpp_task *vt;

	vt = kzalloc(sizeof(*vt), GFP_KERNEL);
	if (!vt)
		return ERR_PTR(-ENOMEM);
	vt->fn = fn;
	vt->killed = killed;
	vt->arg = arg;
	init_completion(&vt->running);
	INIT_WORK(&vt->stop, mpp_vtask_stop_work);
	snprintf(name, sizeof(name), "memprepop/%d:%u", nid, index);
	vtsk = vhost_task_create(mpp_vtask_fn, mpp_vtask_killed, vt, name);
	/*
	 * A refused fork (pids.max, RLIMIT_NPROC) is an ERR_PTR() since
	 * commit cb380909ae3b ("vhost: return task creation error instead of
	 * NULL"), which 6.12's later stable releases have too, and was NULL
	 * before it (6.11, the first 6.12 releases).
	 */
	if (IS_ERR_OR_NULL(vtsk)) {
		kfree(vt);
		return vtsk ? ERR_CAST(vtsk) : ERR_PTR(-EAGAIN);
	}
	vt->vtsk = vtsk;
	vhost_task_start(vtsk);
	if (mpp_vtask_wait_running(vt)) {
		/* Stopped by a kworker, which may wait for it */
		__module_get(THIS_MODULE);
		queue_work(mpp_vtask_wq, &vt->stop);
		return ERR_PTR(-EINTR);
	}
	return vt;
}

static struct task_struct *mpp_vtask_task(struct mpp_task *vt)
{
	return vt->task;
}

/* With its task referenced: safe even once it has exited */
static void mpp_vtask_wake(struct mpp_task *vt)
{
	wake_up_process(vt->task);
}

/*
 * No thread of @vt's process but its workers (and exiting ones) is left:
 * the process is gone for anyone who could give them work, and only they
 * keep it, a zombie leader and its mm, alive. Under RCU, which keeps the
 * thread list walkable.
 */
static bool mpp_vtask_orphaned(struct mpp_task *vt, struct mm_struct *mm)
{
	bool orphaned = true;
	struct task_struct *t;

	rcu_read_lock();
	mpp_for_each_thread(vt->task, t) {
		if (!(READ_ONCE(t->flags) & (PF_USER_WORKER | PF_EXITING))) {
			orphaned = false;
			break;
		}
	}
	rcu_read_unlock();
	return orphaned;
}

/*
 * Does @vt's own task policy place pages as the calling thread's does? A
 * copy of the fields __mpol_equal() compares, read under each task's lock
 * in turn.
 */
static bool mpp_vtask_serves(struct mpp_task *vt,
			     const struct mpp_placement *place)
{
	const struct mempolicy *want = &place->task_pol;
	struct mempolicy *pol;
	bool same;

	task_lock(vt->task);
	pol = vt->task->mempolicy;
	if (place->by_cpu)
		same = !pol || pol->mode == MPOL_LOCAL;
	else
		same = pol && pol->mode == want->mode &&
		       pol->flags == want->flags &&
		       pol->home_node == want->home_node &&
		       nodes_equal(pol->nodes, want->nodes);
	task_unlock(vt->task);
	return same;
}

static int mpp_vtask_init(void)
{
	mpp_vtask_wq = alloc_workqueue("memprepop-vtask", WQ_UNBOUND, 0);
	return mpp_vtask_wq ? 0 : -ENOMEM;
}

/* The module goes: the last abandoned threads' stops done */
static void mpp_vtask_exit(void)
{
	destroy_workqueue(mpp_vtask_wq);
}

const struct mpp_kind mpp_kind = {
	.name		= "vhost_task",
	.own_policy	= true,
	.cgroup_frozen	= true,
	.create		= mpp_vtask_create,
	.task		= mpp_vtask_task,
	.wake		= mpp_vtask_wake,
	.stop		= mpp_vtask_stop,
	.orphaned	= mpp_vtask_orphaned,
	.serves		= mpp_vtask_serves,
	.init		= mpp_vtask_init,
	.exit		= mpp_vtask_exit,
};

#endif /* MPP_HAVE_VHOST_TASK */
