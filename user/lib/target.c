// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: whose memory a request populates. The calling process's,
 * with madvise(2); or another process's, named by a pidfd, with
 * process_madvise(2) and MADV_POPULATE_WRITE, which a kernel takes for
 * another process only with the series of contrib/linux (under the right
 * to attach to it, PTRACE_MODE_ATTACH_REALCREDS, as process_vm_writev(2)).
 *
 * The plan asks where a range's pages go. Its own: get_mempolicy(2) with
 * MPOL_F_ADDR. Another's: the policy /proc/PID/numa_maps shows for the
 * mapping, read for each request; a mapping without one is placed by the
 * faulting thread's task policy, which is the caller's, as madvise by the
 * caller's own threads would be. numa_maps shows the process's own task
 * policy for a mapping without one; the task policy is what it shows for
 * [vdso], which nobody binds, and a mapping showing the same is taken as
 * without one. The limits of the remote plan: a mapping bound exactly as
 * the target's task policy is planned by the caller's policy, and a shared
 * memory file's policy is seen at the mapping's start only (the kernel
 * still places every page by the mapping's and the file's policy).
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

#ifndef __NR_process_madvise
#define __NR_process_madvise	440
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal	424
#endif

/* A mapping of another process and its policy, from numa_maps */
struct mpl_vma {
	uint64_t start, end;
	int mode;			/* MPOL_*; MPOL_DEFAULT: none */
	struct bitmask *nodes;		/* NULL without nodes */
};

static long mpl_process_madvise(int pidfd, void *addr, size_t len)
{
	struct iovec iov = { addr, len };

	return syscall(__NR_process_madvise, pidfd, &iov, 1,
		       MADV_POPULATE_WRITE, 0);
}

/* The pid a pidfd refers to, from its fdinfo: > 0, or -errno */
static pid_t mpl_pidfd_pid(int pidfd)
{
	char path[64], line[128];
	pid_t pid = -ESRCH;
	FILE *f;

	/* The calling thread's descriptors, which may be its own */
	snprintf(path, sizeof(path), "/proc/thread-self/fdinfo/%d", pidfd);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -EBADF : -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %d", &pid) == 1)
			break;
	fclose(f);
	/*
	 * -1: the process has exited; 0: it is outside our pid namespace,
	 * where /proc cannot show it to us
	 */
	return pid > 0 ? pid : pid == -1 ? -ESRCH : pid == 0 ? -EPERM : -EBADF;
}

/*
 * Can this kernel populate the target, may we? An empty vector is
 * checked as any other (the process, the right to attach, the advice for
 * another process) and then populates nothing.
 */
static int mpl_target_probe(int pidfd)
{
	if (!mpl_process_madvise(pidfd, NULL, 0))
		return 0;
	switch (errno) {
	case EINVAL:	/* the advice is not taken for another process */
	case ENOSYS:	/* no process_madvise(), before Linux 5.10 */
		return -EOPNOTSUPP;
	case EACCES:
		return -EPERM;
	default:
		return -errno;
	}
}

/**
 * mpl_target_open() - another process, for a context's requests
 * @t: filled
 * @pidfd: the process, from pidfd_open(2) or clone(2); a duplicate is kept
 *
 * Return: 0, -EBADF (not a pidfd), -ESRCH (it has exited), -EPERM (no
 * right to attach to it), -EOPNOTSUPP (the kernel cannot populate another
 * process), -EMFILE, -ENOMEM.
 */
int mpl_target_open(struct mpl_target *t, int pidfd)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->pidfd = -1;
	t->pid = mpl_pidfd_pid(pidfd);
	if (t->pid < 0)
		return t->pid;
	ret = mpl_target_probe(pidfd);
	if (ret)
		return ret;
	t->pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 0);
	return t->pidfd < 0 ? -errno : 0;
}

static void mpl_target_forget(struct mpl_target *t)
{
	size_t i;

	for (i = 0; i < t->nr_vmas; i++)
		if (t->vmas[i].nodes)
			numa_bitmask_free(t->vmas[i].nodes);
	free(t->vmas);
	t->vmas = NULL;
	t->nr_vmas = 0;
}

