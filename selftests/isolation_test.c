// SPDX-License-Identifier: GPL-2.0
/*
 * The workers belong to the caller as its own threads would: CPU time,
 * memory and hugetlb charges and cpuset limits land in the caller's cgroup,
 * and locking is mlock2()'s, with its limits, for an unprivileged caller too.
 */
#define _GNU_SOURCE
#include <numaif.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

#define CGROOT	"/sys/fs/cgroup"

static int cg_write(const char *cg, const char *file, const char *val)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -errno;
	close(fd);
	return ret;
}

/* A "key value" line of a cgroup file, or the file's first number */
static long cg_read(const char *cg, const char *file, const char *key)
{
	char path[256], k[64];
	long val, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!key) {
		if (fscanf(f, "%ld", &val) == 1)
			ret = val;
	} else {
		while (fscanf(f, "%63s %ld", k, &val) == 2)
			if (!strcmp(k, key)) {
				ret = val;
				break;
			}
	}
	fclose(f);
	return ret;
}

FIXTURE(cg)
{
	char path[128];
	int fd;
};

/* A fresh cgroup with this test process in it */
FIXTURE_SETUP(cg)
{
	static const char *const ctrls[] = {
		"+cpu", "+cpuset", "+memory", "+hugetlb", "+pids",
	};
	char pid[32];

	if (access(CGROOT "/cgroup.subtree_control", W_OK))
		SKIP(return, "no writable cgroup2 at " CGROOT);
	for (unsigned int i = 0; i < sizeof(ctrls) / sizeof(ctrls[0]); i++)
		cg_write(CGROOT, "cgroup.subtree_control", ctrls[i]);
	snprintf(self->path, sizeof(self->path), CGROOT "/mpp-%d", getpid());
	ASSERT_EQ(0, mkdir(self->path, 0755));
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, cg_write(self->path, "cgroup.procs", pid));
	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(cg)
{
	char pid[32];

	if (_metadata->skip)
		return;
	close(self->fd);
	snprintf(pid, sizeof(pid), "%d", getpid());
	cg_write(CGROOT, "cgroup.procs", pid);
	rmdir(self->path);
}

#define RETURN_IF_SKIPPED() do { if (_metadata->skip) return; } while (0)

static int mbind_both(void *p, size_t len)
{
	unsigned long mask = 3;

	return mbind(p, len, MPOL_BIND, &mask, 8 * sizeof(mask), 0);
}

/* The workers' CPU time shows up in the caller's cgroup */
TEST_F(cg, cpu_time_in_callers_cgroup)
{
	size_t len = 256 * MiB;
	struct memprepop_populate req;
	struct rusage r0, r1;
	long before, after, own_usec;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, mbind_both(p, len));
	before = cg_read(self->path, "cpu.stat", "usage_usec");
	getrusage(RUSAGE_SELF, &r0);
	ASSERT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	getrusage(RUSAGE_SELF, &r1);
	after = cg_read(self->path, "cpu.stat", "usage_usec");
	own_usec = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec +
		    r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000000L +
		   r1.ru_utime.tv_usec - r0.ru_utime.tv_usec +
		   r1.ru_stime.tv_usec - r0.ru_stime.tv_usec;
	TH_LOG("%u workers, %llu us; cgroup +%ld us, caller itself %ld us",
	       req.workers, (unsigned long long)req.nsecs / 1000,
	       after - before, own_usec);
	EXPECT_LE(2, req.workers);
	/* The workers were busy for most of the call, on the cgroup's clock */
	EXPECT_LT((long)(req.nsecs / 1000) / 2, after - before - own_usec);
	munmap(p, len);
}

static int write_oom_score_adj(const char *val)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -errno;
	close(fd);
	return ret;
}

