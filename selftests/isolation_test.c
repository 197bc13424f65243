// SPDX-License-Identifier: GPL-2.0
/*
 * The workers belong to the caller as its own threads would: CPU time,
 * memory and hugetlb charges and cpuset limits land in the caller's cgroup,
 * and locking is mlock2()'s, with its limits, for an unprivileged caller too.
 */
#define _GNU_SOURCE
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "cgroup_helpers.h"
#include "worker_helpers.h"

FIXTURE(cg)
{
	char path[128];
	int fd;
};

/* A fresh cgroup with this test process in it */
FIXTURE_SETUP(cg)
{
	int ret = cg_enter(self->path, sizeof(self->path));

	if (ret == -ENOENT)
		SKIP(return, "no writable cgroup2 at " CGROOT);
	ASSERT_EQ(0, ret);
	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(cg)
{
	if (_metadata->skip)
		return;
	close(self->fd);
	cg_leave(self->path);
}

#define RETURN_IF_SKIPPED() do { if (_metadata->skip) return; } while (0)

/* utime + stime of this process, in clock ticks, from /proc/self/stat */
static long stat_ticks(void)
{
	char buf[1024], *s;
	long ut = 0, st = 0;
	int field = 2;

	if (read_file("/proc/self/stat", buf, sizeof(buf)) <= 0)
		return -1;
	s = strrchr(buf, ')');
	for (s = strtok(s + 1, " "); s; s = strtok(NULL, " ")) {
		field++;
		if (field == 14)
			ut = atol(s);
		if (field == 15)
			st = atol(s);
	}
	return ut + st;
}

/*
 * The workers' CPU time shows up in the caller's cgroup; and when they are
 * its threads, in its own getrusage() and /proc/self/stat, as its
 * pthreads' does
 */
TEST_F(cg, cpu_time_in_callers_cgroup)
{
	size_t len = 256 * MiB;
	struct memprepop_populate req;
	long before, after, own_usec, ticks0, ticks1, stat_usec;
	struct rusage r0, r1;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, bind_both(p, len));
	before = cg_read(self->path, "cpu.stat", "usage_usec");
	getrusage(RUSAGE_SELF, &r0);
	ticks0 = stat_ticks();
	ASSERT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	ticks1 = stat_ticks();
	getrusage(RUSAGE_SELF, &r1);
	after = cg_read(self->path, "cpu.stat", "usage_usec");
	own_usec = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec +
		    r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000000L +
		   r1.ru_utime.tv_usec - r0.ru_utime.tv_usec +
		   r1.ru_stime.tv_usec - r0.ru_stime.tv_usec;
	stat_usec = (ticks1 - ticks0) * 1000000L / sysconf(_SC_CLK_TCK);
	TH_LOG("%u workers, %llu us; cgroup +%ld us, caller itself %ld us (rusage), %ld us (/proc/self/stat)",
	       req.workers, (unsigned long long)req.nsecs / 1000,
	       after - before, own_usec, stat_usec);
	EXPECT_LE(2, req.workers);
	/*
	 * The workers, its threads, were busy for most of the call, on the
	 * cgroup's clock and on the caller's own
	 */
	EXPECT_LT((long)(req.nsecs / 1000), own_usec);
	EXPECT_LT((long)(req.nsecs / 1000), stat_usec);
	munmap(p, len);
}

static int write_oom_score_adj(const char *val)
{
	return write_file("/proc/self/oom_score_adj", val) ? -errno : 0;
}

/*
 * Runs @populate in a child of cgroup @cg; its exit status or -signal, once
 * its memory is uncharged: a killed caller's workers let go of its memory
 * within a batch after it is reaped, and until then the cgroup is full.
 */
