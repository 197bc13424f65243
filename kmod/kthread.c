// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: workers as kernel threads, on kernels without user worker
 * threads for modules (before 6.11, or without CONFIG_VHOST_TASK: built
 * where probe/vhost_task.c finds no vhost_task).
 *
 * A kernel thread is nobody's. For the time of a request this file makes it
 * the caller where the kernel asks the faulting task rather than the mm,
 * beyond what identity.c does for both kinds:
 *
 * - its mm as current->mm (the overcommit user reserve of shmem and
 *   hugetlb accounting): kthread_use_mm();
 * - its memory cgroup for page cache, page tables and other kernel memory,
 *   which a kernel thread would leave to the root cgroup or not charge at
 *   all: set_active_memcg();
 * - its cgroups (cpu, cpuset, hugetlb, io, memory, pids), attached as
 *   vhost attached its kernel-thread workers, for the time of one call:
 *   the pids controller is charged, but an attach does not check
 *   pids.max, which the module cannot ask the controller to check
 *   (security.rst);
 *   a worker goes back to the root cgroups before the call can end,
 *   because the cgroup v2 freezer can freeze no kernel thread and, on 6.1,
 *   never counts again when one leaves a freezing cgroup;
 * - the caller's task memory policy: a copy, installed as its own. A
 *   kernel thread's task policy is reached by nothing but its own faults
 *   and a cpuset rebind (in place, under task_lock()): /proc shows no
 *   kernel thread's maps (get_task_mm() is NULL for one), and it never
 *   exits with the copy installed, so the kernel never puts it. A user
 *   worker thread (vtask.c) has a policy of its own instead.
 *
 * And where the kernel treats kernel threads apart: it is freezable for
 * suspend, never an OOM victim, and a SIGKILL sent by mpp_kill() ends the
 * waits of its work that only a fatal signal ends.
 */
/* The one kind this kernel builds (probe/vhost_task.c) */
#include "probes.h"

#ifndef MPP_HAVE_VHOST_TASK
#ifdef MPP_HAVE_VHOST_TASK_CONFIG
#warning "vhost_task_create() is not 6.11's here: workers are kernel threads"
#endif
#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/freezer.h>
#include <linux/kthread.h>
#include <linux/memcontrol.h>
#include <linux/mempolicy.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

#include "internal.h"

/**
 * struct mpp_task - a kernel thread
 * @task: the thread, referenced
 * @fn: what its loop calls, with @arg
 * @arg: the argument
 */
struct mpp_task {
	struct task_struct *task;
	bool (*fn)(void *arg);
	void *arg;
};