/* Runs @populate in a child of this cgroup; its exit status or -signal */
static int in_child(int (*populate)(char *p, size_t len, void *arg),
		    size_t len, bool unkillable, void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1000;
	if (!pid) {
		char *p = map_anon(len);
		unsigned long mask = 3;

		if (!p || mbind(p, len, MPOL_BIND, &mask, 8 * sizeof(mask), 0))
			_exit(100);
		/* The parent is unkillable: the OOM killer's only victim */
		if (!unkillable && write_oom_score_adj("0"))
			_exit(101);
		_exit(-populate(p, len, arg));
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1000;
	return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

static int by_madvise(char *p, size_t len, void *arg)
{
	return madvise_populate_write(p, len);
}

static int by_ioctl(char *p, size_t len, void *arg)
{
	struct memprepop_populate req;
	int ret = ioc_populate(*(int *)arg, p, len, 0, &req);

	/* What it populated fits under memory.max */
	if (ret == -ENOMEM && req.populated > 32 * MiB)
		return -EIO;
	return ret;
}

/*
 * memory.max below the range: what madvise does. The memcg OOM killer kills
 * the caller (never a worker), or, with no killable task, ENOMEM.
 */
TEST_F(cg, memory_max_like_madvise)
{
	size_t len = 64 * MiB;
	long kills, hits;

	RETURN_IF_SKIPPED();
	if (cg_write(self->path, "memory.max", "33554432"))
		SKIP(return, "no memory controller");
	cg_write(self->path, "memory.swap.max", "0");
	ASSERT_EQ(0, write_oom_score_adj("-1000"));

	kills = cg_read(self->path, "memory.events", "oom_kill");
	EXPECT_EQ(-SIGKILL, in_child(by_madvise, len, false, NULL));
	EXPECT_EQ(-SIGKILL, in_child(by_ioctl, len, false, &self->fd));
	EXPECT_EQ(kills + 2, cg_read(self->path, "memory.events", "oom_kill"));

	EXPECT_EQ(ENOMEM, in_child(by_madvise, len, true, NULL));
	hits = cg_read(self->path, "memory.events", "max");
	EXPECT_EQ(ENOMEM, in_child(by_ioctl, len, true, &self->fd));
	EXPECT_EQ(kills + 2, cg_read(self->path, "memory.events", "oom_kill"));
	/* The workers' charges hit this cgroup's limit, not another's */
	EXPECT_LT(hits, cg_read(self->path, "memory.events", "max"));
}

/* A hugetlb cgroup limit: EFAULT like madvise, the pages charged here */
TEST_F(cg, hugetlb_limit_enforced_and_charged)
{
	size_t len = 8 * HPAGE;
	struct memprepop_populate req;
	int want;
	char *p;

	RETURN_IF_SKIPPED();
	if (meminfo_field("HugePages_Free") < 8)
		SKIP(return, "needs 8 free 2 MiB hugetlb pages");
	if (cg_write(self->path, "hugetlb.2MB.max", "8388608"))
		SKIP(return, "no hugetlb controller");

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	want = madvise_populate_write(p, len);
	munmap(p, len);

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EFAULT, want);
	EXPECT_EQ(want, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(4 * HPAGE, req.populated);
	EXPECT_EQ(4 * HPAGE, cg_read(self->path, "hugetlb.2MB.current", NULL));
	munmap(p, len);
}

/* A cpuset of one CPU and one node keeps both workers and pages there */
TEST_F(cg, cpuset_keeps_workers_and_pages)
{
	size_t len = 64 * MiB, i, n = len / page_size();
	struct memprepop_populate req;
	void **pages;
	int *status;
	char *p;

	RETURN_IF_SKIPPED();
	if (cg_write(self->path, "cpuset.cpus", "0") ||
	    cg_write(self->path, "cpuset.mems", "0"))
		SKIP(return, "no cpuset controller");
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(1, req.workers);

	pages = malloc(n * sizeof(*pages));
	status = malloc(n * sizeof(*status));
	ASSERT_NE(NULL, pages);
	ASSERT_NE(NULL, status);
	for (i = 0; i < n; i++)
		pages[i] = p + i * page_size();
	ASSERT_EQ(0, move_pages(0, n, pages, NULL, status, 0));
	for (i = 0; i < n && status[i] == 0; i++)
		;
	EXPECT_EQ(n, i);
	free(pages);
	free(status);
	munmap(p, len);
}

/*
 * Locking as an unprivileged user holding a descriptor opened for it: the
 * lock is mlock2()'s, with RLIMIT_MEMLOCK, VmLck and smaps Locked.
 */
TEST(unprivileged_lock)
{
	int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	int status;
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rlimit rl = { 8 * MiB, 8 * MiB };
		struct memprepop_populate req;
		char *p = map_anon(16 * MiB);

		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) ||
		    setuid(65534))
			_exit(10);
		/* A uid change makes /proc/self root's: make it ours again */
		prctl(PR_SET_DUMPABLE, 1);
		/* Over the limit: mlock2 refuses, nothing is locked */
		if (mlock2(p, 16 * MiB, MLOCK_ONFAULT) != -1 || errno != ENOMEM)
			_exit(11);
		if (ioc_populate(fd, p, 16 * MiB, MEMPREPOP_F_LOCK, &req) !=
		    -EINVAL || present_pages(p, 16 * MiB))
			_exit(12);
		/* Within it: locked and accounted as mlock leaves it */
		if (mlock2(p, 4 * MiB, MLOCK_ONFAULT))
			_exit(13);
		if (ioc_populate(fd, p, 4 * MiB, MEMPREPOP_F_LOCK, &req) ||
		    req.populated != 4 * MiB)
			_exit(14);
		if (smaps_field_kb(p, "Locked") != 4096 ||
		    present_pages(p, 4 * MiB) != 4 * MiB / page_size())
			_exit(15);
		if (munlock(p, 4 * MiB) || smaps_field_kb(p, "Locked") != 0)
			_exit(16);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

/* VmLck counts what F_LOCK populated, and munmap gives it back */
TEST(vmlck_accounting)
{
	size_t len = 8 * MiB;
	struct memprepop_populate req;
	long vmlck0;
	char *p = map_anon(len);
	int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, fd);
	vmlck0 = status_field_kb("VmLck");
	ASSERT_LE(0, vmlck0);
	ASSERT_EQ(0, mlock2(p, len, MLOCK_ONFAULT));
	ASSERT_EQ(0, ioc_populate(fd, p, len, MEMPREPOP_F_LOCK, &req));
	EXPECT_EQ((long)(len / KiB), smaps_field_kb(p, "Locked"));
	EXPECT_EQ(vmlck0 + (long)(len / KiB), status_field_kb("VmLck"));
	ASSERT_EQ(0, munmap(p, len));
	EXPECT_EQ(vmlck0, status_field_kb("VmLck"));
	close(fd);
}

TEST_HARNESS_MAIN
