/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup v2 for the tests: a fresh cgroup with the test process in it, and
 * its files read and written as an operator would.
 */
#ifndef MEMPREPOP_CGROUP_HELPERS_H
#define MEMPREPOP_CGROUP_HELPERS_H

#include <sys/stat.h>

#include "memprepop_test.h"

#define CGROOT	"/sys/fs/cgroup"

static inline int cg_write(const char *cg, const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return write_file(path, val) ? -errno : 0;
}

/* A "key value" line of a cgroup file, or the file's first number */
static inline long cg_read(const char *cg, const char *file, const char *key)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return key ? proc_field(path, key) : read_long(path);
}

/*
 * Makes @path (under CGROOT, named for this process) with the controllers
 * the tests use and moves this process into it: 0, or -errno (no writable
 * cgroup2: the caller skips).
 */
static inline int cg_enter(char *path, size_t size)
{
	static const char *const ctrls[] = {
		"+cpu", "+cpuset", "+memory", "+hugetlb", "+pids",
	};
	char pid[32];

	if (access(CGROOT "/cgroup.subtree_control", W_OK))
		return -ENOENT;
	for (unsigned int i = 0; i < sizeof(ctrls) / sizeof(ctrls[0]); i++)
		cg_write(CGROOT, "cgroup.subtree_control", ctrls[i]);
	snprintf(path, size, CGROOT "/mpp-%d", getpid());
	if (mkdir(path, 0755))
		return -errno;
	snprintf(pid, sizeof(pid), "%d", getpid());
	return cg_write(path, "cgroup.procs", pid);
}

/* Back to the root cgroup, and @path removed */
static inline void cg_leave(const char *path)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	cg_write(CGROOT, "cgroup.procs", pid);
	rmdir(path);
}

#endif /* MEMPREPOP_CGROUP_HELPERS_H */