/* Undoes mpl_target_open(); nothing for the calling process */
void mpl_target_close(struct mpl_target *t)
{
	mpl_target_forget(t);
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

/**
 * mpl_target_populate() - populate [addr, addr + len) of the target
 * @t: the target
 * @addr: page-aligned, in the target's address space
 * @len: bytes
 *
 * Return: 0, or the -errno of madvise(MADV_POPULATE_WRITE) by the target
 * itself over the range; -ESRCH once another process has exited.
 */
int mpl_target_populate(const struct mpl_target *t, void *addr, size_t len)
{
	long ret;

	if (t->pidfd < 0)
		return madvise(addr, len, MADV_POPULATE_WRITE) ? -errno : 0;
	ret = mpl_process_madvise(t->pidfd, addr, len);
	if (ret < 0)
		return -errno;
	/* One vector is advised whole or fails: never short */
	return (size_t)ret == len ? 0 : -EFAULT;
}

/* "0-2,5" into @nodes: false when it is not a node list */
static bool mpl_parse_nodes(const char *s, struct bitmask *nodes)
{
	char *end;

	for (;;) {
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			return false;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s || b < a)
				return false;
		}
		for (; a <= b && a < nodes->size; a++)
			numa_bitmask_setbit(nodes, a);
		if (*end != ',')
			return true;
		s = end + 1;
	}
}

/*
 * The policy of a numa_maps line after its address, as mpol_to_str()
 * writes it: a mode, maybe "=" and flags, maybe ":" and nodes.
 */
static int mpl_parse_policy(const char *s, struct mpl_vma *vma)
{
	static const struct {
		const char *name;
		int mode;
	} modes[] = {
		/* Names with a space first: they start as others do */
		{ "weighted interleave", MPOL_WEIGHTED_INTERLEAVE },
		{ "prefer (many)", MPOL_PREFERRED_MANY },
		{ "default", MPOL_DEFAULT },
		{ "prefer", MPOL_PREFERRED },
		{ "bind", MPOL_BIND },
		{ "interleave", MPOL_INTERLEAVE },
		{ "local", MPOL_LOCAL },
	};
	const char *colon;
	size_t i, n;

	/*
	 * The kernel writes the policy into 64 bytes: one of 63 characters
	 * may have lost the end of its node list. Taken as none.
	 */
	if (strcspn(s, " \n") >= 63)
		return 0;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		n = strlen(modes[i].name);
		if (!strncmp(s, modes[i].name, n) &&
		    (s[n] == ' ' || s[n] == '=' || s[n] == ':' || !s[n] ||
		     s[n] == '\n'))
			break;
	}
	if (i == sizeof(modes) / sizeof(modes[0]))
		return 0;	/* a mode of a later kernel: as none */
	vma->mode = modes[i].mode;
	s += n;
	colon = strpbrk(s, ": \n");
	if (!colon || *colon != ':')
		return 0;
	vma->nodes = numa_allocate_nodemask();
	if (!vma->nodes)
		return -ENOMEM;
	if (!mpl_parse_nodes(colon + 1, vma->nodes))
		vma->mode = MPOL_DEFAULT;
	return 0;
}