static int in_child(const char *cg,
		    int (*populate)(char *p, size_t len, void *arg),
		    size_t len, bool unkillable, void *arg)
{
	double t0;
	int status;
	long cur;
	pid_t pid = fork();

	if (pid < 0)
		return -1000;
	if (!pid) {
		char *p = map_anon_both(len);

		if (!p)
			_exit(100);
		/* The parent is unkillable: the OOM killer's only victim */
		if (!unkillable && write_oom_score_adj("0"))
			_exit(101);
		_exit(-populate(p, len, arg));
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1000;
	/*
	 * A read fails while the cgroup is full (the file's buffer is charged
	 * to it too): that is not yet either
	 */
	t0 = now();
	while (((cur = cg_read(cg, "memory.current", NULL)) < 0 ||
		cur > (long)(len / 4)) && now() - t0 < 30)
		usleep(10 * 1000);
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
	EXPECT_EQ(-SIGKILL,
		  in_child(self->path, by_madvise, len, false, NULL));
	EXPECT_EQ(-SIGKILL,
		  in_child(self->path, by_ioctl, len, false, &self->fd));
	EXPECT_EQ(kills + 2, cg_read(self->path, "memory.events", "oom_kill"));

	EXPECT_EQ(ENOMEM,
		  in_child(self->path, by_madvise, len, true, NULL));
	hits = cg_read(self->path, "memory.events", "max");
	EXPECT_EQ(ENOMEM,
		  in_child(self->path, by_ioctl, len, true, &self->fd));
	EXPECT_EQ(kills + 2, cg_read(self->path, "memory.events", "oom_kill"));
	/* The workers' charges hit this cgroup's limit, not another's */
	EXPECT_LT(hits, cg_read(self->path, "memory.events", "max"));
}

/* The kernel log from now on: /dev/kmsg, read to its end; -1 without it */
static int kmsg_from_now(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/* Kernel log records since kmsg_from_now() that hold both strings */
static int kmsg_count(int fd, const char *a, const char *b)
{
	char rec[2048];
	ssize_t n;
	int hits = 0;

	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || errno == EPIPE) {
		if (n <= 0)
			continue;
		rec[n] = 0;
		if (strstr(rec, a) && strstr(rec, b))
			hits++;
	}
	return hits;
}

/*
 * The suspend freezer as pm_test runs it (freeze every task, wait, thaw):
 * 0, -ENOENT without pm_test, or the errno of the write (EBUSY: a task
 * could not be frozen, or an OOM victim is still counted).
 */
static int pm_test_freezer(void)
{
	int ret;

	if (access("/sys/power/pm_test", W_OK))
		return -ENOENT;
	write_file("/sys/module/suspend/parameters/pm_test_delay", "0");
	if (write_file("/sys/power/pm_test", "freezer"))
		return -ENOENT;
	ret = write_file("/sys/power/state", "mem") ? -errno : 0;
	write_file("/sys/power/pm_test", "none");
	return ret;
}

/*
 * memory.oom.group, as Kubernetes and systemd's OOMPolicy=kill set it, with
 * memory.max below the range: the group kill takes the caller's processes,
 * as with madvise, workers with them as its threads: the kernel log names
 * no worker as a victim, and the suspend freezer succeeds afterwards.
 */
TEST_F(cg, oom_group_kills_the_caller_not_its_workers)
{
	size_t len = 64 * MiB;
	int kmsg, pm;

	RETURN_IF_SKIPPED();
	if (cg_write(self->path, "memory.max", "33554432") ||
	    cg_write(self->path, "memory.oom.group", "1"))
		SKIP(return, "no memory controller");
	cg_write(self->path, "memory.swap.max", "0");
	/* This test stays: the group kill spares only OOM_SCORE_ADJ_MIN */
	ASSERT_EQ(0, write_oom_score_adj("-1000"));
	kmsg = kmsg_from_now();

	EXPECT_EQ(-SIGKILL,
		  in_child(self->path, by_madvise, len, false, NULL));
	EXPECT_EQ(-SIGKILL,
		  in_child(self->path, by_ioctl, len, false, &self->fd));
	EXPECT_LE(2, cg_read(self->path, "memory.events", "oom_group_kill"));
	if (kmsg >= 0) {
		EXPECT_LE(2, kmsg_count(kmsg, "Killed process", ""));
		EXPECT_EQ(0, kmsg_count(kmsg, "Killed process", "(memprepop/"));
		close(kmsg);
	}
	pm = pm_test_freezer();
	if (pm == -ENOENT)
		SKIP(return, "no /sys/power/pm_test");
	EXPECT_EQ(0, pm);
}

/* A child cgroup of @cg, for a process to be frozen without the test */
static int cg_freezable(const char *cg, char *path, size_t size)
{
	snprintf(path, size, "%s/frz", cg);
	return mkdir(path, 0755) ? -errno : 0;
}

/* Writes cgroup.freeze, then waits for "frozen" to say it: seconds taken */
static double cg_freeze_wait(const char *cg, const char *val, double limit)
{
	double t0 = now();

	cg_write(cg, "cgroup.freeze", val);
	while (cg_read(cg, "cgroup.events", "frozen") != atoi(val) &&
	       now() - t0 < limit)
		usleep(1000);
	return now() - t0;
}

enum frz_how { FRZ_MADVISE, FRZ_IOCTL, FRZ_IDLE, FRZ_BACKGROUND };

struct frz_child {
	int fd;
	char *p;
	size_t len;
	int how;
	volatile int ret;
};

static void *frz_populate(void *arg)
{
	struct frz_child *c = arg;
	struct memprepop_populate req;

	int res;

	if (c->how == FRZ_MADVISE) {
		c->ret = madvise_populate_write(c->p, c->len);
	} else if (c->how == FRZ_BACKGROUND) {
		c->ret = ioc_populate(c->fd, c->p, c->len,
				      MEMPREPOP_F_BACKGROUND, &req);
		if (!c->ret)
			c->ret = bg_wait(c->fd, 0, &res) ?: res;
	} else {
		c->ret = ioc_populate(c->fd, c->p, c->len, 0, &req);
	}
	return NULL;
}

/*
 * A child process in @frz populates @len by @how in a thread of its own
 * (FRZ_IDLE: first, then waits with its workers idle), tells the parent on
 * @tell, and exits with the populate's errno once done and @go is readable.
 */
static pid_t frz_start(const char *frz, int devfd, size_t len, int how,
		       int tell, int go)
{
	pid_t pid = fork();

	if (!pid) {
		struct frz_child c = { .fd = devfd, .len = len, .how = how };
		pthread_t tid;
		char buf[32];

		snprintf(buf, sizeof(buf), "%d", getpid());
		c.p = map_anon_both(len);
		if (!c.p || cg_write(frz, "cgroup.procs", buf))
			_exit(100);
		if (how == FRZ_IDLE)
			frz_populate(&c);
		if (how != FRZ_IDLE &&
		    pthread_create(&tid, NULL, frz_populate, &c))
			_exit(101);
		if (write(tell, "x", 1) != 1 || read(go, buf, 1) != 1)
			_exit(102);
		if (how != FRZ_IDLE)
			pthread_join(tid, NULL);
		_exit(-c.ret);
	}
	return pid;
}

/*
 * Freezing a cgroup whose process keeps idle workers: cgroup.events says
 * frozen within a second, as for a process whose threads only did madvise:
 * its idle workers, its threads, are frozen with it.
 */
TEST_F(cg, freeze_with_idle_kept_workers)
{
	int tell[2], go[2], status, fd;
	char frz[160];
	double t;
	pid_t pid;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, cg_freezable(self->path, frz, sizeof(frz)));
	ASSERT_EQ(0, pipe(tell));
	ASSERT_EQ(0, pipe(go));
	ASSERT_TRUE(workers_gone(30));
	/* The child's own file: its workers stay with it */
	fd = open(MEMPREPOP_DEVICE, O_RDWR);
	ASSERT_LE(0, fd);
	pid = frz_start(frz, fd, 64 * MiB, FRZ_IDLE, tell[1], go[0]);
	ASSERT_LE(0, pid);
	close(fd);
	ASSERT_EQ(1, read(tell[0], &status, 1));
	EXPECT_LE(1, scan_workers(NULL, 0));
	t = cg_freeze_wait(frz, "1", 10);
	TH_LOG("frozen in %.3f s with %d idle kept workers", t,
	       scan_workers(NULL, 0));
	EXPECT_GT(1.0, t);
	EXPECT_EQ(1, cg_read(frz, "cgroup.events", "frozen"));
	cg_freeze_wait(frz, "0", 10);
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	rmdir(frz);
}

