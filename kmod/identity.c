// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: workers that are the caller. A worker is a thread of the
 * caller's process (vtask.c): its mm, cgroups, rlimits and task memory
 * policy are the process's or its creator's already. The fault path asks
 * the faulting task about a few more things, so every worker takes on
 * those of the thread that called:
 *
 * - its credentials (capable(), fsuid, quotas, the overcommit admin
 *   reserve): override_creds(); a worker has its creator's, who may be
 *   another thread, or the same before it dropped privileges;
 * - its scheduling policy, priority, nice and the clamps it set, reset as
 *   a fork() with SCHED_RESET_ON_FORK would, which the worker sets on
 *   itself;
 * - its I/O priority (ionice), which a thread it creates inherits and
 *   which the page-cache reads of a file-backed fault are submitted with;
 * - its fault-injection filter (make-it-fail);
 * - its protection-key rights, captured when it called.
 *
 * Credentials are followed: between chunks each worker takes on those the
 * thread that called has then (mpp_identity_follow()); the rest is as it
 * was at the call.
 */
#include <linux/cred.h>
#include <linux/iocontext.h>
#include <linux/ioprio.h>
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

/*
 * Elsewhere the caller's rights to each key are not read (arm64's POE,
 * powerpc's keys): a mapping under any key but the default is refused,
 * where madvise() would check the caller's rights to it.
 */
static bool mpp_pkru_allows_write(u32 pkru, struct vm_area_struct *vma)
{
	return !vma_pkey(vma);
}
#endif

#ifdef CONFIG_UCLAMP_TASK
/*
 * A utilization clamp the calling thread set itself, or -1: the default,
 * which a thread follows as the system's changes (the real-time one by
 * sysctl), and which a fork() with SCHED_RESET_ON_FORK gives. Setting a
 * clamp for a worker makes it the worker's own, and turns clamping on for
 * the whole system (sched_uclamp_used) where nobody used it: only those
 * the caller set are set.
 */
static u32 mpp_uclamp_capture(enum uclamp_id clamp_id)
{
	const struct uclamp_se *uc_se = &current->uclamp_req[clamp_id];

	if (current->sched_reset_on_fork || !uc_se->user_defined)
		return (u32)-1;
	return uc_se->value;
}

/*
 * In the worker: sets the clamps its caller set, and gives back to the
 * default those an earlier caller set and this one did not
 */
static void mpp_uclamp_follow(struct sched_attr *attr)
{
	if (attr->sched_util_min != (u32)-1 ||
	    current->uclamp_req[UCLAMP_MIN].user_defined)
		attr->sched_flags |= SCHED_FLAG_UTIL_CLAMP_MIN;
	if (attr->sched_util_max != (u32)-1 ||
	    current->uclamp_req[UCLAMP_MAX].user_defined)
		attr->sched_flags |= SCHED_FLAG_UTIL_CLAMP_MAX;
}
#else
static void mpp_uclamp_follow(struct sched_attr *attr)
{
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
	attr->sched_util_min = mpp_uclamp_capture(UCLAMP_MIN);
	attr->sched_util_max = mpp_uclamp_capture(UCLAMP_MAX);
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
 */
void mpp_identity_init(struct mpp_identity *id)
{
	get_task_struct(current);
	id->task = current;
	id->cred = get_current_cred();
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
	put_cred(id->cred);
	put_task_struct(id->task);
}

/**
 * mpp_identity_enter() - a worker starts faulting as the caller
 * @id: the caller's identity
 * @saved: what to restore in mpp_identity_leave()
 *
 * Return: 0, or the errno of setting its scheduling attributes: then
 * nothing was entered, and the worker does no work for the request.
 */
int mpp_identity_enter(struct mpp_identity *id,
		       struct mpp_identity_saved *saved)
{
	struct sched_attr attr = id->sched;
	int ret;

	/*
	 * Its scheduling attributes stay until its next call sets the next
	 * caller's; the fault-injection filter is the call's only
	 */
	mpp_uclamp_follow(&attr);
	ret = sched_setattr_nocheck(current, &attr);
	if (ret)
		return ret;
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
	 * A worker has the credentials of the thread that created it, maybe
	 * for an earlier call. @id holds the reference to @id->cred
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
 * @saved: what mpp_identity_enter() saved
 *
 * Between chunks, the credentials of the thread that called as they are
 * now, as that thread's own next fault would have them: a VMM that drops
 * privileges while a background request runs has the rest of it faulted
 * as it is now. Once that thread has exited, what it had last stays: no
 * other thread is looked for.
 */
void mpp_identity_follow(struct mpp_identity *id,
			 struct mpp_identity_saved *saved)
{
	const struct cred *cred;

	if (READ_ONCE(id->task->flags) & PF_EXITING)
		return;
	cred = get_task_cred(id->task);
	if (cred != current_cred()) {
		revert_creds(saved->cred);
		saved->cred = override_creds(cred);
		/* Held until the next change or mpp_identity_leave() */
		swap(cred, saved->followed);
	}
	if (cred)
		put_cred(cred);
}

/**
 * mpp_identity_leave() - a worker is itself again
 * @saved: what mpp_identity_enter() saved
 */
void mpp_identity_leave(struct mpp_identity_saved *saved)
{
	revert_creds(saved->cred);
	if (saved->followed)
		put_cred(saved->followed);
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