static int mpp_kthread_fn(void *data)
{
	struct mpp_task *kt = data;

	/* SIGKILL ends its killable waits (mpp_kill()); nothing else does */
	allow_signal(SIGKILL);
	/* Frozen for suspend while it sleeps, and between steps */
	set_freezable();
	for (;;) {
		set_current_state(TASK_IDLE | TASK_FREEZABLE);
		if (kthread_should_stop())
			break;
		if (kt->fn(kt->arg)) {
			__set_current_state(TASK_RUNNING);
			try_to_freeze();
			cond_resched();
			continue;
		}
		schedule();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/* A kernel thread is never killed with a process: @killed is not called */
static struct mpp_task *mpp_kthread_create(bool (*fn)(void *arg),
					   void (*killed)(void *arg),
					   void *arg, int nid,
					   unsigned int index)
{
	struct task_struct *task;
	struct mpp_task *kt;

	kt = kzalloc(sizeof(*kt), GFP_KERNEL);
	if (!kt)
		return ERR_PTR(-ENOMEM);
	kt->fn = fn;
	kt->arg = arg;
	task = kthread_create_on_node(mpp_kthread_fn, kt, nid,
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

static struct task_struct *mpp_kthread_task(struct mpp_task *kt)
{
	return kt->task;
}

static void mpp_kthread_wake(struct mpp_task *kt)
{
	wake_up_process(kt->task);
}

/* Stop it, wait until it is gone: one never woken never runs at all */
static void mpp_kthread_stop(struct mpp_task *kt)
{
	kthread_stop(kt->task);
	put_task_struct(kt->task);
	kfree(kt);
}

/*
 * End its killable waits: SIGKILL, which a kernel thread only sees as
 * fatal_signal_pending(); mpp_kthread_work_done() forgets it.
 */
static void mpp_kthread_kill(struct mpp_task *kt)
{
	send_sig(SIGKILL, kt->task, 1);
}

/*
 * Whatever SIGKILL mpp_kill() sent it for its last work: the only signal a
 * kernel thread that allowed SIGKILL alone can have pending
 */
static void mpp_kthread_work_done(void)
{
	flush_signals(current);
}

/* Already in all of the caller's cgroups (both in the root ones, say)? */
static bool mpp_same_cgroups(struct task_struct *a, struct task_struct *b)
{
	bool same;

	rcu_read_lock();
	same = task_css_set(a) == task_css_set(b);
	rcu_read_unlock();
	return same;
}

/*
 * Into the caller's cgroups, as vhost attached its kernel-thread workers:
 * the pids controller is charged, and does not look at pids.max
 */
static int mpp_kthread_adopt(const struct mpp_identity *id,
			     struct task_struct *task)
{
	if (mpp_same_cgroups(current, task))
		return 0;
	return cgroup_attach_task_all(current, task);
}

/* Back to the root cgroups, where kernel threads are created */
static void mpp_kthread_disown(struct task_struct *task)
{
	if (mpp_same_cgroups(&init_task, task))
		return;
	/* Out of memory it stays; mpp_kthread_disowned() then says so */
	cgroup_attach_task_all(&init_task, task);
}

static bool mpp_kthread_disowned(void)
{
	return mpp_same_cgroups(&init_task, current);
}

/* The caller's mm, memory cgroup and task policy */
static int mpp_kthread_enter(const struct mpp_identity *id,
			     struct mm_struct *mm,
			     const struct mpp_placement *place,
			     struct mpp_identity_saved *saved)
{
	saved->pol = kmemdup(&place->task_pol, sizeof(*saved->pol),
			     GFP_KERNEL_ACCOUNT);
	if (!saved->pol)
		return -ENOMEM;
	kthread_use_mm(mm);
	saved->memcg = set_active_memcg(id->memcg);
	saved->followed_memcg = NULL;
	task_lock(current);
	current->mempolicy = saved->pol;
	task_unlock(current);
	return 0;
}

/*
 * Into the cgroups @caller is in now, with its CPUs of those the worker
 * had: a cpuset attach resets them.
 */
static int mpp_follow_cgroups(struct task_struct *caller)
{
	cpumask_var_t cpus;
	int ret;

	if (!zalloc_cpumask_var(&cpus, GFP_KERNEL))
		return -ENOMEM;
	cpumask_copy(cpus, current->cpus_ptr);
	ret = cgroup_attach_task_all(caller, current);
	if (!ret && cpumask_and(cpus, cpus, caller->cpus_ptr))
		set_cpus_allowed_ptr(current, cpus);
	free_cpumask_var(cpus);
	return ret;
}

/* The cgroups the caller is in now, and the memory cgroup of its pages */
static int mpp_kthread_follow(const struct mpp_identity *id,
			      struct mm_struct *mm,
			      struct mpp_identity_saved *saved)
{
	struct mem_cgroup *memcg;
	int ret = 0;

	if (!mpp_same_cgroups(id->task, current))
		ret = mpp_follow_cgroups(id->task);
	/* Its kernel memory goes where the mm's pages now go */
	memcg = get_mem_cgroup_from_mm(mm);
	if (memcg != (saved->followed_memcg ?: id->memcg)) {
		set_active_memcg(memcg);
		swap(memcg, saved->followed_memcg);
	}
	mem_cgroup_put(memcg);
	return ret;
}

/* Its own again: no mm, no memory cgroup, no task policy */
static void mpp_kthread_leave(struct mm_struct *mm,
			      struct mpp_identity_saved *saved)
{
	task_lock(current);
	current->mempolicy = NULL;
	task_unlock(current);
	kfree(saved->pol);
	set_active_memcg(saved->memcg);
	mem_cgroup_put(saved->followed_memcg);
	kthread_unuse_mm(mm);
}

const struct mpp_kind mpp_kind = {
	.name		= "kthread",
	.create		= mpp_kthread_create,
	.task		= mpp_kthread_task,
	.wake		= mpp_kthread_wake,
	.stop		= mpp_kthread_stop,
	.kill		= mpp_kthread_kill,
	.work_done	= mpp_kthread_work_done,
	.adopt		= mpp_kthread_adopt,
	.enter		= mpp_kthread_enter,
	.follow		= mpp_kthread_follow,
	.leave		= mpp_kthread_leave,
	.disown		= mpp_kthread_disown,
	.disowned	= mpp_kthread_disowned,
};

#endif /* !MPP_HAVE_VHOST_TASK */