/*
 * Freezing a cgroup while a thread of its process populates 1 GiB: by
 * madvise, the freeze completes once madvise returns; by the ioctl, no
 * later (its workers finish the request, then leave). Thawed, each
 * finishes its call successfully.
 */
TEST_F_TIMEOUT(cg, freeze_during_a_request_like_madvise, 3600)
{
	size_t len = 1024 * MiB;
	double took[2];
	char frz[160];

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, cg_freezable(self->path, frz, sizeof(frz)));
	ASSERT_TRUE(workers_gone(30));
	for (int how = FRZ_MADVISE; how <= FRZ_IOCTL; how++) {
		int tell[2], go[2], status;
		pid_t pid;

		ASSERT_EQ(0, pipe(tell));
		ASSERT_EQ(0, pipe(go));
		pid = frz_start(frz, self->fd, len, how, tell[1], go[0]);
		ASSERT_LE(0, pid);
		ASSERT_EQ(1, read(tell[0], &status, 1));
		usleep(300 * 1000);
		took[how] = cg_freeze_wait(frz, "1", 120);
		EXPECT_EQ(1, cg_read(frz, "cgroup.events", "frozen"));
		cg_freeze_wait(frz, "0", 10);
		ASSERT_EQ(1, write(go[1], "x", 1));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
		for (int i = 0; i < 2; i++) {
			close(tell[i]);
			close(go[i]);
		}
	}
	TH_LOG("1 GiB: frozen after %.3f s (madvise) and %.3f s (ioctl)",
	       took[FRZ_MADVISE], took[FRZ_IOCTL]);
	EXPECT_GE(took[FRZ_MADVISE] + 1.0, took[FRZ_IOCTL]);
	EXPECT_TRUE(workers_gone(30));
	rmdir(frz);
}