/* Appends [start, end) with the policy of its numa_maps line, if found */
static int mpl_add_vma(struct mpl_target *t, size_t *cap, uint64_t start,
		       uint64_t end, const char *policy)
{
	struct mpl_vma *vma;

	if (t->nr_vmas == *cap) {
		size_t n = *cap ? 2 * *cap : 64;
		struct mpl_vma *v = realloc(t->vmas, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->vmas = v;
		*cap = n;
	}
	vma = &t->vmas[t->nr_vmas++];
	memset(vma, 0, sizeof(*vma));
	vma->start = start;
	vma->end = end;
	vma->mode = MPOL_DEFAULT;
	return policy ? mpl_parse_policy(policy, vma) : 0;
}

/* Mappings that show the task's policy, as @task does, have none */
static void mpl_drop_task_policy(struct mpl_target *t,
				 const struct mpl_vma *task)
{
	size_t i;

	if (task->mode == MPOL_DEFAULT)
		return;
	for (i = 0; i < t->nr_vmas; i++) {
		struct mpl_vma *v = &t->vmas[i];

		if (v == task || v->mode != task->mode ||
		    !v->nodes != !task->nodes ||
		    (v->nodes && !numa_bitmask_equal(v->nodes, task->nodes)))
			continue;
		if (v->nodes)
			numa_bitmask_free(v->nodes);
		v->nodes = NULL;
		v->mode = MPOL_DEFAULT;
	}
}

static FILE *mpl_proc_open(pid_t pid, const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	return fopen(path, "re");
}

/*
 * Reads the mappings' policies: /proc/PID/maps for where each mapping
 * ends, numa_maps (the same mappings, in the same order, by start) for
 * its policy. A mapping that changed between the two reads is taken
 * without a policy.
 */
static int mpl_target_read(struct mpl_target *t)
{
	FILE *maps = mpl_proc_open(t->pid, "maps");
	FILE *numa = mpl_proc_open(t->pid, "numa_maps");
	char *mline = NULL, *nline = NULL;
	size_t mlen = 0, nlen = 0, cap = 0;
	unsigned long long nstart = 0;
	size_t vdso = (size_t)-1;
	bool have_numa = false;
	int ret = 0;

	if (!maps) {
		ret = errno == ENOENT ? -ESRCH : -errno;
		goto out;
	}
	while (!ret && getline(&mline, &mlen, maps) > 0) {
		unsigned long long start, end;
		const char *policy = NULL;
		int at = 0;

		if (sscanf(mline, "%llx-%llx", &start, &end) != 2)
			continue;
		/* numa_maps: lines up to this start, one with it */
		while (numa && (!have_numa || nstart < start)) {
			if (getline(&nline, &nlen, numa) <= 0) {
				fclose(numa);
				numa = NULL;
				break;
			}
			have_numa = sscanf(nline, "%llx %n", &nstart, &at) == 1;
		}
		if (numa && have_numa && nstart == start) {
			sscanf(nline, "%llx %n", &nstart, &at);
			policy = nline + at;
		}
		ret = mpl_add_vma(t, &cap, start, end, policy);
		if (!ret && strstr(mline, " [vdso]"))
			vdso = t->nr_vmas - 1;
	}
	if (!ret && vdso != (size_t)-1)
		mpl_drop_task_policy(t, &t->vmas[vdso]);
out:
	free(mline);
	free(nline);
	if (maps)
		fclose(maps);
	if (numa)
		fclose(numa);
	return ret;
}

/*
 * Is the process the pidfd names still there: 0, or -ESRCH. Signal 0
 * checks; a caller that may attach but not signal it (another user's,
 * with CAP_SYS_PTRACE) is told EPERM, which says it is there.
 */
static int mpl_target_alive(const struct mpl_target *t)
{
	if (!syscall(__NR_pidfd_send_signal, t->pidfd, 0, NULL, 0))
		return 0;
	return errno == ESRCH ? -ESRCH : 0;
}

/**
 * mpl_target_prepare() - what the plan of a request needs of the target
 * @t: the target
 *
 * For another process, its mappings' policies as they are now; then
 * whether it is still the process the pidfd names (its pid not reused
 * meanwhile).
 *
 * Return: 0, -ESRCH when it has exited, -EPERM when its /proc files may
 * not be read, -ENOMEM, or another -errno of reading them.
 */
int mpl_target_prepare(struct mpl_target *t)
{
	int ret;

	if (t->pidfd < 0)
		return 0;
	mpl_target_forget(t);
	ret = mpl_target_read(t);
	/*
	 * Read from /proc/PID: from the process the pidfd names only if it
	 * is still there (the pid not reused meanwhile); gone, whatever the
	 * read said, it is ESRCH. Another user's process that took the pid
	 * would have refused the read: EPERM, as for attaching.
	 */
	if (mpl_target_alive(t))
		ret = -ESRCH;
	else if (ret == -EACCES)
		ret = -EPERM;
	if (ret)
		mpl_target_forget(t);
	return ret;
}

/**
 * mpl_target_policy() - the policy of the target's mapping at @addr
 * @t: the target, prepared
 * @addr: an address of it
 * @mode: set to its MPOL_* mode, MPOL_DEFAULT for none
 * @nodes: set to its nodes, when it has some
 *
 * Return: 0, or -EFAULT where nothing is mapped.
 */
int mpl_target_policy(const struct mpl_target *t, const void *addr,
		      int *mode, struct bitmask *nodes)
{
	uint64_t a = (uintptr_t)addr;
	size_t lo = 0, hi = t->nr_vmas;

	if (t->pidfd < 0)
		return get_mempolicy(mode, nodes->maskp, nodes->size + 1,
				     (void *)addr, MPOL_F_ADDR) ? -errno : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->vmas[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->nr_vmas || t->vmas[lo].start > a)
		return -EFAULT;
	*mode = t->vmas[lo].mode;
	numa_bitmask_clearall(nodes);
	if (t->vmas[lo].nodes)
		copy_bitmask_to_bitmask(t->vmas[lo].nodes, nodes);
	return 0;
}
