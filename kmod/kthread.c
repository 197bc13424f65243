// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: workers as kernel threads, on kernels without user worker
 * threads for modules (before 6.11, or without CONFIG_VHOST_TASK).
 *
 * A kernel thread is nobody's: identity.c makes it the caller for the time
 * of a call, and this file makes it behave as the caller's thread would
 * where the kernel treats kernel threads apart: it is freezable for
 * suspend, never an OOM victim, and a SIGKILL sent by mpp_kill() ends the
 * waits of its work that only a fatal signal ends.
 */
#include <linux/err.h>
#include <linux/freezer.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

#include "internal.h"

/* How often an idle thread looks whether its process is still there */
#define MPP_IDLE_CHECK	HZ

/**
 * struct mpp_task - a kernel thread
 * @task: the thread, referenced
 * @woken: it was woken once: it runs mpp_kthread_fn() and holds a module
 *	reference until it exits
 */
struct mpp_task {
	struct task_struct *task;
	bool woken;
};

/*
 * Whatever SIGKILL mpp_kill() sent it for its last work. A kernel thread's
 * SIGKILL has no queue entry, only its bit; anything else pending stays so
 * (recalc_sigpending()). Its own sighand is stable: it never execs.
 */
void mpp_task_work_done(void)
{
	struct sighand_struct *sighand =
		rcu_dereference_protected(current->sighand, true);

	spin_lock_irq(&sighand->siglock);
	sigdelset(&current->pending.signal, SIGKILL);
	recalc_sigpending();
	spin_unlock_irq(&sighand->siglock);
}

static int mpp_kthread_fn(void *data)
{
	struct mpp_thread *t = data;

	/* SIGKILL ends its killable waits (mpp_kill()); nothing else does */
	allow_signal(SIGKILL);
	/* Frozen for suspend while it sleeps, and between steps */
	set_freezable();
	for (;;) {
		enum mpp_step step;

		set_current_state(TASK_IDLE | TASK_FREEZABLE);
		step = mpp_thread_work(t);
		if (step == MPP_WORKED) {
			try_to_freeze();
			continue;
		}
		if (step == MPP_DONE || kthread_should_stop())
			break;
		if (!schedule_timeout(MPP_IDLE_CHECK) &&
		    mpp_thread_orphaned(t))
			break;
	}
	__set_current_state(TASK_RUNNING);
	mpp_thread_exit(t);
	module_put_and_kthread_exit(0);
}

/**
 * mpp_task_create() - a kernel thread for @t, not yet woken
 * @t: the thread it is to run
 * @nid: the node to create it on
 * @index: its index there, for its name
 *
 * Return: the task, or an ERR_PTR().
 */
struct mpp_task *mpp_task_create(struct mpp_thread *t, int nid,
				 unsigned int index)
{
	struct task_struct *task;
	struct mpp_task *kt;

	kt = kzalloc(sizeof(*kt), GFP_KERNEL);
	if (!kt)
		return ERR_PTR(-ENOMEM);
	task = kthread_create_on_node(mpp_kthread_fn, t, nid,
				      "memprepop/%d:%u", nid, index);
	if (IS_ERR(task)) {
		kfree(kt);
		return ERR_CAST(task);
	}
	/*
	 * Never an OOM victim: a memory.oom.group kill of the caller's
	 * cgroup, where the thread works, would otherwise mark it one, and a
	 * kernel thread never clears that mark (suspend then cannot freeze).
	 * The caller's own processes are the ones to kill; its workers stop
	 * with them.
	 */
	task->signal->oom_score_adj = OOM_SCORE_ADJ_MIN;
	kt->task = get_task_struct(task);
	return kt;
}

/* The thread's task_struct */
struct task_struct *mpp_task_struct(struct mpp_task *kt)
{
	return kt->task;
}

/* Wake it for work; the first time, it takes a module reference */
void mpp_task_wake(struct mpp_task *kt)
{
	if (!kt->woken) {
		kt->woken = true;
		__module_get(THIS_MODULE);
	}
	wake_up_process(kt->task);
}

/*
 * End its killable waits: SIGKILL, which a kernel thread only sees as
 * fatal_signal_pending(); mpp_task_work_done() forgets it.
 */
void mpp_task_kill(struct mpp_task *kt)
{
	send_sig(SIGKILL, kt->task, 1);
}

/* Drop the task of a thread that exited by itself */
void mpp_task_free(struct mpp_task *kt)
{
	put_task_struct(kt->task);
	kfree(kt);
}

/* Stop it and wait until it is gone: one never woken never runs at all */
void mpp_task_stop(struct mpp_task *kt)
{
	kthread_stop(kt->task);
	mpp_task_free(kt);
}

/* A kernel thread exits by itself: mpp_thread_retire() is not used */
void mpp_task_stop_async(struct mpp_task *kt)
{
}

/*
 * Never: kernel threads are not frozen by a cgroup, and finish the call for
 * a caller that waits for them; it is frozen when the call returns, as a
 * thread inside madvise() is.
 */
bool mpp_task_caller_freezing(void)
{
	return false;
}

int mpp_tasks_init(void)
{
	return 0;
}

void mpp_tasks_exit(void)
{
}