/*
 * How long a thread of this process takes now to populate what a worker
 * does between two chances to be frozen (a chunk, MPP_CREW_CHUNK of
 * common/crew.h), on memory placed as the requests' is: what "between
 * chunks" means in time on this machine and kernel (a debug kernel under
 * TCG takes ten times as long as a stock one). 0 when it cannot tell.
 */
static double chunk_secs(void)
{
	size_t len = 16 * MiB;
	void *p = map_anon_both(len);
	double t0, t;

	if (!p)
		return 0;
	t0 = now();
	t = madvise(p, len, MADV_POPULATE_WRITE) ? 0 : now() - t0;
	munmap(p, len);
	return t;
}

/*
 * Freezing a cgroup while a background request of its process populates
 * 1 GiB, a thread of it waiting with MEMPREPOP_IOC_WAIT: when the workers
 * are the caller's own threads, they are frozen between chunks and the
 * freeze completes within a second, or within a few chunks' time where a
 * chunk takes longer, mid-request (the process has less than the range
 * resident while frozen); thawed, the request completes.
 */
TEST_F_TIMEOUT(cg, freeze_during_a_background_request, 3600)
{
	size_t len = 1024 * MiB;
	int tell[2], go[2], status;
	char frz[160], status_path[64];
	double t, chunk, bound;
	long rss_kb;
	pid_t pid;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, cg_freezable(self->path, frz, sizeof(frz)));
	ASSERT_TRUE(workers_gone(30));
	chunk = chunk_secs();
	bound = 4 * chunk > 1.0 ? 4 * chunk : 1.0;
	ASSERT_EQ(0, pipe(tell));
	ASSERT_EQ(0, pipe(go));
	pid = frz_start(frz, self->fd, len, FRZ_BACKGROUND, tell[1], go[0]);
	ASSERT_LE(0, pid);
	ASSERT_EQ(1, read(tell[0], &status, 1));
	usleep(300 * 1000);
	t = cg_freeze_wait(frz, "1", 10);
	snprintf(status_path, sizeof(status_path), "/proc/%d/status", pid);
	rss_kb = proc_field(status_path, "VmRSS");
	TH_LOG("frozen after %.3f s (a chunk by madvise %.3f s), %ld MiB of 1024 resident",
	       t, chunk, rss_kb / 1024);
	EXPECT_GT(bound, t);
	EXPECT_EQ(1, cg_read(frz, "cgroup.events", "frozen"));
	EXPECT_GT((long)(len / 1024), rss_kb);
	cg_freeze_wait(frz, "0", 10);
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x", status);
	EXPECT_TRUE(workers_gone(30));
	rmdir(frz);
}

