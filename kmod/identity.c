// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: workers that are the caller. The fault path asks the faulting
 * task, not the mm, about most limits, so every worker, of either kind,
 * takes on the identity of the thread that called:
 *
 * - its credentials (capable(), fsuid, quotas, the overcommit admin
 *   reserve): override_creds(); a user worker thread has its creator's,
 *   who may be another thread, or the same before it dropped privileges;
 * - its scheduling policy, priority, nice and clamps, reset as a fork()
 *   with SCHED_RESET_ON_FORK would, which the worker sets on itself;
 * - its I/O priority (ionice), which a thread it creates inherits and
 *   which the page-cache reads of a file-backed fault are submitted with;
 * - its fault-injection filter (make-it-fail);
 * - its protection-key rights, captured when it called.
 *
 * and what only a kernel thread needs (its mm, memory cgroup, cgroups and
 * task policy), through its kind (kthread.c). Credentials and cgroups are
 * followed: between chunks each worker takes on those the thread that
 * called has then (mpp_identity_follow()), the rest is as it was at the
 * call.
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

/**
 * mpp_identity_adopt() - make a worker not yet at work the caller's
 * @id: the caller's identity
 * @task: the worker, as its kind gives it (NULL for a user worker thread,
 *	which is the caller's process's already)
 *
 * In the caller's context, what its kind needs (a kernel thread: the
 * caller's scheduling attributes, and its cgroups where the pids
 * controller has room).
 *
 * Return: 0, -EAGAIN at a pids limit, or another errno of the attach or
 * of setting the scheduling attributes.
 */
int mpp_identity_adopt(struct mpp_identity *id, struct task_struct *task)
{
	int ret;

	/*
	 * A kernel thread takes the caller's scheduling attributes before it
	 * runs for it; a user worker thread sets them on itself as it begins
	 * (mpp_identity_enter())
	 */
	if (task) {
		ret = sched_setattr_nocheck(task, &id->sched);
		if (ret)
			return ret;
	}
	return mpp_kind.adopt ? mpp_kind.adopt(id, task) : 0;
}

/**
 * mpp_identity_disown() - a worker is done being the caller
 * @task: the worker: itself after its last fault of the call, or one the
 *	caller adopted and then could not use (NULL for a user worker thread)
 *
 * Before the call may end, for a kernel thread: back in the root cgroups,
 * so that no cgroup of the caller holds a kernel thread its freezer would
 * wait for.
 */
void mpp_identity_disown(struct task_struct *task)
{
	if (mpp_kind.disown)
		mpp_kind.disown(task);
}

/**
 * mpp_identity_enter() - a worker starts faulting as the caller
 * @id: the caller's identity
 * @mm: the caller's mm, referenced by the request
 * @place: the caller's placement
 * @saved: what to restore in mpp_identity_leave()
 *
 * Return: 0, or the errno of setting its scheduling attributes, or
 * -ENOMEM: then nothing was entered, and the worker does no work for the
 * request.
 */
int mpp_identity_enter(struct mpp_identity *id, struct mm_struct *mm,
		       const struct mpp_placement *place,
		       struct mpp_identity_saved *saved)
{
	int ret;

	/*
	 * Its scheduling attributes stay until its next call sets the next
	 * caller's; the fault-injection filter is the call's only
	 */
	ret = sched_setattr_nocheck(current, &id->sched);
	if (ret)
		return ret;
	if (mpp_kind.enter) {
		ret = mpp_kind.enter(id, mm, place, saved);
		if (ret)
			return ret;
	}
#ifdef CONFIG_FAULT_INJECTION
	current->make_it_fail = id->make_it_fail;
#endif
	/*
	 * Set by itself, with its own credentials: the caller's would not be
	 * allowed to set a root thread's. It stays until its next call sets
	 * the next caller's, as its scheduling attributes do; the set can fail
	 * only for memory for its first I/O context, when it has the default.
	 */
	set_task_ioprio(current, id->ioprio);
	/*
	 * A user worker thread has the credentials of the thread that created
	 * it, maybe for an earlier call. @id holds the reference to @id->cred
	 * for as long as the request lasts; override_creds() takes one of its
	 * own before 6.14 and none since.
	 */
	saved->followed = NULL;
	saved->cred = override_creds(id->cred);
	return 0;
}

/**
 * mpp_identity_follow() - a worker takes on what its caller changed since
 * @id: the caller's identity
 * @mm: the caller's mm
 * @saved: what mpp_identity_enter() saved
 *
 * Between chunks, the credentials (and, for a kernel thread, the cgroups)
 * of the thread that called as they are now, as that thread's own next
 * fault would have them: a VMM that drops privileges, or that an
 * administrator moves to another cgroup, while a background request runs
 * has the rest of it faulted as it is now. Once that thread has exited,
 * what it had last stays: no other thread is looked for.
 *
 * Return: 0, or the errno of joining the caller's new cgroups (-EAGAIN at
 * their pids limit): then the worker stops working for the call, which the
 * caller or the other workers finish.
 */
int mpp_identity_follow(struct mpp_identity *id, struct mm_struct *mm,
			struct mpp_identity_saved *saved)
{
	const struct cred *cred;

	if (READ_ONCE(id->task->flags) & PF_EXITING)
		return 0;
	cred = get_task_cred(id->task);
	if (cred != current_cred()) {
		revert_creds(saved->cred);
		saved->cred = override_creds(cred);
		/* Held until the next change or mpp_identity_leave() */
		swap(cred, saved->followed);
	}
	if (cred)
		put_cred(cred);
	return mpp_kind.follow ? mpp_kind.follow(id, mm, saved) : 0;
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
	if (saved->followed)
		put_cred(saved->followed);
	if (mpp_kind.leave)
		mpp_kind.leave(mm, saved);
#ifdef CONFIG_FAULT_INJECTION
	current->make_it_fail = 0;
#endif
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
