// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: workers that are the caller. A worker is a kernel thread, and
 * the fault path asks the faulting task, not the mm, about most limits, so
 * every worker takes on the identity of the thread that called:
 *
 * - its credentials (capable(), fsuid, quotas, the overcommit admin
 *   reserve): override_creds();
 * - its mm as current->mm (the overcommit user reserve of shmem and
 *   hugetlb accounting): kthread_use_mm();
 * - its memory cgroup for page cache, page tables and other kernel memory,
 *   which a kernel thread would leave to the root cgroup or not charge at
 *   all: set_active_memcg();
 * - its cgroups (cpu, cpuset, hugetlb, io, memory), attached as vhost
 *   attaches its workers, once the pids controller has checked the limit
 *   as it would for a fork(), for the time of one call: a worker goes back
 *   to the root cgroups before the call can end, because the cgroup v2
 *   freezer can freeze no kernel thread and, on 6.1, never counts again
 *   when one leaves a freezing cgroup;
 * - its scheduling policy, priority, nice and clamps, reset as a fork()
 *   with SCHED_RESET_ON_FORK would;
 * - its I/O priority (ionice), which a thread it creates inherits and
 *   which the page-cache reads of a file-backed fault are submitted with;
 * - its fault-injection filter (make-it-fail);
 * - its protection-key rights, captured when it called.
 *
 * Credentials and cgroups are followed: between chunks each worker takes on
 * those the thread that called has then (mpp_identity_follow()), the rest
 * is as it was at the call.
 *
 * What a module cannot give a kernel thread (RLIMIT_NPROC, RLIMIT_CPU, the
 * caller's rusage and autogroup) is listed in Documentation/security.rst.
 */
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/iocontext.h>
#include <linux/ioprio.h>
#include <linux/kthread.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/pkeys.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>

#include "internal.h"

#ifdef CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS
#include <asm/pkru.h>

static u32 mpp_pkru_read(void)
{
	return read_pkru();
}

static bool mpp_pkru_allows_write(u32 pkru, struct vm_area_struct *vma)
{
	return __pkru_allows_write(pkru, vma_pkey(vma));
}
#else
static u32 mpp_pkru_read(void)
{
	return 0;
}

static bool mpp_pkru_allows_write(u32 pkru, struct vm_area_struct *vma)
{
	return true;
}
#endif

/* The caller's scheduling attributes, as a thread it creates gets them */
static void mpp_sched_capture(struct sched_attr *attr)
{
	unsigned int policy = current->policy;
	int nice = task_nice(current);

	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	if (current->sched_reset_on_fork) {
		if (policy == SCHED_FIFO || policy == SCHED_RR ||
		    policy == SCHED_DEADLINE)
			policy = SCHED_NORMAL;
		nice = max(nice, 0);
	}
	attr->sched_policy = policy;
	if (policy == SCHED_FIFO || policy == SCHED_RR)
		attr->sched_priority = current->rt_priority;
	else
		attr->sched_nice = nice;
#ifdef CONFIG_UCLAMP_TASK
	attr->sched_flags |= SCHED_FLAG_UTIL_CLAMP;
	attr->sched_util_min = current->uclamp_req[UCLAMP_MIN].value;
	attr->sched_util_max = current->uclamp_req[UCLAMP_MAX].value;
#endif
}

/* The calling thread's own I/O priority, as a thread it creates gets it */
static int mpp_ioprio_capture(void)
{
	struct io_context *ioc = current->io_context;

	return ioc ? READ_ONCE(ioc->ioprio) : IOPRIO_DEFAULT;
}

/**
 * mpp_identity_init() - capture the calling thread's identity
 * @id: filled in
 * @mm: the caller's mm
 */
void mpp_identity_init(struct mpp_identity *id, struct mm_struct *mm)
{
	get_task_struct(current);
	id->task = current;
	id->cred = get_current_cred();
	id->memcg = get_mem_cgroup_from_mm(mm);
	mpp_sched_capture(&id->sched);
	id->ioprio = mpp_ioprio_capture();
#ifdef CONFIG_FAULT_INJECTION
	id->make_it_fail = current->make_it_fail;
#endif
	id->pkru = mpp_pkru_read();
}

/**
 * mpp_identity_destroy() - drop what mpp_identity_init() took
 * @id: the identity
 */
void mpp_identity_destroy(struct mpp_identity *id)
{
	mem_cgroup_put(id->memcg);
	put_cred(id->cred);
	put_task_struct(id->task);
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
 * Is there room in the caller's pids cgroups for one more task? Attaching a
 * task charges the pids controller without looking at pids.max, so ask the
 * controller as fork() does, through its own can_fork callback (which
 * charges, checks every level, and records a rejection in pids.events), and
 * give the charge back at once: the attach that follows charges for real.
 * Both callbacks read only cset->subsys[pids_cgrp_id] of the css_set they
 * are given, @caller's own, held by RCU.
 */
static int mpp_pids_check(struct task_struct *caller)
{
#ifdef CONFIG_CGROUP_PIDS
	struct cgroup_subsys_state *css;
	struct css_set *cset;
	int ret;

	rcu_read_lock();
	cset = task_css_set(caller);
	css = cset->subsys[pids_cgrp_id];
	ret = css->ss->can_fork(current, cset);
	if (!ret)
		css->ss->cancel_fork(current, cset);
	rcu_read_unlock();
	return ret;
#else
	return 0;
#endif
}

/**
 * mpp_identity_adopt() - make a new, not yet running worker the caller's
 * @id: the caller's identity
 * @task: the worker
 *
 * In the caller's context: its scheduling attributes and fault-injection
 * filter, and its cgroups, where the pids controller has room.
 *
 * Return: 0, -EAGAIN at a pids limit, or another errno of the attach.
 */
int mpp_identity_adopt(struct mpp_identity *id, struct task_struct *task)
{
	int ret;

	ret = sched_setattr_nocheck(task, &id->sched);
	if (ret)
		return ret;
#ifdef CONFIG_FAULT_INJECTION
	task->make_it_fail = id->make_it_fail;
#endif
	/* A user worker thread is in its process's cgroups, and moves with it */
	if (MPP_USER_WORKERS || mpp_same_cgroups(current, task))
		return 0;
	ret = mpp_pids_check(current);
	if (ret)
		return ret;
	return cgroup_attach_task_all(current, task);
}

/**
 * mpp_identity_disown() - a worker is done being the caller
 * @task: the worker: itself after its last fault of the call, or one the
 *	caller adopted and then could not use
 *
 * Before the call may end: back to the root cgroups, where kernel threads
 * are created, so that no cgroup of the caller holds a kernel thread its
 * freezer would wait for, and without the call's fault-injection filter.
 * Its scheduling attributes stay until its next call sets the next
 * caller's.
 */
void mpp_identity_disown(struct task_struct *task)
{
#ifdef CONFIG_FAULT_INJECTION
	/*
	 * The filter is the call's: a thread that stays, or a user worker
	 * thread created while its caller's was set, fails no allocation of
	 * its idle life or of a later call
	 */
	task->make_it_fail = 0;
#endif
	if (MPP_USER_WORKERS || mpp_same_cgroups(&init_task, task))
		return;
	/* Out of memory it stays; mpp_identity_disowned() then says so */
	cgroup_attach_task_all(&init_task, task);
}

/**
 * mpp_identity_disowned() - is the calling worker in the root cgroups?
 *
 * Return: true when mpp_identity_disown() left no cgroup of a caller.
 */
bool mpp_identity_disowned(void)
{
	return MPP_USER_WORKERS || mpp_same_cgroups(&init_task, current);
}

/**
 * mpp_identity_enter() - a worker starts faulting as the caller
 * @id: the caller's identity
 * @mm: the caller's mm, referenced by the request
 * @saved: what to restore in mpp_identity_leave()
 */
void mpp_identity_enter(struct mpp_identity *id, struct mm_struct *mm,
			struct mpp_identity_saved *saved)
{
	/*
	 * Set by itself, with its own credentials: the caller's would not be
	 * allowed to set a root thread's. It stays until its next call sets
	 * the next caller's, as its scheduling attributes do; the set can fail
	 * only for memory for its first I/O context, when it has the default.
	 */
	set_task_ioprio(current, id->ioprio);
	saved->followed = NULL;
	/*
	 * A user worker thread has the caller's mm and memory cgroup already,
	 * and the credentials of the thread that created it, maybe for an
	 * earlier call
	 */
	saved->cred = override_creds(id->cred);
	if (MPP_USER_WORKERS)
		return;
	kthread_use_mm(mm);
	saved->memcg = set_active_memcg(id->memcg);
}

/*
 * Into the cgroups @caller is in now, where the pids controller has room,
 * with its CPUs of those the worker had: a cpuset attach resets them.
 */
static int mpp_follow_cgroups(struct task_struct *caller)
{
	cpumask_var_t cpus;
	int ret;

	if (!zalloc_cpumask_var(&cpus, GFP_KERNEL))
		return -ENOMEM;
	cpumask_copy(cpus, current->cpus_ptr);
	ret = mpp_pids_check(caller);
	if (!ret)
		ret = cgroup_attach_task_all(caller, current);
	if (!ret && cpumask_and(cpus, cpus, caller->cpus_ptr))
		set_cpus_allowed_ptr(current, cpus);
	free_cpumask_var(cpus);
	return ret;
}

/**
 * mpp_identity_follow() - a worker takes on what its caller changed since
 * @id: the caller's identity
 * @mm: the caller's mm
 * @saved: what mpp_identity_enter() saved
 *
 * Between chunks, the credentials and cgroups of the thread that called as
 * they are now, as that thread's own next fault would have them: a VMM
 * that drops privileges, or that an administrator moves to another cgroup,
 * while a background request runs has the rest of it faulted as it is now.
 *
 * Return: 0, or the errno of joining the caller's new cgroups (-EAGAIN at
 * their pids limit): then the worker stops working for the call, which the
 * caller or the other workers finish.
 */
int mpp_identity_follow(struct mpp_identity *id, struct mm_struct *mm,
			struct mpp_identity_saved *saved)
{
	const struct cred *cred = get_task_cred(id->task);
	struct mem_cgroup *memcg;
	int ret = 0;

	if (cred != current_cred()) {
		revert_creds(saved->cred);
		saved->cred = override_creds(cred);
	}
	put_cred(cred);

	/* A user worker thread moves with its process by itself */
	if (MPP_USER_WORKERS)
		return 0;
	if (!mpp_same_cgroups(id->task, current))
		ret = mpp_follow_cgroups(id->task);
	/* Its kernel memory goes where the mm's pages now go */
	memcg = get_mem_cgroup_from_mm(mm);
	if (memcg != (saved->followed ?: id->memcg)) {
		set_active_memcg(memcg);
		swap(memcg, saved->followed);
	}
	mem_cgroup_put(memcg);
	return ret;
}

/**
 * mpp_identity_leave() - a worker is itself again
 * @mm: the mm given to mpp_identity_enter()
 * @saved: what it saved
 */
void mpp_identity_leave(struct mm_struct *mm,
			struct mpp_identity_saved *saved)
{
	revert_creds(saved->cred);
	if (MPP_USER_WORKERS)
		return;
	set_active_memcg(saved->memcg);
	mem_cgroup_put(saved->followed);
	kthread_unuse_mm(mm);
}

/**
 * mpp_identity_may_write() - do the caller's protection keys allow writes?
 * @id: the caller's identity
 * @vma: a mapping of the caller's mm
 *
 * What arch_vma_access_permitted() checks for the caller's own fault, with
 * the rights it had when it called (a worker's own PKRU is not the caller's).
 *
 * Return: true when a write to @vma is allowed.
 */
bool mpp_identity_may_write(const struct mpp_identity *id,
			    struct vm_area_struct *vma)
{
	return mpp_pkru_allows_write(id->pkru, vma);
}