/*
 * An administrator moves a process to another cgroup while a background
 * request of its populates 2 GiB: its workers follow it, as its own
 * threads move with it, each after the chunk it is faulting (tens of
 * milliseconds here): none is seen in the old cgroup half a second after
 * the move, and they are seen in the new one.
 */
TEST_F_TIMEOUT(cg, background_follows_a_moved_caller, 3600)
{
	int tell[2], done[2], status, in_a = 0, in_a_late = 0, in_b = 0;
	size_t len = 2048 * MiB;
	char a[160], b[160], buf[32];
	double moved;
	pid_t pid;

	RETURN_IF_SKIPPED();
	snprintf(a, sizeof(a), "%s/a", self->path);
	snprintf(b, sizeof(b), "%s/b", self->path);
	ASSERT_EQ(0, mkdir(a, 0755));
	ASSERT_EQ(0, mkdir(b, 0755));
	ASSERT_TRUE(workers_gone(30));
	ASSERT_EQ(0, pipe(tell));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct memprepop_populate req;
		char *p = map_anon_both(len);
		int fd = open(MEMPREPOP_DEVICE, O_RDWR), res;

		snprintf(buf, sizeof(buf), "%d", getpid());
		if (!p || fd < 0 || cg_write(a, "cgroup.procs", buf))
			_exit(100);
		if (ioc_populate(fd, p, len, MEMPREPOP_F_BACKGROUND, &req))
			_exit(101);
		if (write(tell[1], "x", 1) != 1 || bg_wait(fd, 0, &res) ||
		    write(done[1], "x", 1) != 1)
			_exit(102);
		_exit(-res);
	}
	ASSERT_EQ(1, read(tell[0], buf, 1));
	usleep(100 * 1000);
	snprintf(buf, sizeof(buf), "%d", pid);
	ASSERT_EQ(0, cg_write(b, "cgroup.procs", buf));
	moved = now();
	while (!readable(done[0], 0) && now() - moved < 120) {
		struct worker_stat ws[64];
		int n = scan_workers(ws, 64);

		for (int i = 0; i < n && i < 64; i++) {
			char cg[512];
			size_t l;

			task_cgroup(ws[i].tid, cg, sizeof(cg));
			l = strlen(cg);
			if (l >= 2 && !strcmp(cg + l - 2, "/a")) {
				in_a++;
				in_a_late += now() - moved > 0.5;
			}
			in_b += l >= 2 && !strcmp(cg + l - 2, "/b");
		}
		usleep(2000);
	}
	TH_LOG("after the move: %d worker observations in the old cgroup (%d later than 0.5 s), %d in the new; done after %.3f s",
	       in_a, in_a_late, in_b, now() - moved);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(0, in_a_late);
	EXPECT_LE(1, in_b);
	EXPECT_TRUE(workers_gone(30));
	rmdir(a);
	rmdir(b);
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
	size_t len = 64 * MiB, n = len / page_size();
	struct memprepop_populate req;
	uint64_t counts[TEST_NODES];
	char *p;

	RETURN_IF_SKIPPED();
	if (cg_write(self->path, "cpuset.cpus", "0") ||
	    cg_write(self->path, "cpuset.mems", "0"))
		SKIP(return, "no cpuset controller");
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, ioc_populate(self->fd, p, len, 0, &req));
	EXPECT_EQ(1, req.workers);

	ASSERT_EQ(0, numa_maps_nodes(p, len, counts, TEST_NODES));
	EXPECT_EQ(n, counts[0]);
	munmap(p, len);
}

