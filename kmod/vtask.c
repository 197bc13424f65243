// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: workers as user worker threads of the calling process
 * (vhost_task, 6.11 and later with CONFIG_VHOST_TASK), the way vhost's
 * workers are its owner's threads.
 *
 * Such a thread is the caller's by construction: it is created by the
 * calling thread as one of its process's threads (CLONE_THREAD, CLONE_VM),
 * so its credentials, mm, cgroups, rlimits, rusage and CPU times,
 * autogroup, I/O context, OOM kills, the cgroup freezer and suspend's
 * freezer are the process's, with nothing copied. ps -L shows it among the
 * process's threads. It runs vhost's loop, which calls mpp_vtask_fn() and
 * between calls handles signals: there the cgroup freezer and suspend
 * freeze it, between steps, and a fatal signal to the process ends it.
 *
 * What stays to be done by hand: its placement on its node's CPUs and the
 * caller's scheduling attributes (identity.c, for a thread kept from an
 * earlier call), and its end. A vhost_task cannot end by itself: it is
 * stopped by another thread, with vhost_task_stop(), which waits for it.
 * Work done, not kept, or killed with its process, it has that done by a
 * work item of this file's workqueue, which the module's exit drains.
 *
 * No signal is sent to one by mpp_kill(): a SIGKILL to any thread is fatal
 * to the whole process (only RLIMIT_RTTIME's is meant to be). Its waits
 * that only a fatal signal ends end when the process is killed, as a
 * thread's inside madvise() do.
 */
#include <linux/completion.h>
#include <linux/err.h>
#include <linux/freezer.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/jobctl.h>
#include <linux/sched/rt.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/vhost_task.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "internal.h"

/**
 * struct mpp_task - a user worker thread of the calling process
 * @vtsk: its vhost_task
 * @task: its task_struct, referenced, as it found itself
 * @thread: what it runs
 * @running: completed once it has run, with @task set
 * @stop: the work item that stops it when it cannot go on
 */
struct mpp_task {
	struct vhost_task *vtsk;
	struct task_struct *task;
	struct mpp_thread *thread;
	struct completion running;
	struct work_struct stop;
};

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
	enum mpp_step step;

	if (!vt->task) {
		vt->task = get_task_struct(current);
		complete(&vt->running);
	}
	step = mpp_thread_work(vt->thread);
	if (step == MPP_DONE)
		mpp_thread_retire(vt->thread);
	if (step == MPP_WORKED)
		mpp_vtask_rttime();
	return step == MPP_WORKED;
}

/* Its process got a fatal signal: it exits when this returns */
static void mpp_vtask_killed(void *data)
{
	struct mpp_task *vt = data;

	/* Before it ever ran: mpp_task_create() stops it */
	if (!vt->task) {
		complete(&vt->running);
		return;
	}
	mpp_thread_killed(vt->thread);
}

/**
 * mpp_task_create() - a user worker thread of the caller's process for @t
 * @t: the thread it is to run
 * @nid: its node, for its name (it is placed by identity.c)
 * @index: its index there, for its name
 *
 * In the caller's context. It is running, idle, when this returns. The
 * pids controller and RLIMIT_NPROC refuse it as they refuse a
 * pthread_create().
 *
 * Return: the task, or an ERR_PTR().
 */
struct mpp_task *mpp_task_create(struct mpp_thread *t, int nid,
				 unsigned int index)
{
	char name[TASK_COMM_LEN];
	struct vhost_task *vtsk;
	struct mpp_task *vt;

	vt = kzalloc(sizeof(*vt), GFP_KERNEL);
	if (!vt)
		return ERR_PTR(-ENOMEM);
	vt->thread = t;
	init_completion(&vt->running);
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
	/* It runs module code until it is stopped */
	__module_get(THIS_MODULE);
	vhost_task_start(vtsk);
	/*
	 * Its first call of mpp_vtask_fn(), which needs nothing from us. It
	 * starts without a signal pending (a fork with one pending fails), so
	 * only a freeze or a kill in the microseconds before it runs can come
	 * first. Killed, it exits; frozen for suspend, so is the caller here.
	 */
	if (wait_for_completion_state(&vt->running,
				      TASK_KILLABLE | TASK_FREEZABLE) ||
	    !vt->task) {
		mpp_task_stop(vt);
		return ERR_PTR(-EINTR);
	}
	return vt;
}

/* The thread's task_struct */
struct task_struct *mpp_task_struct(struct mpp_task *vt)
{
	return vt->task;
}

void mpp_task_wake(struct mpp_task *vt)
{
	vhost_task_wake(vt->vtsk);
}

/* Nothing: a signal would kill the process (see the top of this file) */
void mpp_task_kill(struct mpp_task *vt)
{
}

void mpp_task_work_done(void)
{
}

/* Never called: a vhost_task does not exit by itself */
void mpp_task_free(struct mpp_task *vt)
{
}

/*
 * Stop it and wait until it is gone. Its module reference goes last, from
 * a file operation (which holds the module too) or from this file's
 * workqueue, which the module's exit drains.
 */
void mpp_task_stop(struct mpp_task *vt)
{
	vhost_task_stop(vt->vtsk);
	if (vt->task)
		put_task_struct(vt->task);
	kfree(vt);
	module_put(THIS_MODULE);
}

static void mpp_vtask_stop_work(struct work_struct *work)
{
	struct mpp_task *vt = container_of(work, struct mpp_task, stop);

	mpp_thread_stop(vt->thread);
}

/* Have it stopped by another thread: it cannot wait for itself */
void mpp_task_stop_async(struct mpp_task *vt)
{
	INIT_WORK(&vt->stop, mpp_vtask_stop_work);
	queue_work(mpp_vtask_wq, &vt->stop);
}

/*
 * Is the caller, waiting in a call for its workers, being frozen (by its
 * cgroup, or for suspend)? Its workers are, between steps, so the call
 * cannot end before it is thawed: it goes, to be frozen, and the call
 * starts again once thawed (-ERESTARTNOINTR), finding done what was done.
 */
bool mpp_task_caller_freezing(void)
{
	return (READ_ONCE(current->jobctl) & JOBCTL_TRAP_FREEZE) ||
	       freezing(current);
}

int mpp_tasks_init(void)
{
	mpp_vtask_wq = alloc_workqueue("memprepop", WQ_UNBOUND, 0);
	return mpp_vtask_wq ? 0 : -ENOMEM;
}

/* The module goes: the last stops done, their module references put */
void mpp_tasks_exit(void)
{
	destroy_workqueue(mpp_vtask_wq);
}
