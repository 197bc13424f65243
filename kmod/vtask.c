// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: workers as user worker threads of the calling process
 * (vhost_task: 6.11 and later, with CONFIG_VHOST_TASK, as
 * probe/vhost_task.c finds), the way vhost's workers are its owner's
 * threads. The module builds only where it finds them: on older kernels
 * libmemprepop populates with threads of its own (MADV_POPULATE_WRITE),
 * as fast there (Documentation/performance.rst).
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
 * Only the vhost_task API is used: create, start, wake, stop. A vhost_task
 * cannot end by itself: its process stops it with vhost_task_stop(), which
 * waits for it (pool.c calls it only in the process's own context, for a
 * thread not at work).
 *
 * No signal is sent to one by mpp_kill(): a SIGKILL to any thread is fatal
 * to the whole process. Its waits that only a fatal signal ends end when
 * the process is killed, as a thread's inside madvise() do. Nor is its
 * RLIMIT_RTTIME checked: the kernel checks it at the return to user mode,
 * which a vhost_task never reaches (security.rst).
 */
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/vhost_task.h>
#include <linux/slab.h>

#include "internal.h"

/**
 * struct mpp_task - a user worker thread of the calling process
 * @vtsk: its vhost_task
 * @fn: what its loop calls, with @arg
 * @killed: what it calls when its process kills it, with @arg
 * @arg: the argument
 * @tgid: its process, referenced
 * @pid: its own, referenced, once it has run (set by itself)
 */
struct mpp_task {
	struct vhost_task *vtsk;
	bool (*fn)(void *arg);
	void (*killed)(void *arg);
	void *arg;
	struct pid *tgid;
	struct pid *pid;
};

/* In the thread, the first time it runs vhost's loop or is killed */
static void mpp_vtask_found(struct mpp_task *vt)
{
	if (unlikely(!vt->pid))
		vt->pid = get_pid(task_pid(current));
}

/* Called by vhost's loop, in TASK_INTERRUPTIBLE: false to sleep in it */
static bool mpp_vtask_fn(void *data)
{
	struct mpp_task *vt = data;

	mpp_vtask_found(vt);
	return vt->fn(vt->arg);
}

/* Its process got a fatal signal: it exits when this returns */
static void mpp_vtask_killed(void *data)
{
	struct mpp_task *vt = data;

	mpp_vtask_found(vt);
	vt->killed(vt->arg);
}

/*
 * vhost_task_stop() returns once the thread is on its way out, before it
 * has left its process's thread list, which unshare() and exec count: its
 * process waits for that too, killably, so that once close() returns it
 * has no thread of the file. Not beyond MPP_UNLIST_MS: a thread someone
 * ptraces stays listed until its tracer reaps it, which is not the
 * process's to wait for (nor does pthread_join() wait for it). A thread
 * that never ran has no pid here and is not waited for. In the file's
 * release, for a process gone, no thread is waited for.
 */
static void mpp_vtask_wait_unlisted(struct mpp_task *vt)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(MPP_UNLIST_MS);

	if (!vt->pid || vt->tgid != task_tgid(current))
		return;
	while (pid_has_task(vt->pid, PIDTYPE_PID) &&
	       !fatal_signal_pending(current) && time_before(jiffies, deadline))
		usleep_range_state(20, 100, TASK_KILLABLE);
}

/**
 * mpp_vtask_stop() - stop a worker thread and wait until it is gone
 * @vt: the thread, which is freed
 *
 * In its process's own context (its call, the file's release, its exit),
 * or in the release of a file its process left behind.
 */
void mpp_vtask_stop(struct mpp_task *vt)
{
	vhost_task_stop(vt->vtsk);
	/* Its pid, set by itself, is ordered by the stop, which waited */
	mpp_vtask_wait_unlisted(vt);
	put_pid(vt->pid);
	put_pid(vt->tgid);
	kfree(vt);
}

/**
 * mpp_vtask_create() - a user worker thread of the caller's process
 * @fn: what its loop calls
 * @killed: what it calls when its process kills it
 * @arg: their argument
 * @nid: its node, for its name (it is placed by workers.c)
 * @index: its index there, for its name
 *
 * In the caller's context. It is started, idle, when this returns. The
 * pids controller and RLIMIT_NPROC refuse it as they refuse a
 * pthread_create().
 *
 * Return: the task, or an ERR_PTR().
 */
struct mpp_task *mpp_vtask_create(bool (*fn)(void *arg),
				  void (*killed)(void *arg), void *arg, int nid,
				  unsigned int index)
{
	char name[TASK_COMM_LEN];
	struct vhost_task *vtsk;
	struct mpp_task *vt;

	vt = kzalloc(sizeof(*vt), GFP_KERNEL_ACCOUNT);
	if (!vt)
		return ERR_PTR(-ENOMEM);
	vt->fn = fn;
	vt->killed = killed;
	vt->arg = arg;
	vt->tgid = get_pid(task_tgid(current));
	snprintf(name, sizeof(name), "memprepop/%d:%u", nid, index);
	vtsk = vhost_task_create(mpp_vtask_fn, mpp_vtask_killed, vt, name);
	/*
	 * A refused fork (pids.max, RLIMIT_NPROC) is an ERR_PTR() since
	 * commit cb380909ae3b ("vhost: return task creation error instead of
	 * NULL"), which 6.12's later stable releases have too, and was NULL
	 * before it (6.11, the first 6.12 releases).
	 */
	if (IS_ERR_OR_NULL(vtsk)) {
		put_pid(vt->tgid);
		kfree(vt);
		return vtsk ? ERR_CAST(vtsk) : ERR_PTR(-EAGAIN);
	}
	vt->vtsk = vtsk;
	vhost_task_start(vtsk);
	return vt;
}

/**
 * mpp_vtask_wake() - wake a worker thread to call its function
 * @vt: the thread
 */
void mpp_vtask_wake(struct mpp_task *vt)
{
	vhost_task_wake(vt->vtsk);
}