/* What populating a fresh 64 MiB ramfs file charges to the cgroup */
static long ramfs_charge(const char *cg, const char *dir, int fd, bool ioctl_)
{
	size_t len = 64 * MiB;
	struct memprepop_populate req;
	char path[256];
	long before, after;
	int ret;
	char *p;

	snprintf(path, sizeof(path), "%s/f", dir);
	p = map_file_shared(open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), len);
	if (!p)
		return -1;
	before = cg_read(cg, "memory.current", NULL);
	ret = ioctl_ ? ioc_populate(fd, p, len, 0, &req) :
		       madvise_populate_write(p, len);
	after = cg_read(cg, "memory.current", NULL);
	munmap(p, len);
	unlink(path);
	return ret ? -1 : after - before;
}

/*
 * Page cache the workers fault in is charged to the caller's memory cgroup
 * as the caller's own faults charge it (ramfs: generic page cache).
 */
TEST_F_TIMEOUT(cg, page_cache_charged_like_madvise, 3600)
{
	char dir[] = "/tmp/mpp-ramfs-XXXXXX";
	long by_madvise, by_ioctl, w0;

	RETURN_IF_SKIPPED();
	if (cg_read(self->path, "memory.current", NULL) < 0)
		SKIP(return, "no memory controller");
	ASSERT_NE(NULL, mkdtemp(dir));
	if (mount("ramfs", dir, "ramfs", 0, NULL)) {
		rmdir(dir);
		SKIP(return, "ramfs: %s", strerror(errno));
	}
	by_madvise = ramfs_charge(self->path, dir, self->fd, false);
	w0 = workers_started();
	by_ioctl = ramfs_charge(self->path, dir, self->fd, true);
	TH_LOG("memory.current: madvise +%ld KiB, ioctl +%ld KiB (%ld workers)",
	       by_madvise / 1024, by_ioctl / 1024, workers_started() - w0);
	umount(dir);
	rmdir(dir);
	EXPECT_LT(0, workers_started() - w0);
	/*
	 * madvise() charged the file's pages, give or take what each CPU's
	 * charge stock (MEMCG_CHARGE_BATCH, 64 pages) held before: a charge
	 * takes from it without memory.current moving
	 */
	ASSERT_LE(64 * (long)MiB -
		  64 * (long)page_size() * sysconf(_SC_NPROCESSORS_CONF),
		  by_madvise);
	EXPECT_GE(by_madvise / 20, labs(by_ioctl - by_madvise));
}

/*
 * memory.stat's pagetables of @cg, once it has moved from @before or a
 * periodic flush (every 2 s) has had its chance: a kernel that flushes
 * memory.stat only now and then shows a change late, never a false one
 */
static long cg_pagetables_settled(const char *cg, long before)
{
	double t0 = now();
	long val;

	while ((val = cg_read(cg, "memory.stat", "pagetables")) == before &&
	       now() - t0 < 3)
		usleep(100000);
	return val;
}

/*
 * Page tables of 256 MiB of base pages: charged as madvise's are, and in
 * the caller's mm as madvise's are (VmPTE, read from outside the cgroup's
 * books). Both mappings exist before either is measured: page tables freed
 * by munmap() leave the count only after an RCU grace period on kernels
 * that free them so (7.x on x86), which would be counted against the
 * second measure.
 */
TEST_F_TIMEOUT(cg, page_tables_charged_like_madvise, 3600)
{
	size_t len = 256 * MiB;
	long pt[2], pte[2], w0 = workers_started();
	char *p[2];

	RETURN_IF_SKIPPED();
	if (cg_read(self->path, "memory.stat", "pagetables") < 0)
		SKIP(return, "no memory controller");
	for (int i = 0; i < 2; i++) {
		p[i] = map_anon_both(len);
		ASSERT_NE(NULL, p[i]);
		no_thp(p[i], len);
	}
	for (int i = 0; i < 2; i++) {
		struct memprepop_populate req;
		long before, vmpte;
		int ret;

		before = cg_pagetables_settled(self->path, -1);
		vmpte = status_field_kb("VmPTE");
		ret = i ? ioc_populate(self->fd, p[i], len, 0, &req) :
			  madvise_populate_write(p[i], len);
		ASSERT_EQ(0, ret);
		pte[i] = status_field_kb("VmPTE") - vmpte;
		pt[i] = cg_pagetables_settled(self->path, before) - before;
	}
	for (int i = 0; i < 2; i++)
		munmap(p[i], len);
	TH_LOG("memory.stat pagetables: madvise +%ld KiB, ioctl +%ld KiB; VmPTE: madvise +%ld KiB, ioctl +%ld KiB",
	       pt[0] / 1024, pt[1] / 1024, pte[0], pte[1]);
	EXPECT_LT(0, workers_started() - w0);
	/* The page tables are the caller's, as many as madvise made */
	ASSERT_LT(256, pte[0]);
	EXPECT_GE(pte[0] / 20, labs(pte[1] - pte[0]));
	if (pt[0] == 0 && pt[1] == 0)
		SKIP(return,
		     "this kernel's memory.stat counted none of madvise's %ld KiB of page tables: no charge to compare",
		     pte[0]);
	ASSERT_LT(256 * (long)KiB, pt[0]);
	EXPECT_GE(pt[0] / 20, labs(pt[1] - pt[0]));
}

#define PIDS_STOP	"/tmp/mpp-pids-stop"

/*
 * pids.max holds for workers as for threads: pids.current, read from
 * outside all through the call, never stays above it; at the limit the call
 * goes on with fewer workers, or none, and succeeds; the refusals show in
 * pids.events as a fork's would. A refused fork shows one over the limit
 * for an instant (the pids controller charges, then takes the charge back),
 * and so does a refused worker: a sample may catch that, once per refusal.
 */
TEST_F_TIMEOUT(cg, pids_max_never_exceeded, 3600)
{
	size_t len = 256 * MiB;
	struct memprepop_populate req;
	long base, seen[2] = { -1, 0 }, events0, w0;
	int pipefd[2], status;
	char *p, buf[32];
	pid_t sampler;

	RETURN_IF_SKIPPED();
	if (cg_read(self->path, "pids.current", NULL) < 0)
		SKIP(return, "no pids controller");
	p = map_anon_both(len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pipe(pipefd));
	/* The sampler leaves the cgroup, and reads it until told to stop */
	sampler = fork();
	ASSERT_LE(0, sampler);
	if (!sampler) {
		char path[256];
		long most[2] = { -1, 0 }, v, first;

		snprintf(buf, sizeof(buf), "%d", getpid());
		if (cg_write(CGROOT, "cgroup.procs", buf))
			_exit(1);
		snprintf(path, sizeof(path), "%s/pids.current", self->path);
		close(pipefd[0]);
		/* The test's own tasks: the highest limit set is one more */
		first = read_long(path);
		/* Until the parent makes the stop file, or goes away */
		while (access(PIDS_STOP, F_OK) && getppid() != 1) {
			v = read_long(path);
			if (v > most[0])
				most[0] = v;
			most[1] += v > first + 1;
			usleep(500);
		}
		if (write(pipefd[1], most, sizeof(most)) != sizeof(most))
			_exit(2);
		_exit(0);
	}
	close(pipefd[1]);
	unlink(PIDS_STOP);
	usleep(50 * 1000);
	/* This test's own tasks, the sampler gone: what the limit is above */
	base = cg_read(self->path, "pids.current", NULL);

	for (int room = 1; room >= 0; room--) {
		/* Workers stay with the file that is open: a new one each time */
		int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);

		ASSERT_LE(0, fd);
		/* The last file's workers exit after it is closed: wait */
		for (int i = 0; i < 1000 &&
		     cg_read(self->path, "pids.current", NULL) > base; i++)
			usleep(10 * 1000);
		ASSERT_EQ(base, cg_read(self->path, "pids.current", NULL));
		snprintf(buf, sizeof(buf), "%ld", base + room);
		ASSERT_EQ(0, cg_write(self->path, "pids.max", buf));
		events0 = cg_read(self->path, "pids.events", "max");
		w0 = workers_started();
		EXPECT_EQ(0, ioc_populate(fd, p, len, 0, &req));
		EXPECT_EQ(len, req.populated);
		TH_LOG("pids.max current+%d: %ld workers, pids.events max +%ld",
		       room, workers_started() - w0,
		       cg_read(self->path, "pids.events", "max") - events0);
		EXPECT_GE(room, workers_started() - w0);
		/* The worker not started was refused as a fork is */
		EXPECT_LT(events0, cg_read(self->path, "pids.events", "max"));
		/* A worker that stays counts as a pthread does */
		EXPECT_EQ(base + workers_started() - w0,
			  cg_read(self->path, "pids.current", NULL));
		close(fd);
		madvise(p, len, MADV_DONTNEED);
	}
	close(open(PIDS_STOP, O_CREAT | O_WRONLY, 0600));
	ASSERT_EQ(sizeof(seen), read(pipefd[0], seen, sizeof(seen)));
	ASSERT_EQ(sampler, waitpid(sampler, &status, 0));
	unlink(PIDS_STOP);
	TH_LOG("pids.current at most %ld (%ld samples over), pids.max %ld+1",
	       seen[0], seen[1], base);
	EXPECT_LT(0, seen[0]);
	/* At most the three refusals' instants, never a worker's lifetime */
	EXPECT_GE(3, seen[1]);
	EXPECT_GE(base + 2, seen[0]);
	cg_write(self->path, "pids.max", "max");
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
		if (ioc_populate(fd, p, 16 * MiB, MEMPREPOP_F_REQUIRE_MLOCKED, &req) !=
		    -EINVAL || present_pages(p, 16 * MiB))
			_exit(12);
		/* Within it: locked and accounted as mlock leaves it */
		if (mlock2(p, 4 * MiB, MLOCK_ONFAULT))
			_exit(13);
		if (ioc_populate(fd, p, 4 * MiB, MEMPREPOP_F_REQUIRE_MLOCKED, &req) ||
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

static void *nothing(void *arg)
{
	return NULL;
}

/*
 * RLIMIT_NPROC at what an unprivileged user already runs: pthread_create()
 * is refused with EAGAIN, and so is every worker that is the caller's own
 * thread; the call still populates all of its 256 MiB, by the caller
 * alone.
 */
TEST(nproc_refuses_workers_like_pthread_create)
{
	int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	int status;
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rlimit rl = { 1, 1 };
		struct memprepop_populate req;
		size_t len = 256 * MiB;
		char *p = map_anon_both(len);
		int ctl = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
		long w0 = workers_started();
		pthread_t tid;
		int err;

		if (!p || ctl < 0 || setgid(65534) || setuid(65534))
			_exit(10);
		/* The control: the same user without the limit gets workers */
		if (ioc_populate(ctl, p, len, 0, &req) ||
		    workers_started() == w0)
			_exit(14);
		/* Its threads stop with its file */
		close(ctl);
		madvise(p, len, MADV_DONTNEED);
		w0 = workers_started();
		if (setrlimit(RLIMIT_NPROC, &rl))
			_exit(10);
		err = pthread_create(&tid, NULL, nothing, NULL);
		if (err != EAGAIN)
			_exit(11);
		if (ioc_populate(fd, p, len, 0, &req) ||
		    req.populated != len)
			_exit(12);
		dprintf(1, "# pthread_create: %s; the call: %ld workers started, %zu MiB\n",
			strerror(err), workers_started() - w0,
			(size_t)(req.populated >> 20));
		_exit(workers_started() == w0 ? 0 : 13);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

/* VmLck counts what F_REQUIRE_MLOCKED populated, and munmap gives it back */
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
	ASSERT_EQ(0, ioc_populate(fd, p, len, MEMPREPOP_F_REQUIRE_MLOCKED, &req));
	EXPECT_EQ((long)(len / KiB), smaps_field_kb(p, "Locked"));
	EXPECT_EQ(vmlck0 + (long)(len / KiB), status_field_kb("VmLck"));
	ASSERT_EQ(0, munmap(p, len));
	EXPECT_EQ(vmlck0, status_field_kb("VmLck"));
	close(fd);
}

TEST_HARNESS_MAIN
