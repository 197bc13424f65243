// SPDX-License-Identifier: GPL-2.0
/*
 * The module's worker threads seen from outside, in the situations a
 * process's own threads meet: /proc readers walking them while they take
 * on and drop the caller's memory policy, a SIGKILL in the middle of a
 * call, processes stopped or frozen with workers kept while others call,
 * a stop or ptrace interrupt during a call, identities holding workers
 * beside another's call, a control block after the file is closed, a
 * cancel while a worker waits on a file system, unshare(CLONE_NEWUSER)
 * right after close() and a process left with workers only, and a
 * userfaultfd handler calling into the file while the request's wait
 * faults. Wherever it means something, the same is done with
 * madvise(MADV_POPULATE_WRITE) in a thread of the caller, on an identical
 * mapping, and timed the same way. Everything is read as an outsider
 * reads it: /proc/PID/stat and task, waitpid(), cgroup files, pagemap.
 *
 * Use-after-free races (the /proc walk, the kill race) pass when nothing
 * crashes here; KASAN in the debug kernel (make check-debug) is what
 * catches them, and the test VM fails the run on any splat.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <grp.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "cgroup_helpers.h"
#include "fuse_helpers.h"
#include "uffd_helpers.h"
#include "worker_helpers.h"

#define SLOW	3600
#define UID_A	65534		/* nobody */
#define UID_B	65533

#define RETURN_IF_SKIPPED() do { if (_metadata->skip) return; } while (0)

static int open_dev(void)
{
	return open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
}

static int ncpus(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

/* waitpid(@pid) with @flags for up to @secs: the seconds it took, or -1 */
static double wait_pid(pid_t pid, double secs, int *status, int flags)
{
	double t0 = now();

	if (pid <= 0)
		return -1;
	for (;;) {
		pid_t r = waitpid(pid, status, flags | WNOHANG);

		if (r == pid)
			return now() - t0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now() - t0 >= secs)
			return -1;
		usleep(2000);
	}
}

/* SIGKILL, then reaped within @secs: the seconds that took, or -1 */
static double kill_reap(pid_t pid, double secs, int *status)
{
	int st;

	if (pid <= 0)
		return -1;
	kill(pid, SIGKILL);
	return wait_pid(pid, secs, status ? status : &st, 0);
}

/* Threads of @pid listed in /proc/PID/task (a zombie leader too), or -1 */
static int task_count(pid_t pid)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * Every thread of @pid as /proc shows it, a line each: its name, state,
 * wchan and kernel stack (root only), for the log of something stuck.
 */
static void log_tasks(struct __test_metadata *_metadata, const char *what,
		      pid_t pid)
{
	char path[320];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d) {
		TH_LOG("%s (%d): gone from /proc", what, pid);
		return;
	}
	while ((e = readdir(d))) {
		char stat[512] = "", wchan[96] = "", stack[1024] = "", *s;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid,
			 e->d_name);
		read_file(path, stat, sizeof(stat));
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan", pid,
			 e->d_name);
		read_file(path, wchan, sizeof(wchan));
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stack", pid,
			 e->d_name);
		read_file(path, stack, sizeof(stack));
		for (s = stack; *s; s++)
			if (*s == '\n')
				*s = ' ';
		s = strrchr(stat, ')');
		if (s)
			s[1] = 0;
		TH_LOG("%s: %s state %c wchan %s stack %s", what,
		       strchr(stat, '(') ?: "?",
		       s && s[2] ? s[2] : '?', wchan[0] ? wchan : "-",
		       stack[0] ? stack : "-");
	}
	closedir(d);
}

/*
 * Forks a child that runs @fn with the write end of a pipe, to report on
 * (it never returns): the child's pid, or -1; the read end in *@rd
 */
static pid_t fork_reporting(void (*fn)(int report), int *rd)
{
	int rep[2];
	pid_t pid;

	if (pipe(rep))
		return -1;
	pid = fork();
	if (!pid) {
		close(rep[0]);
		fn(rep[1]);
		_exit(2);
	}
	close(rep[1]);
	*rd = rep[0];
	if (pid < 0)
		close(rep[0]);
	return pid;
}

/* Becomes @uid for good, /proc/self still its own: 0, or -1 */
static int become_uid(uid_t uid)
{
	(void)!setgroups(0, NULL);
	if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		return -1;
	prctl(PR_SET_DUMPABLE, 1);
	return 0;
}

/* Can a process of ours become @uid? */
static bool uid_usable(uid_t uid)
{
	int status;
	pid_t pid = fork();

	if (!pid)
		_exit(become_uid(uid) ? 1 : 0);
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFEXITED(status) && !WEXITSTATUS(status);
}

/* The calling thread's policy: interleave over every node. 0 or -1 */
static int interleave_all(void)
{
	if (numa_available() < 0)
		return -1;
	return set_mempolicy(MPOL_INTERLEAVE, numa_all_nodes_ptr->maskp,
			     numa_all_nodes_ptr->size + 1);
}

/* madvise(MADV_POPULATE_WRITE) of a span, in a thread of its own */
struct span {
	char *p;
	size_t len;
	int ret;
};

static void *madvise_thread(void *arg)
{
	struct span *s = arg;

	s->ret = madvise_populate_write(s->p, s->len);
	return NULL;
}

/* The same, in a thread created and joined: 0 or -errno */
static int madvise_in_thread(char *p, size_t len)
{
	struct span s = { .p = p, .len = len };
	pthread_t tid;

	if (pthread_create(&tid, NULL, madvise_thread, &s))
		return -EAGAIN;
	pthread_join(tid, NULL);
	return s.ret;
}

FIXTURE(wing)
{
	int unused;
};

FIXTURE_SETUP(wing)
{
}

FIXTURE_TEARDOWN(wing)
{
}

/*
 * Finding 1: /proc readers of the workers while they take on and drop
 * the caller's memory policy. A child loops {mmap 256 MiB, populate it
 * with one worker, munmap} for MEMPREPOP_STRESS_SECS (at most 30 s; 10 s
 * by default), 512 MiB of its memory touched beforehand so that each walk
 * of its mm is slow, while a thread of the test reads smaps_rollup and
 * numa_maps of every thread of the child named "memprepop/". numa_maps
 * takes a reference on the thread's task policy: a worker that swaps its policy outside
 * task_lock() frees it under the reader. Passes when nothing crashes and
 * the child's calls all succeed; KASAN in the debug kernel is what
 * catches the use-after-free. With the child's policy interleaved over
 * every node, and left default.
 */
FIXTURE(procwalk)
{
	int unused;
};

FIXTURE_VARIANT(procwalk)
{
	bool interleave;
};

FIXTURE_VARIANT_ADD(procwalk, default_policy)
{
	.interleave = false,
};

FIXTURE_VARIANT_ADD(procwalk, interleave)
{
	.interleave = true,
};

FIXTURE_SETUP(procwalk)
{
}

FIXTURE_TEARDOWN(procwalk)
{
}

/* Reads @path to its end: bytes read, or -1 */
static ssize_t drain(const char *path)
{
	static char buf[64 * 1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	close(fd);
	return total;
}

struct walker {
	pthread_t tid;
	pid_t pid;		/* whose threads to walk */
	volatile bool stop;
	unsigned long files, passes;
};

/* smaps_rollup and numa_maps of every worker among /proc/@dir/task */
static void walk_tasks(struct walker *w, const char *dir)
{
	char path[300], comm[32];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%s/task", dir);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task/%s/comm", dir,
			 e->d_name);
		if (read_file(path, comm, sizeof(comm)) <= 0 ||
		    strncmp(comm, "memprepop/", 10))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task/%s/smaps_rollup",
			 dir, e->d_name);
		w->files += drain(path) >= 0;
		snprintf(path, sizeof(path), "/proc/%s/task/%s/numa_maps",
			 dir, e->d_name);
		w->files += drain(path) >= 0;
	}
	closedir(d);
}

static void *walk(void *arg)
{
	struct walker *w = arg;
	char dir[32];

	snprintf(dir, sizeof(dir), "%d", w->pid);
	while (!w->stop) {
		walk_tasks(w, dir);
		w->passes++;
	}
	return NULL;
}

static void procwalk_child(bool interleave, double secs)
{
	size_t touched = 512 * MiB, len = 256 * MiB;
	struct memprepop_populate req;
	int fd = open_dev(), calls = 0;
	double t0;
	char *big;

	if (interleave && interleave_all())
		_exit(2);
	big = map_anon(touched);
	if (fd < 0 || !big || madvise_populate_write(big, touched))
		_exit(3);
	for (t0 = now(); now() - t0 < secs; calls++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			_exit(4);
		if (ioc_populate_workers(fd, p, len, 0, 1, &req))
			_exit(5);
		munmap(p, len);
	}
	dprintf(1, "# %d calls of 256 MiB with 1 worker in %.1f s\n", calls,
		now() - t0);
	_exit(0);
}

TEST_F_TIMEOUT(procwalk, proc_maps_of_workers_read_while_they_work, SLOW)
{
	struct walker w = { 0 };
	int status = 0;
	double took;
	pid_t pid;

	if (variant->interleave && numa_available() < 0)
		SKIP(return, "no NUMA memory policies");
	ASSERT_TRUE(workers_gone(30));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		procwalk_child(variant->interleave,
			       stress_secs(10) < 30 ? stress_secs(10) : 30);
	w.pid = pid;
	ASSERT_EQ(0, pthread_create(&w.tid, NULL, walk, &w));
	took = wait_pid(pid, 180, &status, 0);
	w.stop = true;
	pthread_join(w.tid, NULL);
	if (took < 0) {
		log_tasks(_metadata, "the caller, after 180 s", pid);
		kill_reap(pid, 30, &status);
	}
	TH_LOG("%lu smaps_rollup and numa_maps of workers read in %lu passes over /proc; the caller done after %.1f s",
	       w.files, w.passes, took);
	EXPECT_LE(0, took);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x", status);
	EXPECT_LT(0, w.files);
	EXPECT_TRUE(workers_gone(10));
}

/*
 * Finding 2: SIGKILL lands anywhere in a process's small calls, its file
 * kept open and its workers kept (just before its first call or after it,
 * or up to 100 ms later: in the start of a later call's kept workers),
 * while a thread of the test hogs a CPU. Every other round, the same
 * process populates with madvise() in its calling thread instead, killed
 * the same way: the reference, measured in the same run beside the same
 * hog. No kill may be left unreaped for 10 s (a wait that only its
 * workers could end), and the kills of the ioctl's processes are reaped
 * as fast as madvise's: their 90th percentile within three times
 * madvise's, or within 0.2 s (a 2-vCPU guest under TCG stalls a process
 * for a second or two now and then, whatever it runs: single rounds are
 * not compared). The dying process does not wait for its workers beyond
 * their exit, as for any thread of it. For MEMPREPOP_STRESS_SECS (5 s in make check, 120 s in
 * make check-debug; 15 s by default). A use-after-free of a request, a
 * pool or the file in the race is KASAN's to report, in the debug kernel.
 */
struct hog {
	pthread_t tid;
	volatile bool stop;
};

static void *hog_spin(void *arg)
{
	struct hog *h = arg;

	while (!h->stop)
		;
	return NULL;
}

/* Calls of 4 to 16 MiB until killed; says so on @ready when it starts */
static void small_calls(int ready, bool after_first, bool by_ioctl)
{
	size_t len = 16 * MiB;
	struct memprepop_populate req;
	unsigned int seed = getpid();
	int fd = open_dev();
	char *p = map_anon(len);

	if (fd < 0 || !p)
		_exit(2);
	if (!after_first && write(ready, "x", 1) != 1)
		_exit(3);
	for (;;) {
		size_t l = (4 + rand_r(&seed) % 13) * MiB;

		if (by_ioctl ? ioc_populate(fd, p, l, 0, &req) :
		    madvise_populate_write(p, l))
			_exit(4);
		if (after_first && write(ready, "x", 1) != 1)
			_exit(3);
		after_first = false;
		madvise(p, len, MADV_DONTNEED);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @n times: their 90th percentile, and in *@most the longest */
static double p90(double *t, int n, double *most)
{
	*most = 0;
	if (!n)
		return 0;
	qsort(t, n, sizeof(*t), cmp_double);
	*most = t[n - 1];
	return t[n * 9 / 10];
}

#define KILL_ROUNDS	4096

TEST_F_TIMEOUT(wing, kill_during_small_calls_is_reaped_at_once, SLOW)
{
	static double took_by[2][KILL_ROUNDS];
	unsigned int seed = getpid();
	int rounds = 0, stuck = 0, bad = 0, n[2] = { 0, 0 };
	struct hog hog = { 0 };
	double most[2], secs = stress_secs(15), t0, q[2];
	double limit = 0.2;

	ASSERT_TRUE(workers_gone(30));
	ASSERT_EQ(0, pthread_create(&hog.tid, NULL, hog_spin, &hog));
	for (t0 = now(); now() - t0 < secs && rounds < 2 * KILL_ROUNDS;
	     rounds++) {
		/* Rounds 0, 1 and 4, 5 ... by the ioctl; 2, 3 ... by madvise */
		bool by_ioctl = !(rounds & 2);
		int ready[2], status = 0;
		double took;
		char byte;
		pid_t pid;

		ASSERT_EQ(0, pipe(ready));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(ready[0]);
			small_calls(ready[1], rounds & 1, by_ioctl);
		}
		close(ready[1]);
		if (!read_within(ready[0], &byte, 1, 30) && bad < 3)
			TH_LOG("round %d: the child never called", rounds);
		close(ready[0]);
		/*
		 * Within 2 ms of the ready byte (in the first call, or before
		 * the second's madvise(MADV_DONTNEED) is over), or anywhere in
		 * the next 100 ms: into later calls, their kept workers'
		 * starts included
		 */
		usleep(rand_r(&seed) % (rounds & 4 ? 100001 : 2001));
		kill(pid, SIGKILL);
		took = wait_pid(pid, 10, &status, 0);
		if (took < 0) {
			stuck++;
			log_tasks(_metadata, "10 s after SIGKILL", pid);
			took = wait_pid(pid, 60, &status, 0);
			TH_LOG("round %d (%s): reaped %.1f s later (-1: not in 60 s)",
			       rounds, by_ioctl ? "ioctl" : "madvise", took);
			break;
		}
		took_by[by_ioctl][n[by_ioctl]++] = took;
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			if (bad++ < 3)
				TH_LOG("round %d: status %#x", rounds, status);
		}
	}
	hog.stop = true;
	pthread_join(hog.tid, NULL);
	q[0] = p90(took_by[0], n[0], &most[0]);
	q[1] = p90(took_by[1], n[1], &most[1]);
	TH_LOG("%d kills in %.1f s beside a CPU hog: madvise's %d reaped after %.3f s at the 90th percentile, %.3f s at most; the ioctl's %d after %.3f s, %.3f s at most",
	       rounds, now() - t0, n[0], q[0], most[0], n[1], q[1], most[1]);
	EXPECT_EQ(0, stuck);
	EXPECT_EQ(0, bad);
	EXPECT_LE(5, n[0]);
	EXPECT_LE(5, n[1]);
	EXPECT_GE(limit > 3 * q[0] ? limit : 3 * q[0], q[1]);
	EXPECT_TRUE(workers_gone(10));
}

/*
 * Issue 46, finding 1: no task of the system waits for a thread of
 * another process. Four processes each populate 64 MiB with all their
 * workers, kept idle on their open file, and each is stopped (SIGSTOP, or
 * its own cgroup frozen) as soon as its call is done: their idle workers,
 * threads of theirs when workers are the caller's threads, are stopped
 * with them. Then another process (as another user when it can be)
 * populates 64 MiB: it must return within 5 s with as many workers as it
 * had alone, before the holders. With the hung-task detector at 10 s
 * (checking every second), 12 s later no task anywhere may be in D inside
 * the module or vhost_task_stop(), and the kernel log must have no
 * "blocked for more than". A process that is stuck is reported (its
 * threads' state and kernel stacks) and SIGKILLed, and must then be
 * reaped within 2 s. Then the release of a file passed away by its
 * stopped owner: the receiver's close and exit must not wait for the
 * owner's workers either (reaped within 2 s). Finally the holders are let
 * go and ended.
 */
#define HUNG_TIMEOUT	"/proc/sys/kernel/hung_task_timeout_secs"
#define HUNG_INTERVAL	"/proc/sys/kernel/hung_task_check_interval_secs"

FIXTURE(holders)
{
	long hung[2];		/* the detector's timeout and interval, or -1 */
	char base[96];		/* the cgroup of the holders' cgroups */
	char cg[8][112];	/* each process's own, or "" */
	pid_t pids[8];
	int nr;
};

FIXTURE_VARIANT(holders)
{
	bool freeze;
};

FIXTURE_VARIANT_ADD(holders, sigstop)
{
	.freeze = false,
};

FIXTURE_VARIANT_ADD(holders, cgroup_freeze)
{
	.freeze = true,
};

FIXTURE_SETUP(holders)
{
	char path[128];

	self->hung[0] = read_long(HUNG_TIMEOUT);
	self->hung[1] = read_long(HUNG_INTERVAL);
	if (!variant->freeze)
		return;
	snprintf(self->base, sizeof(self->base), CGROOT "/mpp-wing-%d",
		 getpid());
	if (access(CGROOT "/cgroup.controllers", F_OK) ||
	    mkdir(self->base, 0755)) {
		self->base[0] = 0;
		SKIP(return, "no writable cgroup2 at " CGROOT);
	}
	snprintf(path, sizeof(path), "%s/cgroup.freeze", self->base);
	if (access(path, W_OK))
		SKIP(return, "no cgroup v2 freezer (cgroup.freeze)");
}

/* Frozen (or thawed) as cgroup.events says: seconds, or -1 after @limit */
static double cg_freeze(const char *cg, const char *val, double limit)
{
	double t0 = now();

	if (cg_write(cg, "cgroup.freeze", val))
		return -1;
	while (cg_read(cg, "cgroup.events", "frozen") != atoi(val)) {
		if (now() - t0 > limit)
			return -1;
		usleep(1000);
	}
	return now() - t0;
}

FIXTURE_TEARDOWN(holders)
{
	for (int i = 0; i < self->nr; i++)
		if (self->pids[i] > 0)
			kill(self->pids[i], SIGKILL);
	for (int i = 0; i < self->nr; i++) {
		if (self->cg[i][0])
			cg_freeze(self->cg[i], "0", 5);
		if (self->pids[i] > 0)
			kill(self->pids[i], SIGCONT);
	}
	for (int i = 0; i < self->nr; i++) {
		if (self->pids[i] > 0)
			wait_pid(self->pids[i], 30, NULL, 0);
		if (self->cg[i][0])
			rmdir(self->cg[i]);
	}
	if (self->base[0])
		rmdir(self->base);
	for (int i = 0; i < 2; i++) {
		char buf[32];

		if (self->hung[i] < 0)
			continue;
		snprintf(buf, sizeof(buf), "%ld", self->hung[i]);
		write_file(i ? HUNG_INTERVAL : HUNG_TIMEOUT, buf);
	}
}

/*
 * A holder: in cgroup @cg if any, populates 64 MiB with all its workers,
 * kept; passes its file on @sock (and closes its own) if asked; reports
 * {errno, workers} on @report, then sleeps until killed.
 */
static void holder(const char *cg, int report, int sock)
{
	struct memprepop_populate req = { 0 };
	size_t len = 64 * MiB;
	char pid[16], *p;
	int rep[2], fd;

	snprintf(pid, sizeof(pid), "%d", getpid());
	if (cg && cg_write(cg, "cgroup.procs", pid))
		_exit(2);
	interleave_all();	/* workers for every node's CPUs */
	fd = open_dev();
	p = map_anon(len);
	if (fd < 0 || !p)
		_exit(3);
	rep[0] = ioc_populate(fd, p, len, 0, &req);
	rep[1] = req.workers;
	if (sock >= 0 && (send_fd(sock, fd) || close(fd)))
		_exit(4);
	if (write(report, rep, sizeof(rep)) != sizeof(rep))
		_exit(5);
	for (;;)
		pause();
}

/* A process of the test's, in a cgroup of its own with @freeze */
static pid_t holder_start(FIXTURE_DATA(holders) *self, bool freeze,
			  int report, int sock)
{
	int i = self->nr;
	pid_t pid;

	if (freeze) {
		snprintf(self->cg[i], sizeof(self->cg[i]), "%s/h%d",
			 self->base, i);
		if (mkdir(self->cg[i], 0755)) {
			self->cg[i][0] = 0;
			return -1;
		}
	}
	pid = fork();
	if (!pid)
		holder(self->cg[i][0] ? self->cg[i] : NULL, report, sock);
	if (pid > 0)
		self->pids[self->nr++] = pid;
	return pid;
}

/* Stops process @i: seconds until it shows stopped, or -1 after 5 s */
static double hold_still(FIXTURE_DATA(holders) *self, int i)
{
	int status = 0;
	double took;

	if (self->cg[i][0])
		return cg_freeze(self->cg[i], "1", 5);
	kill(self->pids[i], SIGSTOP);
	took = wait_pid(self->pids[i], 5, &status, WUNTRACED);
	return took >= 0 && WIFSTOPPED(status) ? took : -1;
}

/* Lets every holder go on, ends them: how many were not reaped in 10 s */
static int holders_end(FIXTURE_DATA(holders) *self)
{
	int late = 0;

	for (int i = 0; i < self->nr; i++) {
		if (self->cg[i][0])
			cg_freeze(self->cg[i], "0", 5);
		if (self->pids[i] > 0) {
			kill(self->pids[i], SIGCONT);
			kill(self->pids[i], SIGTERM);
		}
	}
	for (int i = 0; i < self->nr; i++) {
		if (self->pids[i] <= 0)
			continue;
		if (wait_pid(self->pids[i], 10, NULL, 0) < 0)
			late++;
		else
			self->pids[i] = 0;
	}
	return late;
}

/*
 * Waits up to @secs for process @i to exit 0; when stuck, logs it,
 * SIGKILLs it and expects it reaped within 2 s. Seconds taken, or -1.
 */
static double must_return(struct __test_metadata *_metadata,
			  FIXTURE_DATA(holders) *self, int i, double secs,
			  const char *what)
{
	int status = 0;
	double took = wait_pid(self->pids[i], secs, &status, 0), reaped;

	if (took >= 0) {
		self->pids[i] = 0;
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("%s: status %#x", what, status);
		return took;
	}
	log_tasks(_metadata, what, self->pids[i]);
	reaped = kill_reap(self->pids[i], 2, &status);
	TH_LOG("%s: stuck after %.0f s, reaped %.3f s after SIGKILL (-1: not within 2 s)",
	       what, secs, reaped);
	EXPECT_LE(0, reaped);
	if (reaped >= 0)
		self->pids[i] = 0;
	return -1;
}

/*
 * Another process: 64 MiB with all its workers, as uid 65534 if it can
 * be; writes its workers on @report
 */
static void other_process(bool other_uid, int report)
{
	struct memprepop_populate req;
	size_t len = 64 * MiB;
	int fd = open_dev(), ret;
	double t0;
	char *p;

	interleave_all();
	if (fd < 0 || (other_uid && become_uid(UID_A)))
		_exit(2);
	p = map_anon(len);
	if (!p)
		_exit(2);
	t0 = now();
	ret = ioc_populate(fd, p, len, 0, &req);
	dprintf(1, "# the other process's call: %d in %.3f s, %u workers\n",
		ret, now() - t0, req.workers);
	if (write(report, &req.workers, sizeof(int)) != sizeof(int))
		_exit(5);
	_exit(ret ? 3 : present_pages(p, len) != len / page_size() ? 4 : 0);
}

/*
 * A task in D whose kernel stack is in the module or vhost_task_stop():
 * logged, 1
 */
static int stuck_one(void *arg, const char *path, int tid)
{
	struct __test_metadata *_metadata = arg;
	char file[700], stack[4096], stat[512], *st;

	snprintf(file, sizeof(file), "/proc/%s/stat", path);
	if (read_file(file, stat, sizeof(stat)) <= 0)
		return 0;
	st = strrchr(stat, ')');
	if (!st || st[1] != ' ' || st[2] != 'D')
		return 0;
	snprintf(file, sizeof(file), "/proc/%s/stack", path);
	if (read_file(file, stack, sizeof(stack)) <= 0 ||
	    (!strstr(stack, "memprepop") && !strstr(stack, "vhost_task_stop")))
		return 0;
	TH_LOG("in D: %.*s\n%s", (int)(st - stat + 1), stat, stack);
	return 1;
}

/* Tasks anywhere in D inside the module or vhost_task_stop() */
static int stuck_in_module(struct __test_metadata *_metadata)
{
	return walk_threads(stuck_one, _metadata);
}

/* The kernel log from @fd (at its end when opened) has "blocked for more" */
static bool hung_reported(struct __test_metadata *_metadata, int fd)
{
	char rec[2048];
	bool found = false;
	ssize_t n;

	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || errno == EPIPE ||
	       errno == EINTR) {
		if (n <= 0)
			continue;
		rec[n] = 0;
		if (strstr(rec, "blocked for more than")) {
			TH_LOG("kernel log: %s", rec);
			found = true;
		}
	}
	return found;
}

/* Runs other_process(): its workers, or -1 when it did not return in 5 s */
static int other_run(struct __test_metadata *_metadata,
		     FIXTURE_DATA(holders) *self, bool other_uid)
{
	int report[2], workers = -1;
	double took;
	pid_t pid;

	if (pipe(report))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		other_process(other_uid, report[1]);
	close(report[1]);
	self->pids[self->nr++] = pid;
	took = must_return(_metadata, self, self->nr - 1, 5,
			   "the other process");
	TH_LOG("the other process returned after %.3f s (-1: not within 5 s)",
	       took);
	if (took < 0 || read(report[0], &workers, sizeof(workers)) !=
			 sizeof(workers))
		workers = -1;
	close(report[0]);
	return workers;
}

TEST_F_TIMEOUT(holders, stopped_holders_keep_nothing_waiting, SLOW)
{
	int workers[4] = { -1, -1, -1, -1 }, report[2], alone, beside, kmsg;
	bool other_uid = uid_usable(UID_A);
	pid_t pid;

	RETURN_IF_SKIPPED();
	ASSERT_TRUE(workers_gone(30));
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, kmsg);
	lseek(kmsg, 0, SEEK_END);
	if (self->hung[0] < 0) {
		TH_LOG("no hung-task detector: only the tasks in D are read");
	} else {
		ASSERT_EQ(0, write_file(HUNG_TIMEOUT, "10"));
		if (self->hung[1] >= 0)
			ASSERT_EQ(0, write_file(HUNG_INTERVAL, "1"));
	}
	alone = other_run(_metadata, self, other_uid);
	ASSERT_LE(1, alone);
	ASSERT_EQ(0, pipe(report));
	for (int i = 0; i < 4; i++) {
		char what[64];
		int rep[2];

		snprintf(what, sizeof(what), "holder %d", i);
		pid = holder_start(self, variant->freeze, report[1], -1);
		ASSERT_LE(0, pid);
		if (!read_within(report[0], rep, sizeof(rep), 10)) {
			must_return(_metadata, self, i + 1, 0, what);
			EXPECT_TRUE(false) TH_LOG("%s: its call not done in 10 s",
						  what);
			continue;
		}
		EXPECT_EQ(0, rep[0]);
		workers[i] = rep[1];
		EXPECT_LE(0, hold_still(self, i + 1))
			TH_LOG("%s: not stopped within 5 s", what);
	}
	TH_LOG("holders' workers %d %d %d %d; %d workers alive; %s",
	       workers[0], workers[1], workers[2], workers[3],
	       scan_workers(NULL, 0), other_uid ? "the other process is uid "
	       "65534" : "the other process is root");
	beside = other_run(_metadata, self, other_uid);
	TH_LOG("the other process had %d workers alone, %d beside the stopped holders",
	       alone, beside);
	EXPECT_EQ(alone, beside);
	usleep(12 * 1000 * 1000);
	EXPECT_EQ(0, stuck_in_module(_metadata));
	EXPECT_FALSE(hung_reported(_metadata, kmsg));
	close(kmsg);
	EXPECT_EQ(0, holders_end(self));
	EXPECT_TRUE(workers_gone(30));
}

/* The receiver of a passed file: closes it and exits when told */
static void receiver(int sock, int got, int go)
{
	int fd = recv_fd(sock);
	char byte;

	if (fd < 0 || write(got, "x", 1) != 1 || read(go, &byte, 1) != 1)
		_exit(2);
	close(fd);
	_exit(0);
}

TEST_F_TIMEOUT(holders, close_of_a_passed_file_behind_a_stopped_owner_returns,
	       SLOW)
{
	int sv[2], report[2], got[2], go[2], rep[2] = { -1, -1 };
	double took, stopped = -1;
	char byte;
	pid_t pid;

	RETURN_IF_SKIPPED();
	ASSERT_TRUE(workers_gone(30));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, pipe(got));
	ASSERT_EQ(0, pipe(go));
	/* The owner: populates, passes the file on, keeps its workers */
	pid = holder_start(self, variant->freeze, report[1], sv[0]);
	ASSERT_LE(0, pid);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		receiver(sv[1], got[1], go[0]);
	self->pids[self->nr++] = pid;
	ASSERT_TRUE(read_within(report[0], rep, sizeof(rep), 30));
	EXPECT_EQ(0, rep[0]);
	ASSERT_TRUE(read_within(got[0], &byte, 1, 30));
	stopped = hold_still(self, 0);
	EXPECT_LE(0, stopped) TH_LOG("the owner not stopped within 5 s");
	TH_LOG("the owner kept %d workers, stopped after %.3f s; %d workers alive",
	       rep[1], stopped, scan_workers(NULL, 0));
	/* The receiver holds the last reference: its close releases it */
	ASSERT_EQ(1, write(go[1], "x", 1));
	took = must_return(_metadata, self, 1, 2, "the receiver");
	TH_LOG("the receiver closed and was reaped after %.3f s (-1: not within 2 s)",
	       took);
	EXPECT_LE(0, took);
	EXPECT_EQ(0, holders_end(self));
	EXPECT_TRUE(workers_gone(30));
}

/*
 * Finding 4: a stop during a call is reported as for any thread waiting in
 * the kernel. A child populates, and the parent stops it 200 ms into the
 * call: waitpid() must report the stop while the call is far from done (what
 * the child populated meanwhile, read from its smaps, is at most two chunks
 * a thread), whether the call is synchronous, the stop lands in
 * MEMPREPOP_IOC_WAIT of a background request, a SIGUSR1 with a handler (no
 * SA_RESTART) comes first, or a tracer's PTRACE_INTERRUPT traps the calling
 * thread (PTRACE_EVENT_STOP), another thread closed a copy of the descriptor
 * (dup()) 100 ms before (the call goes on through the other: nothing of it
 * stops, and the close returns at once), or, with the module parameter
 * keep_workers off, one of its two workers is idle already (the first 16 MiB
 * bound to node 0, the rest to node 1: the stop waits for that worker to be
 * idle) and the call made by another thread than the main one, which takes
 * the stop first and sets it on every other thread, the idle worker too: the
 * caller that leaves for the stop must not wait for that worker. Resumed,
 * the call must return 0 (never EINTR: only a fatal signal interrupts it)
 * with every page present. The same with madvise() in a thread of the child
 * (in the calling thread itself for ptrace) is measured for comparison: its
 * stop is only reported once madvise() is done.
 *
 * What is populated makes the call last: 512 MiB of anonymous memory,
 * interleaved (a worker per node's CPU). A worker joins a group stop
 * between chunks only, as a madvise() thread does between calls: one
 * waiting on a READ that a FUSE server holds would hold the stop up for as
 * long, whatever the module does.
 */
enum stop_how {
	STOP_SYNC, STOP_BACKGROUND, STOP_SIGUSR1, STOP_PTRACE, STOP_CLOSE_COPY,
	STOP_UNKEPT,
};

#define STOP_LEN	(512 * MiB)
#define STOP_EARLY	(16 * MiB)	/* STOP_UNKEPT: node 0's, done first */
#define STOP_CHUNK	(16 * MiB)	/* MPP_CREW_CHUNK of common/crew.h */
#define KEEP_WORKERS	"/sys/module/memprepop/parameters/keep_workers"

FIXTURE(stop)
{
};

FIXTURE_VARIANT(stop)
{
	enum stop_how how;
	const char *what;
};

FIXTURE_VARIANT_ADD(stop, sync)
{
	.how = STOP_SYNC,
	.what = "SIGSTOP",
};

FIXTURE_VARIANT_ADD(stop, background_wait)
{
	.how = STOP_BACKGROUND,
	.what = "SIGSTOP in the wait",
};

FIXTURE_VARIANT_ADD(stop, sigusr1_first)
{
	.how = STOP_SIGUSR1,
	.what = "SIGUSR1 then SIGSTOP",
};

FIXTURE_VARIANT_ADD(stop, ptrace_interrupt)
{
	.how = STOP_PTRACE,
	.what = "PTRACE_INTERRUPT",
};

FIXTURE_VARIANT_ADD(stop, close_a_copy)
{
	.how = STOP_CLOSE_COPY,
	.what = "SIGSTOP after a close() of a copy",
};

FIXTURE_VARIANT_ADD(stop, workers_not_kept)
{
	.how = STOP_UNKEPT,
	.what = "SIGSTOP once a worker is idle, keep_workers off,",
};

FIXTURE_SETUP(stop)
{
	if (variant->how == STOP_UNKEPT)
		ASSERT_EQ(0, write_file(KEEP_WORKERS, "N"));
}

FIXTURE_TEARDOWN(stop)
{
	if (variant->how == STOP_UNKEPT)
		write_file(KEEP_WORKERS, "Y");
}

/* STOP_CLOSE_COPY: closes the descriptor @arg 100 ms into the call */
static void *close_later(void *arg)
{
	usleep(100 * 1000);
	close((int)(intptr_t)arg);
	return NULL;
}

/* STOP_UNKEPT's call, in a thread of its own */
struct stop_call {
	int fd;
	char *p;
	size_t len;
	struct memprepop_populate req;
	int ret;
};

static void *stop_call_fn(void *arg)
{
	struct stop_call *c = arg;

	c->ret = ioc_populate(c->fd, c->p, c->len, 0, &c->req);
	return NULL;
}

/*
 * The call made by another thread, the main one waiting for it, so that
 * the main thread takes a stop first and sets it on every other thread
 * (the workers too) before the caller leaves its wait
 */
static int ioc_populate_in_thread(int fd, char *p, size_t len,
				  struct memprepop_populate *req)
{
	struct stop_call c = { .fd = fd, .p = p, .len = len, .ret = -1 };
	pthread_t t;

	if (pthread_create(&t, NULL, stop_call_fn, &c))
		return -1;
	pthread_join(t, NULL);
	*req = c.req;
	return c.ret;
}

/* STOP_UNKEPT's memory: STOP_EARLY on node 0, then STOP_LEN on node 1 */
static char *map_early_then_late(size_t *len)
{
	unsigned long node0 = 1, node1 = 2;
	char *p;

	*len = STOP_EARLY + STOP_LEN;
	p = map_anon(*len);
	if (p && (mbind(p, STOP_EARLY, MPOL_BIND, &node0, 8 * sizeof(node0),
			0) ||
		  mbind(p + STOP_EARLY, STOP_LEN, MPOL_BIND, &node1,
			8 * sizeof(node1), 0))) {
		munmap(p, *len);
		return NULL;
	}
	return p;
}

static volatile sig_atomic_t usr1_seen;

static void on_usr1(int sig)
{
	usr1_seen++;
}

/* Populates anonymous memory one way or another */
static void stop_child(enum stop_how how, bool by_ioctl, int ready)
{
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	struct memprepop_populate req = { 0 };
	size_t len = STOP_LEN;
	int fd = open_dev(), ret, result = 0;
	pthread_t closer;
	char *p;

	if (how == STOP_UNKEPT) {
		p = map_early_then_late(&len);
	} else {
		interleave_all();
		p = map_anon(len);
	}
	if (p)
		no_thp(p, len);
	if (fd < 0 || !p || sigaction(SIGUSR1, &sa, NULL) ||
	    write(ready, &p, sizeof(p)) != sizeof(p))
		_exit(2);
	if (how == STOP_CLOSE_COPY &&
	    pthread_create(&closer, NULL, close_later,
			   (void *)(intptr_t)dup(fd)))
		_exit(2);
	if (!by_ioctl && how == STOP_PTRACE) {
		ret = madvise_populate_write(p, len);
	} else if (!by_ioctl) {
		ret = madvise_in_thread(p, len);
	} else if (how == STOP_UNKEPT) {
		ret = ioc_populate_in_thread(fd, p, len, &req);
	} else if (how == STOP_BACKGROUND) {
		ret = ioc_populate(fd, p, len, MEMPREPOP_F_BACKGROUND, &req);
		if (!ret)
			ret = bg_wait(fd, 0, &result);
	} else {
		ret = ioc_populate(fd, p, len, 0, &req);
	}
	dprintf(1, "# %s: %d (result %d), %llu populated, %u workers, SIGUSR1 handled %d times\n",
		by_ioctl ? "ioctl" : "madvise", ret, result,
		(unsigned long long)req.populated, req.workers, usr1_seen);
	if (ret || result)
		_exit(3);
	if (by_ioctl && req.populated != len)
		_exit(4);
	if (present_pages(p, len) != len / page_size())
		_exit(5);
	if (how == STOP_SIGUSR1 && !usr1_seen)
		_exit(6);
	_exit(0);
}

struct stop_run {
	int idle;		/* its workers idle right before the stop */
	int workers;		/* its workers then */
	long before_kb;		/* of the range populated then, -1: unread */
	long stop_kb;		/* populated when the stop was reported */
	double stop;		/* from the stop to its report, -1: none */
	double done;		/* from the resume to the exit, -1: none */
	bool right_stop;	/* the stop reported is the one asked for */
	int status;
	int seize_errno;
};

/* Workers of process @pid now, and in *@idle those waiting idle */
static int pid_workers(pid_t pid, int *idle)
{
	char path[300];
	struct dirent *e;
	int n = 0;
	DIR *d;

	*idle = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct worker_stat ws;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%d/task/%s", pid, e->d_name);
		if (!read_worker(path, atoi(e->d_name), &ws))
			continue;
		n++;
		*idle += worker_idle(&ws);
	}
	closedir(d);
	return n;
}

/* What the child populates */
static size_t stop_len(enum stop_how how)
{
	return how == STOP_UNKEPT ? STOP_EARLY + STOP_LEN : STOP_LEN;
}

/*
 * What process @pid has populated of [@addr, @addr + @len), in kB, read
 * from outside: the Rss of its mappings there in /proc/@pid/smaps, or -1
 */
static long range_rss_kb(pid_t pid, uintptr_t addr, size_t len)
{
	bool inside = false;
	char line[512];
	long kb = -1;
	FILE *f;

	snprintf(line, sizeof(line), "/proc/%d/smaps", pid);
	f = fopen(line, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (smaps_vma_head(line, &lo, &hi)) {
			inside = lo >= addr && hi <= addr + len;
			continue;
		}
		if (inside && !strncmp(line, "Rss:", 4))
			kb = (kb < 0 ? 0 : kb) + strtol(line + 4, NULL, 10);
	}
	fclose(f);
	return kb;
}

/*
 * Stops @pid 200 ms into its call (@by_ioctl STOP_UNKEPT: once a worker is
 * idle), resumes it: what waitpid() saw, when
 */
static void stop_and_resume(pid_t pid, enum stop_how how, bool by_ioctl,
			    double stop_limit, int ready, struct stop_run *r)
{
	size_t len = stop_len(how);
	uintptr_t addr;
	int st = 0;

	if (how == STOP_PTRACE && ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		r->seize_errno = errno;
		goto kill;
	}
	if (!read_within(ready, &addr, sizeof(addr), 60))
		goto kill;
	usleep(200 * 1000);
	r->workers = pid_workers(pid, &r->idle);
	/* Node 0's 16 MiB done, however long that takes on this machine */
	for (double t0 = now(); by_ioctl && how == STOP_UNKEPT && !r->idle &&
	     now() - t0 < 30; usleep(10 * 1000))
		r->workers = pid_workers(pid, &r->idle);
	r->before_kb = range_rss_kb(pid, addr, len);
	if (how == STOP_SIGUSR1)
		kill(pid, SIGUSR1);
	if (how == STOP_PTRACE)
		ptrace(PTRACE_INTERRUPT, pid, 0, 0);
	else
		kill(pid, SIGSTOP);
	r->stop = wait_pid(pid, stop_limit, &st, WUNTRACED | __WALL);
	if (r->stop >= 0)
		r->stop_kb = range_rss_kb(pid, addr, len);
	if (r->stop >= 0 && !WIFSTOPPED(st)) {
		r->stop = -1;		/* gone without stopping */
		r->status = st;
		return;
	}
	if (r->stop >= 0) {
		r->right_stop = how == STOP_PTRACE ?
				st >> 16 == PTRACE_EVENT_STOP :
				WSTOPSIG(st) == SIGSTOP;
	} else if (how == STOP_PTRACE) {
		/* Not in time: a tracee stops when it can, then detached */
		if (wait_pid(pid, 120, &st, __WALL) < 0)
			goto kill;
		if (!WIFSTOPPED(st)) {
			r->status = st;
			return;
		}
	}
	/* SIGCONT also ends a stop not reported in time */
	if (how == STOP_PTRACE)
		ptrace(PTRACE_DETACH, pid, 0, 0);
	else
		kill(pid, SIGCONT);
	r->done = wait_pid(pid, 120, &st, 0);
	if (r->done >= 0) {
		r->status = st;
		return;
	}
kill:
	kill_reap(pid, 30, &st);
	r->status = st;
}

/* A child stopped 200 ms into its call, by the ioctl or by madvise() */
static void stop_run(enum stop_how how, bool by_ioctl, double stop_limit,
		     struct stop_run *r)
{
	int ready[2];
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->stop = r->done = -1;
	r->before_kb = r->stop_kb = -1;
	r->status = -1;
	if (pipe(ready))
		return;
	pid = fork();
	if (!pid) {
		close(ready[0]);
		stop_child(how, by_ioctl, ready[1]);
	}
	close(ready[1]);
	if (pid > 0)
		stop_and_resume(pid, how, by_ioctl, stop_limit, ready[0], r);
	close(ready[0]);
}

TEST_F_TIMEOUT(stop, stop_during_a_call_is_reported_promptly, SLOW)
{
	struct stop_run ref, ioc;

	ASSERT_TRUE(workers_gone(30));
	stop_run(variant->how, false, 60, &ref);
	if (ref.seize_errno)
		SKIP(return, "PTRACE_SEIZE: %s", strerror(ref.seize_errno));
	ASSERT_TRUE(workers_gone(30));
	stop_run(variant->how, true, 10, &ioc);
	TH_LOG("%s at 0.2 s into populating 512 MiB: with madvise() the stop reported after %.3f s, the exit %.3f s after the resume; with the ioctl %.3f s (-1: not within 10 s), %.3f s; %d workers then, %d idle",
	       variant->what, ref.stop, ref.done, ioc.stop, ioc.done,
	       ioc.workers, ioc.idle);
	TH_LOG("populated at the stop and at its report: %ld and %ld MiB with madvise(), %ld and %ld MiB with the ioctl",
	       ref.before_kb / 1024, ref.stop_kb / 1024,
	       ioc.before_kb / 1024, ioc.stop_kb / 1024);
	/* Else this tested nothing */
	if (variant->how == STOP_UNKEPT)
		EXPECT_LE(1, ioc.idle);
	EXPECT_TRUE(WIFEXITED(ref.status) && !WEXITSTATUS(ref.status))
		TH_LOG("madvise: status %#x", ref.status);
	EXPECT_LE(0, ioc.stop);
	/*
	 * Promptly is in work, not in time: the call is far from done when
	 * the stop is reported. In a group stop every thread finishes the
	 * chunk it is on, and one more that it may have begun while the
	 * range was read, then stops; a tracer's trap stops the calling
	 * thread alone, and the workers go on meanwhile.
	 */
	ASSERT_LE(0, ioc.before_kb);
	ASSERT_GT(stop_len(variant->how) / 1024, ioc.before_kb)
		TH_LOG("done before the stop: nothing tested");
	EXPECT_LE(0, ioc.stop_kb);
	EXPECT_GT(stop_len(variant->how) / 1024, ioc.stop_kb);
	if (variant->how != STOP_PTRACE)
		EXPECT_GE((long)((ioc.workers + 1) * 2 * STOP_CHUNK / 1024),
			  ioc.stop_kb - ioc.before_kb);
	EXPECT_TRUE(ioc.right_stop);
	EXPECT_TRUE(WIFEXITED(ioc.status) && !WEXITSTATUS(ioc.status))
		TH_LOG("ioctl: status %#x", ioc.status);
	EXPECT_TRUE(workers_gone(30));
}

/*
 * Findings 5, 6 and 7: workers waiting on a file system that does not
 * answer, a FUSE file of the test's own server (fuse_helpers.h).
 */
FIXTURE(held)
{
	struct fuse_server s;
	pid_t pids[8];
	int nr;
};

FIXTURE_SETUP(held)
{
	int ret = fuse_server_start(&self->s, "wing");

	if (ret == -ENODEV)
		SKIP(return, "no /dev/fuse");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(held)
{
	for (int i = 0; i < self->nr; i++)
		if (self->pids[i] > 0)
			kill(self->pids[i], SIGKILL);
	if (self->s.fd >= 0)
		fuse_release_reads(&self->s);
	for (int i = 0; i < self->nr; i++)
		if (self->pids[i] > 0)
			wait_pid(self->pids[i], 30, NULL, 0);
	fuse_server_stop(&self->s);
}

/* File @n of the mount mapped private and writable, @len bytes, or NULL */
static char *map_fuse(struct fuse_server *s, int n, size_t len)
{
	char path[96], *p;
	int fd = open(fuse_path(s, n, path, sizeof(path)), O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * Issue 46, finding 3: no identity, and no number of them, can take
 * another's workers. Four processes, of uid 65534 twice and of two ids
 * of a subordinate range (100000, 100001: what Debian gives each user),
 * each start a background request of a FUSE file (interleaved: a worker
 * per CPU wanted, max_workers the CPUs) whose READs are held until
 * released, so their workers stay at work, using no CPU. Then a process
 * of uid 65533 populates 64 MiB of anonymous memory, interleaved, with
 * the module's choice of workers: it must get as many as it gets alone,
 * since nothing bounds workers across processes. The holders map the file
 * private: each page is read from the file before it is copied, so the
 * populate waits on the held READ as a shared mapping's would, and
 * nothing is ever written back to the server.
 */
static const uid_t holder_uids[4] = { UID_A, UID_A, 100000, 100001 };

static void reads_holder(struct fuse_server *s, int n, unsigned int workers,
			 uid_t uid, int report, int hold)
{
	struct memprepop_populate req;
	size_t len = FUSE_FILE_SIZE;
	int fd, ret, result;
	char byte, *p;

	interleave_all();
	p = map_fuse(s, n, len);
	fd = open_dev();
	if (!p || fd < 0 || become_uid(uid))
		_exit(2);
	ret = ioc_populate_workers(fd, p, len, MEMPREPOP_F_BACKGROUND, workers,
				   &req);
	if (write(report, &ret, sizeof(ret)) != sizeof(ret))
		_exit(3);
	if (read(hold, &byte, 1) != 1 || ret)
		_exit(4);
	if (bg_wait(fd, 0, &result))
		_exit(5);
	dprintf(1, "# uid %d's request: %d, %u workers\n", uid, result,
		req.workers);
	_exit(result ? 6 : 0);
}

/* Uid 65533's call of 64 MiB: how many workers it had, or -1 */
static int workers_of_uid_b(void)
{
	int rep[2], res = -1, status;
	pid_t pid;

	if (pipe(rep))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct memprepop_populate req;
		size_t len = 64 * MiB;
		int fd = open_dev(), out;
		char *p;

		interleave_all();
		if (fd < 0 || become_uid(UID_B))
			_exit(2);
		p = map_anon(len);
		if (!p)
			_exit(2);
		out = ioc_populate(fd, p, len, 0, &req) ? -1 : (int)req.workers;
		_exit(write(rep[1], &out, sizeof(out)) == sizeof(out) ? 0 : 3);
	}
	close(rep[1]);
	if (!read_within(rep[0], &res, sizeof(res), 60))
		res = -1;
	close(rep[0]);
	if (wait_pid(pid, 10, &status, 0) < 0)
		kill_reap(pid, 30, NULL);
	return res;
}

/* Waits until the workers alive stay as many for 1 s (15 s at most) */
static int settled_workers(void)
{
	int n = scan_workers(NULL, 0), last = n;
	double t0 = now(), since = t0;

	while (now() - t0 < 15 && now() - since < 1) {
		usleep(100 * 1000);
		n = scan_workers(NULL, 0);
		if (n != last) {
			last = n;
			since = now();
		}
	}
	return n;
}

TEST_F_TIMEOUT(held, second_user_gets_its_share_while_another_holds_workers,
	       SLOW)
{
	int ncpu = ncpus(), hold[2], report[2], alone, beside, busy, status;

	RETURN_IF_SKIPPED();
	if (!uid_usable(UID_A) || !uid_usable(UID_B))
		SKIP(return, "cannot become uids %d and %d", UID_A, UID_B);
	ASSERT_TRUE(workers_gone(30));
	alone = workers_of_uid_b();
	ASSERT_LE(1, alone);
	ASSERT_TRUE(workers_gone(30));

	fuse_hold(&self->s, 0);
	ASSERT_EQ(0, pipe(hold));
	ASSERT_EQ(0, pipe(report));
	for (int i = 0; i < 4; i++) {
		pid_t pid = fork();
		int ret = -1;

		ASSERT_LE(0, pid);
		if (!pid)
			reads_holder(&self->s, 1 + i, ncpu, holder_uids[i],
				     report[1], hold[0]);
		self->pids[self->nr++] = pid;
		ASSERT_TRUE(read_within(report[0], &ret, sizeof(ret), 30));
		EXPECT_EQ(0, ret);
	}
	busy = settled_workers();
	beside = workers_of_uid_b();
	TH_LOG("%d CPUs: uid %d alone had %d workers; beside 4 processes of uids %d, %d, %d, %d holding %d workers (%u READs held) it had %d",
	       ncpu, UID_B, alone, holder_uids[0], holder_uids[1],
	       holder_uids[2], holder_uids[3], busy, self->s.nr_held, beside);
	EXPECT_EQ(alone, beside);

	fuse_release_reads(&self->s);
	ASSERT_EQ(4, write(hold[1], "xxxx", 4));
	for (int i = 0; i < self->nr; i++) {
		double took = wait_pid(self->pids[i], 120, &status, 0);

		EXPECT_LE(0, took);
		if (took < 0)
			continue;
		self->pids[i] = 0;
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("holder %d: status %#x", i, status);
	}
}

/*
 * Finding 6: a background request's @control is the caller's memory only
 * while the request is: a FUSE file whose READs are held 3 s is mapped
 * and populated in the background with @control; the file is closed at
 * 300 ms (which cancels the request), a canary written over the whole
 * control block, and 4 s later (the READs answered, the worker past its
 * fault) the canary must be intact: nothing is written there once the
 * file is gone.
 */
TEST_F_TIMEOUT(held, control_untouched_after_close, SLOW)
{
	struct bg {
		struct memprepop_populate req;
		struct memprepop_control ctl;
	} *bg;
	struct memprepop_control canary;
	size_t len = 16 * MiB;
	unsigned int reads;
	double t0;
	char *p;
	int fd;

	RETURN_IF_SKIPPED();
	ASSERT_TRUE(workers_gone(30));
	bg = map_anon(page_size());
	ASSERT_NE(NULL, bg);
	memset(bg, 0, page_size());	/* present: a worker may write it */
	p = map_fuse(&self->s, 1, len);
	ASSERT_NE(NULL, p);
	fd = open_dev();
	ASSERT_LE(0, fd);
	fuse_hold(&self->s, 3000);
	bg->req.addr = (uintptr_t)p;
	bg->req.len = len;
	bg->req.flags = MEMPREPOP_F_BACKGROUND;
	bg->req.control = (uintptr_t)&bg->ctl;
	t0 = now();
	ASSERT_EQ(0, ioctl(fd, MEMPREPOP_IOC_POPULATE, &bg->req));
	while (now() - t0 < 0.3)
		usleep(10 * 1000);
	reads = self->s.reads;
	close(fd);
	memset(&canary, 0x5a, sizeof(canary));
	memcpy(&bg->ctl, &canary, sizeof(canary));
	usleep(4000 * 1000);
	TH_LOG("%u READs at the close; 4 s later control is done %#llx cancel %#x __reserved %#x (canary: 0x5a each byte)",
	       reads, (unsigned long long)bg->ctl.done, bg->ctl.cancel,
	       bg->ctl.__reserved);
	EXPECT_EQ(0, memcmp(&canary, &bg->ctl, sizeof(canary)));
	EXPECT_TRUE(workers_gone(10));
	munmap(p, len);
	munmap(bg, page_size());
}

/*
 * Issue 46, finding 4: a cancel is final and exact. A thread of the caller
 * sets control->cancel 200 ms into a synchronous call over a FUSE file
 * whose READs are held, and releases them 2 s after the cancel. The call
 * must fail with ECANCELED, with populated (and control->done) the present
 * prefix of the range, and with none of its workers still inside one of
 * its chunks: where workers are the caller's threads, which nothing but
 * the process's death takes out of a held READ, the call returns only
 * after the READs are answered (as a thread of the caller inside madvise()
 * would). madvise() has no cancel: nothing to compare with.
 */
struct canceller {
	struct memprepop_control *ctl;
	struct fuse_server *s;
	double start, at, released;
	volatile bool returned;
};

static void *cancel_at_200ms(void *arg)
{
	struct canceller *c = arg;

	while (now() - c->start < 0.2)
		usleep(1000);
	c->at = now();
	__atomic_store_n(&c->ctl->cancel, 1, __ATOMIC_SEQ_CST);
	while (!c->returned && now() - c->at < 2)
		usleep(1000);
	c->released = now();
	fuse_release_reads(c->s);
	return NULL;
}

/* The call over the first @len bytes of file 2, cancelled 200 ms in */
static void held_cancel(struct __test_metadata *_metadata, struct fuse_server *s,
			size_t len)
{
	struct memprepop_populate req = { 0 };
	struct canceller c = { 0 };
	double returned;
	size_t prefix;
	pthread_t tid;
	int fd, ret;
	char *p;

	ASSERT_TRUE(workers_gone(30));
	c.ctl = map_anon(page_size());
	ASSERT_NE(NULL, c.ctl);
	memset(c.ctl, 0, page_size());
	p = map_fuse(s, 2, len);
	ASSERT_NE(NULL, p);
	fd = open_dev();
	ASSERT_LE(0, fd);
	fuse_hold(s, 0);
	c.s = s;
	req.addr = (uintptr_t)p;
	req.len = len;
	req.control = (uintptr_t)c.ctl;
	c.start = now();
	ASSERT_EQ(0, pthread_create(&tid, NULL, cancel_at_200ms, &c));
	ret = ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) ? -errno : 0;
	returned = now();
	prefix = present_prefix(p, len);
	c.returned = true;
	pthread_join(tid, NULL);
	TH_LOG("%zu MiB cancelled at %.3f s: %s %.3f s after the cancel (READs released %.3f s after it), %llu populated, %zu present from the start, done %llu, %u workers",
	       len / MiB, c.at - c.start, strerror(-ret), returned - c.at,
	       c.released - c.at, (unsigned long long)req.populated, prefix,
	       (unsigned long long)c.ctl->done, req.workers);
	EXPECT_EQ(-ECANCELED, ret);
	EXPECT_LT(0, c.at);
	/* Whoever faults the held page, worker or caller, waits for it */
	EXPECT_LE(c.released, returned);
	EXPECT_EQ(prefix, req.populated);
	EXPECT_EQ(req.populated, c.ctl->done);
	close(fd);
	munmap(p, len);
}

/* The whole file: the caller's workers fault it */
TEST_F_TIMEOUT(held, cancel_of_a_held_call_is_exact, SLOW)
{
	RETURN_IF_SKIPPED();
	held_cancel(_metadata, &self->s, FUSE_FILE_SIZE);
}

/*
 * 16 MiB, which the caller may fault alone (mpp_crew_alone()): it reads
 * the cancel between its chunks as well as within one.
 */
TEST_F_TIMEOUT(held, cancel_of_a_small_held_call_is_exact, SLOW)
{
	RETURN_IF_SKIPPED();
	held_cancel(_metadata, &self->s, 16 * MiB);
}

/*
 * Issue 46, finding 2: once close() returns, no worker of the file is
 * left. A single-threaded child populates 16 MiB with workers on its file,
 * closes it, and at once calls unshare(CLONE_NEWUSER), which the kernel
 * refuses (EINVAL) to a process with another thread: it must succeed, in
 * each of UNSHARE_TRIES children. The reference, measured alike: a child
 * that populates with madvise() in a thread it joined, then unshares,
 * which fails often (pthread_join() returns as the thread leaves its mm,
 * before it leaves the thread list): logged, as what a thread gives.
 * Skipped where a process that never had a thread cannot unshare either
 * (a kernel without user namespaces, as the debug kernel is).
 */
#define UNSHARE_TRIES	30

static int try_unshare(void)
{
	return unshare(CLONE_NEWUSER) ? errno : 0;
}

/* A child populates by @by_ioctl, then unshares: its errno, or 200 */
static int populate_then_unshare(bool by_ioctl, unsigned int *workers)
{
	int status, rep[2];
	pid_t pid;

	if (pipe(rep))
		return 200;
	pid = fork();
	if (pid < 0)
		return 200;
	if (!pid) {
		struct memprepop_populate req = { 0 };
		size_t len = 16 * MiB;
		char *p = map_anon(len);
		int fd = -1;

		if (!p)
			_exit(200);
		if (by_ioctl) {
			fd = open_dev();
			if (fd < 0 || ioc_populate(fd, p, len, 0, &req))
				_exit(200);
			close(fd);
		} else if (madvise_in_thread(p, len)) {
			_exit(200);
		}
		status = try_unshare();
		if (write(rep[1], &req.workers, sizeof(req.workers)) < 0)
			_exit(200);
		_exit(status);
	}
	close(rep[1]);
	if (!read_within(rep[0], workers, sizeof(*workers), 60))
		*workers = 0;
	close(rep[0]);
	if (wait_pid(pid, 60, &status, 0) < 0 || !WIFEXITED(status))
		return 200;
	return WEXITSTATUS(status);
}

TEST_F_TIMEOUT(wing, unshare_user_ns_right_after_close, SLOW)
{
	int failed[2] = { 0, 0 }, with_workers = 0, status;
	pid_t pid;

	ASSERT_TRUE(workers_gone(30));
	/* A child that never had a thread: can it unshare at all? */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(try_unshare());
	ASSERT_LE(0, wait_pid(pid, 60, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status))
		SKIP(return, "unshare(CLONE_NEWUSER) of a single-threaded process: %s (CONFIG_USER_NS?)",
		     strerror(WEXITSTATUS(status)));
	for (int i = 0; i < 2 * UNSHARE_TRIES; i++) {
		bool by_ioctl = i & 1;
		unsigned int workers = 0;
		int err = populate_then_unshare(by_ioctl, &workers);

		ASSERT_NE(200, err);
		if (err)
			failed[by_ioctl]++;
		if (err && err != EINVAL)
			TH_LOG("unshare(CLONE_NEWUSER): %s", strerror(err));
		with_workers += by_ioctl && workers;
	}
	TH_LOG("unshare(CLONE_NEWUSER) failed right after close() of the file in %d of %d children (%d had workers), right after pthread_join() of a madvise() thread in %d of %d",
	       failed[1], UNSHARE_TRIES, with_workers, failed[0], UNSHARE_TRIES);
	EXPECT_EQ(0, failed[1]);
	/* Else this tested nothing */
	EXPECT_LT(0, with_workers);
}

/*
 * Two threads of a process close its two descriptors of the file at once:
 * the close that returns last returns only once the process has no worker
 * of the file left, whichever of the two stops them (the first to take its
 * descriptor out may find the other still there, and return at once).
 * Checked right after each close, in 20 children, each with a worker per
 * node kept from a call.
 */
struct closer {
	pthread_barrier_t *go;
	int *returned;
	int fd;
	int left;
	int order;
};

static void *close_at_once(void *arg)
{
	struct closer *c = arg;

	pthread_barrier_wait(c->go);
	close(c->fd);
	c->order = __atomic_add_fetch(c->returned, 1, __ATOMIC_SEQ_CST);
	c->left = own_workers();
	return NULL;
}

TEST_F_TIMEOUT(wing, close_by_two_threads_leaves_no_worker, SLOW)
{
	int early = 0, had = 0;

	ASSERT_TRUE(workers_gone(30));
	for (int i = 0; i < 20; i++) {
		int status;
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			struct memprepop_populate req;
			pthread_barrier_t go;
			int returned = 0;
			struct closer a = { .go = &go, .returned = &returned };
			struct closer b = { .go = &go, .returned = &returned };
			size_t len = 32 * MiB;
			char *p = map_anon_both(len);
			pthread_t t;

			a.fd = open_dev();
			b.fd = dup(a.fd);
			if (!p || a.fd < 0 || b.fd < 0 ||
			    ioc_populate(a.fd, p, len, 0, &req))
				_exit(200);
			if (own_workers() < 1)
				_exit(100);
			pthread_barrier_init(&go, NULL, 2);
			if (pthread_create(&t, NULL, close_at_once, &b))
				_exit(200);
			close_at_once(&a);
			pthread_join(t, NULL);
			_exit((a.order == 2 ? a.left : b.left) ? 1 : 0);
		}
		ASSERT_LE(0, wait_pid(pid, 60, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_NE(200, WEXITSTATUS(status));
		had += WEXITSTATUS(status) != 100;
		early += WEXITSTATUS(status) == 1;
	}
	TH_LOG("the second close returned with workers left in %d of %d children with workers",
	       early, had);
	EXPECT_LT(0, had);
	EXPECT_EQ(0, early);
}

/*
 * A call that began before another thread of its process closed the
 * descriptor it was made through: the close's flush finds nothing of the
 * process on the file, and the call goes on to find its workers. While
 * another process holds the file (a child that inherited it), nothing may
 * stay of the closed one: no worker of the process once the call returns
 * (else it stays until the process exits, and the other process's last
 * close stops it, waiting for a thread of another process), and no
 * background request of it on the file (else the other process's own
 * start gets EBUSY for as long as the closer lives). The call's arguments
 * are on a page armed for userfaultfd, so that it waits in their copy
 * until the close is done. 32 MiB bound to both nodes: a worker per node.
 */
FIXTURE(racing_close)
{
};

FIXTURE_VARIANT(racing_close)
{
	bool background;
};

FIXTURE_VARIANT_ADD(racing_close, sync)
{
	.background = false,
};

FIXTURE_VARIANT_ADD(racing_close, background)
{
	.background = true,
};

FIXTURE_SETUP(racing_close)
{
}

FIXTURE_TEARDOWN(racing_close)
{
}

struct racer {
	int fd;
	struct memprepop_populate *args;
	int ret;
};

static void *racing_call(void *arg)
{
	struct racer *r = arg;

	r->ret = ioctl(r->fd, MEMPREPOP_IOC_POPULATE, r->args) ? -errno : 0;
	return NULL;
}

/* Holds the file until told, then starts a background request on it */
static void other_holder(int fd, int go, int report)
{
	char *q = map_anon(4 * MiB), byte;
	struct memprepop_populate req;
	int ret = -ENOMEM, result;

	if (read(go, &byte, 1) != 1)
		_exit(2);
	if (q)
		ret = ioc_populate(fd, q, 4 * MiB, MEMPREPOP_F_BACKGROUND,
				   &req);
	if (!ret)
		bg_wait(fd, 0, &result);
	_exit(write(report, &ret, sizeof(ret)) == sizeof(ret) ? 0 : 2);
}

/*
 * Forks other_holder() on @fd, gone with its parent whatever way that
 * ends: its pid, or -1; the pipe to tell it to go in *@go, the one it
 * reports on in *@report
 */
static pid_t fork_other_holder(int fd, int *go, int *report)
{
	int g[2], r[2];
	pid_t pid;

	if (pipe(g))
		return -1;
	if (pipe(r)) {
		close(g[0]);
		close(g[1]);
		return -1;
	}
	pid = fork();
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(2);
		close(g[1]);
		close(r[0]);
		other_holder(fd, g[0], r[1]);
	}
	close(g[0]);
	close(r[1]);
	*go = g[1];
	*report = r[0];
	if (pid < 0) {
		close(g[1]);
		close(r[0]);
	}
	return pid;
}

static void racing_close_child(bool background)
{
	size_t len = 32 * MiB, ps = page_size();
	char *p = map_anon_both(len), *page = map_anon(ps);
	char *src = calloc(1, ps);
	struct memprepop_populate *args = (void *)src;
	struct pollfd pfd = { .events = POLLIN };
	struct racer r = { .fd = open_dev() };
	int go, rep, other = -1, uffd, left, status;
	struct uffdio_copy copy;
	struct uffd_msg msg;
	pthread_t t;
	pid_t holder;

	if (!p || !page || !src || r.fd < 0)
		_exit(2);
	args->addr = (uintptr_t)p;
	args->len = len;
	args->flags = background ? MEMPREPOP_F_BACKGROUND : 0;
	holder = fork_other_holder(r.fd, &go, &rep);
	if (holder < 0)
		_exit(2);
	uffd = uffd_arm(page, ps, 0);
	if (uffd < 0) {
		kill(holder, SIGKILL);
		_exit(KSFT_SKIP);
	}
	r.args = (void *)page;
	if (pthread_create(&t, NULL, racing_call, &r))
		_exit(2);
	/* The call waits for its arguments: the descriptor is closed */
	pfd.fd = uffd;
	if (poll(&pfd, 1, 30 * 1000) != 1 ||
	    read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		_exit(2);
	close(r.fd);
	copy = (struct uffdio_copy) {
		.dst = (uintptr_t)page, .src = (uintptr_t)src, .len = ps,
	};
	if (ioctl(uffd, UFFDIO_COPY, &copy))
		_exit(2);
	pthread_join(t, NULL);
	left = own_workers();
	if (write(go, "x", 1) != 1 ||
	    !read_within(rep, &other, sizeof(other), 60))
		other = -ETIMEDOUT;
	waitpid(holder, &status, 0);
	dprintf(1, "# %s call through a descriptor closed meanwhile: %s, %llu of %zu populated; %d workers of the process left after it; the other holder's background start: %s\n",
		background ? "a background" : "a synchronous", strerror(-r.ret),
		(unsigned long long)r.args->populated, len, left,
		strerror(-other));
	if (r.ret || (!background && r.args->populated != len))
		_exit(3);
	if (left)
		_exit(1);
	_exit(other ? 4 : 0);
}

TEST_F_TIMEOUT(racing_close, call_racing_a_close_leaves_nothing, SLOW)
{
	int status;
	pid_t pid;

	ASSERT_TRUE(workers_gone(30));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		racing_close_child(variant->background);
	if (wait_pid(pid, 120, &status, 0) < 0) {
		log_tasks(_metadata, "stuck after 120 s", pid);
		kill_reap(pid, 30, &status);
		ASSERT_TRUE(false);
	}
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == KSFT_SKIP)
		SKIP(return, "no userfaultfd");
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_TRUE(workers_gone(30));
}

/*
 * A close of a descriptor of the file by the process whose background
 * request a thread of it is reaping (the file's flush, main.c): the
 * request is cancelled and given up when that reap ends, whatever way it
 * ends. Here the reap is MEMPREPOP_WAIT_NOHANG, which faults the request's
 * page armed for userfaultfd (the close is made while it waits for the
 * handler) and then finds the workers still in READs the FUSE server
 * holds: EAGAIN. A child holds the file: its own background start must
 * succeed (before, the request went back on the file, and the child got
 * EBUSY, and EPERM from a wait, for as long as the closer lived), and its
 * wait reap its own request. The close waits for the process's workers,
 * which wait for the READs: it is made by a thread of its own, and the
 * handler answers once that thread waits in it.
 */
struct reaper {
	int fd;
	int ret;
	int result;
	pid_t tid;
	int closed;
};

static void *nohang_reap(void *arg)
{
	struct reaper *r = arg;

	r->ret = bg_wait(r->fd, MEMPREPOP_WAIT_NOHANG, &r->result);
	return NULL;
}

static void *close_dev(void *arg)
{
	struct reaper *r = arg;

	__atomic_store_n(&r->tid, gettid(), __ATOMIC_SEQ_CST);
	r->closed = close(r->fd) ? -errno : 0;
	return NULL;
}

/* Is thread @tid of this process asleep (S or D) within @secs? */
static bool thread_sleeps(pid_t tid, double secs)
{
	double t0 = now();
	char path[64], stat[512], *s;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	do {
		memset(stat, 0, sizeof(stat));
		if (tid > 0 && read_file(path, stat, sizeof(stat) - 1) > 0) {
			s = strrchr(stat, ')');
			if (s && (s[2] == 'S' || s[2] == 'D'))
				return true;
		}
		usleep(10 * 1000);
	} while (now() - t0 < secs);
	return false;
}

/*
 * A process that shares its descriptor table (clone(CLONE_FILES), no
 * CLONE_THREAD) closes @fd for it: 0 or -errno
 */
static int close_in_sharer(int fd)
{
	int status;
	pid_t pid = syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, NULL, NULL, 0);

	if (!pid)
		_exit(close(fd) ? 1 : 0);
	if (pid < 0)
		return -errno;
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

static void close_while_reaped(struct __test_metadata *_metadata,
			       FIXTURE_DATA(held) *self, bool by_sharer)
{
	size_t len = 16 * MiB, ps = page_size();
	struct memprepop_populate req = { 0 };
	struct memprepop_range r[2] = { 0 };
	struct pollfd pfd = { .events = POLLIN };
	struct reaper rp = { .ret = 1, .closed = 1 };
	int go, rep, uffd, other = 1, status;
	struct uffdio_copy copy;
	struct uffd_msg msg;
	pthread_t reap, closer;
	char *p, *page, *src;
	pid_t holder;
	double t0;

	ASSERT_TRUE(workers_gone(30));
	p = map_fuse(&self->s, 3, len);
	page = map_anon(ps);
	src = calloc(1, ps);
	ASSERT_TRUE(p && page && src);
	uffd = uffd_arm(page, ps, 0);
	if (uffd < 0)
		SKIP(return, "no userfaultfd");
	rp.fd = open_dev();
	ASSERT_LE(0, rp.fd);
	holder = fork_other_holder(rp.fd, &go, &rep);
	ASSERT_LE(0, holder);
	self->pids[self->nr++] = holder;

	fuse_hold(&self->s, 0);
	r[0] = (struct memprepop_range) { .addr = (uintptr_t)page, .len = ps };
	r[1] = (struct memprepop_range) { .addr = (uintptr_t)p, .len = len };
	req.ranges = (uintptr_t)r;
	req.nr_ranges = 2;
	req.range_size = sizeof(r[0]);
	req.flags = MEMPREPOP_F_BACKGROUND;
	ASSERT_EQ(0, ioctl(rp.fd, MEMPREPOP_IOC_POPULATE, &req));
	/* Its workers wait in READs held until released */
	t0 = now();
	while (!self->s.reads && now() - t0 < 30)
		usleep(10 * 1000);
	ASSERT_LT(0, self->s.reads);

	ASSERT_EQ(0, pthread_create(&reap, NULL, nohang_reap, &rp));
	pfd.fd = uffd;
	ASSERT_EQ(1, poll(&pfd, 1, 30 * 1000));
	ASSERT_EQ(sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	/* The reaper waits for the page: its process closes the file */
	if (by_sharer) {
		rp.closed = close_in_sharer(rp.fd);
	} else {
		ASSERT_EQ(0, pthread_create(&closer, NULL, close_dev, &rp));
		t0 = now();
		while (!__atomic_load_n(&rp.tid, __ATOMIC_SEQ_CST) &&
		       now() - t0 < 10)
			usleep(1000);
		ASSERT_TRUE(thread_sleeps(rp.tid, 30));
	}
	copy = (struct uffdio_copy) {
		.dst = (uintptr_t)page, .src = (uintptr_t)src, .len = ps,
	};
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_COPY, &copy));
	pthread_join(reap, NULL);

	ASSERT_EQ(1, write(go, "x", 1));
	if (!read_within(rep, &other, sizeof(other), 60))
		other = -ETIMEDOUT;
	TH_LOG("%u READs held; the reap of a request whose file %s closed meanwhile: %s; the other holder's background start: %s",
	       self->s.nr_held,
	       by_sharer ? "a process sharing its descriptors" : "its process",
	       strerror(-rp.ret), strerror(-other));
	EXPECT_EQ(-EAGAIN, rp.ret);
	EXPECT_EQ(0, other);

	fuse_release_reads(&self->s);
	if (!by_sharer)
		pthread_join(closer, NULL);
	EXPECT_EQ(0, rp.closed);
	EXPECT_LE(0, wait_pid(holder, 60, &status, 0));
	self->nr--;
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("holder: status %#x", status);
	EXPECT_TRUE(workers_gone(30));
	close(uffd);
	munmap(p, len);
	munmap(page, ps);
	free(src);
}

TEST_F_TIMEOUT(held, close_while_reaped_frees_the_file, SLOW)
{
	RETURN_IF_SKIPPED();
	close_while_reaped(_metadata, self, false);
}

/*
 * The same, closed by a process that shares the reaper's descriptor
 * table, whose flush knows nothing of the reaper's claim: the reap finds
 * its process no longer holds the file, and gives the request up.
 */
TEST_F_TIMEOUT(held, close_by_a_sharer_while_reaped_frees_the_file, SLOW)
{
	RETURN_IF_SKIPPED();
	close_while_reaped(_metadata, self, true);
}

/*
 * A caller signalled every 2 ms (a handler, as a profiling timer would
 * run) still gets its call done: 256 MiB populated through the ioctl and
 * with madvise() in the calling thread, each under the same timer, in a
 * child. Both must succeed with every page present, and the ioctl, whose
 * caller leaves for a signal once the call has run 100 ms, must not take
 * more than three times what the same call takes without the timer
 * (madvise is never left for a signal that is not fatal; its time is
 * logged, not a bound: under KASAN the ioctl's workers cost more than its
 * single thread whatever the signals). The restarted syscall resumes the
 * call it left: the module's trace shows one start for the whole call,
 * however many signals it took. (A call started
 * anew at each signal walks again what it populated, and never ends where
 * that walk takes longer than the 100 ms: it did under KASAN.) Where the
 * ioctl's pair is out of that bound it is timed once more, and the better
 * of each kept: a stall of the guest during one call is not the call's
 * (the debug kernel once gave 14.8 s under the timer against 4.2 s
 * without, and 4.7 against 5.1 s in the run before).
 */
static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	alarms++;
}

static double populate_under_timer(bool by_ioctl, bool timer, int *ret)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct memprepop_populate req;
	size_t len = 256 * MiB;
	char *p = map_anon(len);
	int fd = open_dev();
	double t0, took;

	if (!p || fd < 0 || sigaction(SIGALRM, &sa, NULL) ||
	    (timer && setitimer(ITIMER_REAL, &it, NULL)))
		return -1;
	t0 = now();
	*ret = by_ioctl ? ioc_populate(fd, p, len, 0, &req) :
			  madvise_populate_write(p, len);
	took = now() - t0;
	setitimer(ITIMER_REAL, &off, NULL);
	if (present_pages(p, len) != len / page_size())
		*ret = -EFAULT;
	close(fd);
	munmap(p, len);
	return took;
}

#define START_EVENT	"/sys/kernel/tracing/events/memprepop/memprepop_populate_start/enable"

/* Calls started since the trace was cleared, -1 without tracefs */
static int trace_starts(void)
{
	static char buf[1 << 16];
	int n = 0;

	if (read_file("/sys/kernel/tracing/trace", buf, sizeof(buf)) <= 0)
		return -1;
	for (char *l = strstr(buf, "memprepop_populate_start:"); l;
	     l = strstr(l + 1, "memprepop_populate_start:"))
		n++;
	return n;
}

TEST_F_TIMEOUT(wing, call_under_a_signal_storm_completes, SLOW)
{
	/* madvise under the timer, the ioctl under it, the ioctl without */
	double took[3] = { -1, -1, -1 };
	int status, starts = -1, run;
	bool traced;

	ASSERT_TRUE(workers_gone(30));
	for (run = 0; run < 5; run++) {
		/* The ioctl's two again, once, when out of bounds: the best kept */
		int slot = run < 3 ? run : run - 2;
		bool by_ioctl = slot > 0, timer = slot < 2;
		int rep[2], res[2] = { -1, -1 };
		pid_t pid;

		if (run == 3 && took[1] <= 3 * took[2])
			break;
		traced = run == 1 &&
			 !write_file("/sys/kernel/tracing/trace", "") &&
			 !write_file(START_EVENT, "1");
		ASSERT_EQ(0, pipe(rep));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			int ret = -1;
			double t = populate_under_timer(by_ioctl, timer, &ret);

			res[0] = ret;
			res[1] = (int)(t * 1000);
			dprintf(1, "# %s %s a 2 ms timer: %d in %.3f s, %d signals\n",
				by_ioctl ? "ioctl" : "madvise",
				timer ? "under" : "without", ret, t, (int)alarms);
			_exit(write(rep[1], res, sizeof(res)) != sizeof(res));
		}
		close(rep[1]);
		EXPECT_TRUE(read_within(rep[0], res, sizeof(res), 300));
		close(rep[0]);
		ASSERT_LE(0, wait_pid(pid, 60, &status, 0));
		EXPECT_EQ(0, res[0]);
		if (took[slot] < 0 || res[1] / 1000.0 < took[slot])
			took[slot] = res[1] / 1000.0;
		if (traced) {
			write_file(START_EVENT, "0");
			starts = trace_starts();
		}
	}
	TH_LOG("madvise %.3f s, ioctl %.3f s under the timer, ioctl %.3f s without (the best of %d each); the ioctl's call started %d times (-1: no tracefs)",
	       took[0], took[1], took[2], run > 3 ? 2 : 1, starts);
	EXPECT_LT(0, took[0]);
	EXPECT_LT(0, took[2]);
	EXPECT_LE(took[1], 3 * took[2]);
	if (starts >= 0)
		EXPECT_EQ(1, starts);
}

/*
 * A thread that leaves its call for a signal and does not come back to it
 * (its handler siglongjmp()s out) leaves it going on only until its next
 * call on the file: a child populates 1 GiB of 4K pages, a one-shot timer
 * 300 ms in jumps out of the call, the child populates 2 MiB through the
 * same file, which gives up the left call and returns once none of its
 * workers is in one of its chunks: from then on no page of the 1 GiB is
 * populated any more (counted at the return and 500 ms later), and the
 * file closes. (madvise() cannot be left so: its thread runs the handler
 * once the whole range is populated.)
 */
static sigjmp_buf left_env;

static void on_alarm_jump(int sig)
{
	siglongjmp(left_env, 1);
}

static void left_child(int rep)
{
	struct sigaction sa = { .sa_handler = on_alarm_jump };
	struct itimerval it = { { 0, 0 }, { 0, 300 * 1000 } };
	struct memprepop_populate req;
	size_t len = 1024 * MiB, small = 2 * MiB;
	long res[4] = { -1, -1, -1, -1 };
	char *p = map_anon(len), *q = map_anon(small);
	int fd = open_dev();

	if (!p || !q || fd < 0 || sigaction(SIGALRM, &sa, NULL))
		_exit(2);
	no_thp(p, len);
	if (!sigsetjmp(left_env, 1)) {
		if (setitimer(ITIMER_REAL, &it, NULL))
			_exit(3);
		ioc_populate(fd, p, len, 0, &req);
		/* Done before the timer: nothing was left */
		res[0] = -2;
	} else {
		res[0] = present_pages(p, len);
		res[1] = ioc_populate(fd, q, small, 0, &req);
		res[2] = present_pages(p, len);
		usleep(500 * 1000);
		res[3] = present_pages(p, len);
	}
	close(fd);
	_exit(write(rep, res, sizeof(res)) != sizeof(res));
}

/*
 * Runs @child (left_child(), left_control_child()) in a process of its own
 * and reads its four results into @res; @over when the call was over
 * before the timer, nothing left
 */
static void run_left_child(struct __test_metadata *_metadata,
			   void (*child)(int rep), long res[4], bool *over)
{
	int rd, status;
	pid_t pid;

	ASSERT_TRUE(workers_gone(30));
	pid = fork_reporting(child, &rd);
	ASSERT_LE(0, pid);
	EXPECT_TRUE(read_within(rd, res, 4 * sizeof(res[0]), 120));
	close(rd);
	ASSERT_LE(0, wait_pid(pid, 30, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	*over = res[0] == -2;
}

TEST_F_TIMEOUT(wing, call_left_by_longjmp_stops_at_the_next_call, SLOW)
{
	long res[4] = { -1, -1, -1, -1 }, total = 1024 * MiB / page_size();
	bool over = false;

	run_left_child(_metadata, left_child, res, &over);
	if (over)
		SKIP(return, "the call was over before the timer");
	TH_LOG("of %ld pages: %ld present at the jump, %ld after the next call, %ld 500 ms later; the next call: %ld",
	       total, res[0], res[2], res[3], res[1]);
	EXPECT_EQ(0, res[1]);
	EXPECT_LT(res[0], total);
	EXPECT_EQ(res[2], res[3]);
	EXPECT_GT(total, res[3]);
	EXPECT_TRUE(workers_gone(30));
}

/*
 * The @control of a call its thread left by siglongjmp() is not written any
 * more: it was the caller's, on its stack in the common case, a frame gone
 * with the jump. A child populates 1 GiB of 4K pages with @control in a
 * page of its own; a one-shot timer 300 ms in jumps out of the call; the
 * child zeroes @done, and 1 s later, while the left call's workers have
 * gone on populating (the pages present grew), @done must still be zero.
 * Then a call on the same file gives the left call up.
 */
static void left_control_child(int rep)
{
	struct sigaction sa = { .sa_handler = on_alarm_jump };
	struct itimerval it = { { 0, 0 }, { 0, 300 * 1000 } };
	struct memprepop_populate req;
	size_t len = 1024 * MiB, small = 2 * MiB;
	long res[4] = { -1, -1, -1, -1 };
	char *p = map_anon(len), *q = map_anon(small);
	struct memprepop_control *ctl = map_anon(page_size());
	int fd = open_dev();

	if (!p || !q || !ctl || fd < 0 || sigaction(SIGALRM, &sa, NULL))
		_exit(2);
	no_thp(p, len);
	if (!sigsetjmp(left_env, 1)) {
		if (setitimer(ITIMER_REAL, &it, NULL))
			_exit(3);
		memset(&req, 0, sizeof(req));
		req.addr = (uintptr_t)p;
		req.len = len;
		req.control = (uintptr_t)ctl;
		ioctl(fd, MEMPREPOP_IOC_POPULATE, &req);
		/* Done before the timer: nothing was left */
		res[0] = -2;
	} else {
		__atomic_store_n(&ctl->done, 0, __ATOMIC_RELAXED);
		res[0] = present_pages(p, len);
		usleep(1000 * 1000);
		res[1] = present_pages(p, len);
		res[2] = __atomic_load_n(&ctl->done, __ATOMIC_RELAXED);
		res[3] = ioc_populate(fd, q, small, 0, &req);
	}
	close(fd);
	_exit(write(rep, res, sizeof(res)) != sizeof(res));
}

TEST_F_TIMEOUT(wing, control_of_a_call_left_by_longjmp_is_not_written, SLOW)
{
	long res[4] = { -1, -1, -1, -1 };
	bool over = false;

	run_left_child(_metadata, left_control_child, res, &over);
	if (over)
		SKIP(return, "the call was over before the timer");
	TH_LOG("pages present at the jump %ld, 1 s later %ld; @done written meanwhile: %ld; the next call: %ld",
	       res[0], res[1], res[2], res[3]);
	EXPECT_LT(res[0], res[1]) TH_LOG("the left call did not go on");
	EXPECT_EQ(0, res[2]);
	EXPECT_EQ(0, res[3]);
	EXPECT_TRUE(workers_gone(30));
}

/*
 * A call left for a signal is the file's until its thread resumes it: a
 * close by another thread meanwhile cancels it, and the resumed syscall
 * finds the descriptor gone (EBADF). A child's thread populates 1 GiB;
 * 200 ms in, a SIGUSR1 whose handler sleeps 400 ms makes it leave; 200 ms
 * later the main thread closes the descriptor. The child must exit 0 with
 * the call's EBADF, and leave no worker. Whether the request outlives the
 * file (a use after free) is for KASAN in the debug kernel to say.
 */
static void on_usr1_sleep(int sig)
{
	usleep(400 * 1000);
}

static void close_while_left_child(void)
{
	struct sigaction sa = { .sa_handler = on_usr1_sleep };
	struct ioc_call c = { .len = 1024 * MiB };
	pthread_t t;

	c.fd = open_dev();
	c.p = map_anon(c.len);
	if (c.fd < 0 || !c.p || sigaction(SIGUSR1, &sa, NULL))
		_exit(2);
	no_thp(c.p, c.len);
	if (pthread_create(&t, NULL, ioc_thread, &c))
		_exit(3);
	usleep(200 * 1000);
	pthread_kill(t, SIGUSR1);
	usleep(200 * 1000);
	close(c.fd);
	pthread_join(t, NULL);
	dprintf(1, "# the call: %d (%s), %zu of %zu pages present\n", c.ret,
		strerror(-c.ret), present_pages(c.p, c.len),
		c.len / page_size());
	/* Done before the signal came: nothing was left */
	_exit(c.ret == -EBADF ? 0 : c.ret ? 4 : 5);
}

TEST_F_TIMEOUT(wing, close_while_a_call_is_left, SLOW)
{
	int status;
	pid_t pid;

	ASSERT_TRUE(workers_gone(30));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		close_while_left_child();
	ASSERT_LE(0, wait_pid(pid, 120, &status, 0));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 5)
		SKIP(return, "the call was over before the signal");
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x", status);
	EXPECT_TRUE(workers_gone(30));
}

/*
 * Finding 10: a process whose every user thread has exited is not kept
 * alive by its idle workers. A child passes its file to the test (which
 * keeps it open), populates 16 MiB with workers kept, then its only user
 * thread leaves with SYS_exit: the leader a zombie, the workers (its
 * threads, when they are the caller's) idle, stopped as the thread's
 * descriptor table is closed. It must be reaped within 2 s. The same with
 * madvise() in a thread it joined first is reaped at once.
 */
static double leave_by_sys_exit(struct __test_metadata *_metadata,
				bool by_ioctl, double limit)
{
	int sv[2], fd, status = 0, threads;
	double took;
	char byte;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct memprepop_populate req;
		size_t len = 16 * MiB;
		int dev = open_dev();
		char *p = map_anon(len);

		close(sv[0]);
		if (!p || dev < 0 || send_fd(sv[1], dev))
			_exit(2);
		if (by_ioctl ? ioc_populate(dev, p, len, 0, &req) :
		    madvise_in_thread(p, len))
			_exit(3);
		if (write(sv[1], "x", 1) != 1)
			_exit(4);
		syscall(SYS_exit, 0);
	}
	close(sv[1]);
	fd = recv_fd(sv[0]);
	if (fd < 0 || !read_within(sv[0], &byte, 1, 60)) {
		kill_reap(pid, 30, NULL);
		close(sv[0]);
		return -1;
	}
	usleep(50 * 1000);
	threads = task_count(pid);
	took = wait_pid(pid, limit - 0.05, &status, 0);
	if (took >= 0) {
		took += 0.05;
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("status %#x", status);
	} else {
		log_tasks(_metadata, "left with workers only", pid);
		close(fd);
		fd = -1;
		if (wait_pid(pid, 10, &status, 0) < 0)
			kill_reap(pid, 30, NULL);
	}
	TH_LOG("%s: %d threads listed 50 ms after the last user thread left; reaped after %.3f s (-1: not within %.1f s)",
	       by_ioctl ? "ioctl" : "madvise", threads, took, limit);
	if (fd >= 0)
		close(fd);
	close(sv[0]);
	return took;
}

TEST_F_TIMEOUT(wing, process_of_only_workers_is_reaped, SLOW)
{
	double limit = 2;

	ASSERT_TRUE(workers_gone(30));
	leave_by_sys_exit(_metadata, false, limit);
	EXPECT_LE(0, leave_by_sys_exit(_metadata, true, limit));
	EXPECT_TRUE(workers_gone(10));
}

/*
 * Finding 12: the userfaultfd handler of a request's armed part calls
 * into the same file while the request's wait, in another thread, faults
 * that part and waits for it. A background request of 32 MiB whose
 * second half is armed (its faults left to the reaping thread); on its
 * first fault the handler calls MEMPREPOP_IOC_WAIT with NOHANG and starts
 * another background request on the file: both must fail with EBUSY
 * within 1 s (another thread is inside the wait for that request), then
 * the handler answers every fault, and the main wait completes with 0
 * and every page present. Run in a child, killed after 30 s when stuck.
 */
struct uwait {
	struct uffd_handler h;
	struct memprepop_populate req;	/* the handler's own request */
	int fd;
	char *other;
	int nohang, busy;		/* what the handler's calls returned */
	double nohang_s, busy_s;
	bool faulted;
};

static void *uwait_handler(void *arg)
{
	struct uwait *u = arg;
	struct pollfd pfd = { .fd = u->h.uffd, .events = POLLIN };
	struct uffdio_copy copy = { 0 };
	struct uffd_msg msg;
	int result;
	double t;

	if (poll(&pfd, 1, 60 * 1000) != 1 ||
	    read(u->h.uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	u->faulted = true;
	t = now();
	u->nohang = bg_wait(u->fd, MEMPREPOP_WAIT_NOHANG, &result);
	u->nohang_s = now() - t;
	t = now();
	u->busy = ioc_populate(u->fd, u->other, 4 * MiB,
			       MEMPREPOP_F_BACKGROUND, &u->req);
	u->busy_s = now() - t;
	copy.dst = msg.arg.pagefault.address & ~(page_size() - 1);
	copy.src = (uintptr_t)u->h.zero;
	copy.len = page_size();
	if (!ioctl(u->h.uffd, UFFDIO_COPY, &copy)) {
		u->h.faults++;
	} else {
		struct uffdio_range wake = {
			.start = copy.dst, .len = page_size(),
		};

		ioctl(u->h.uffd, UFFDIO_WAKE, &wake);
	}
	return uffd_serve(&u->h);
}

static void uffd_wait_child(void)
{
	size_t len = 32 * MiB, half = len / 2;
	struct memprepop_populate req;
	struct uwait u = { 0 };
	int ret, result = -1;
	char *p = map_anon(len);
	pthread_t tid;

	u.fd = open_dev();
	u.other = map_anon(4 * MiB);
	u.h.zero = calloc(1, page_size());
	if (!p || u.fd < 0 || !u.other || !u.h.zero)
		_exit(2);
	u.h.uffd = uffd_arm(p + half, half, 0);
	if (u.h.uffd < 0)
		_exit(KSFT_SKIP);
	if (pthread_create(&tid, NULL, uwait_handler, &u))
		_exit(2);
	if (ioc_populate(u.fd, p, len, MEMPREPOP_F_BACKGROUND, &req))
		_exit(3);
	ret = bg_wait(u.fd, 0, &result);
	u.h.stop = true;
	pthread_join(tid, NULL);
	dprintf(1, "# the handler's NOHANG wait: %s in %.3f s; its background call: %s in %.3f s; the wait: %d, result %d, %llu of %zu populated, %d faults answered\n",
		strerror(-u.nohang), u.nohang_s, strerror(-u.busy), u.busy_s,
		ret, result, (unsigned long long)req.populated, len,
		u.h.faults);
	if (!u.faulted)
		_exit(5);
	if (u.nohang != -EBUSY || u.busy != -EBUSY)
		_exit(6);
	if (u.nohang_s > 1 || u.busy_s > 1)
		_exit(7);
	if (ret || result || req.populated != len ||
	    present_pages(p, len) != len / page_size())
		_exit(8);
	_exit(0);
}

TEST_F_TIMEOUT(wing, wait_from_the_uffd_handler_is_busy_not_stuck, SLOW)
{
	int status = 0;
	double took;
	pid_t pid;

	ASSERT_TRUE(workers_gone(30));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		uffd_wait_child();
	took = wait_pid(pid, 30, &status, 0);
	if (took < 0) {
		log_tasks(_metadata, "stuck after 30 s", pid);
		EXPECT_LE(0, kill_reap(pid, 30, &status));
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == KSFT_SKIP) {
		SKIP(return, "no userfaultfd");
	}
	TH_LOG("done after %.3f s (-1: stuck)", took);
	EXPECT_LE(0, took);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x", status);
}

/*
 * A process that changes its credentials does not keep workers created
 * under the old ones: a worker's own credentials, which signals, ptrace
 * and its /proc files are checked against, are its creator's when it was
 * created. As a setuid-root program run by UID_A would, a child with real
 * uid UID_A and effective uid 0 populates 32 MiB on both nodes (its
 * workers kept on the file), becomes root in every id (setresuid(0, 0,
 * 0)), and populates again. A process of UID_A then sends signal 0 to
 * each of the child's workers: refused (EPERM) for every one, as for a
 * thread the child created before the change (glibc changes every
 * thread's). Before, the kept workers stayed UID_A's, through which UID_A
 * could stop or kill the process.
 */
struct cred_report {
	int workers, signallable, ref_err;
};

static void *sleeper(void *arg)
{
	char byte;

	(void)!read(*(int *)arg, &byte, 1);
	return NULL;
}

/* The second call is of @len2 bytes */
static void cred_child(int report, size_t len2)
{
	size_t len = 32 * MiB;
	struct cred_report rep = { 0 };
	struct memprepop_populate req;
	int fd, hold[2], res[2], tids[64], n = 0, status;
	pid_t self = getpid(), ref = 0, g;
	struct dirent *e;
	pthread_t t;
	char *p, *q;
	DIR *d;

	if (pipe(hold) || pipe(res) || setresuid(UID_A, 0, 0))
		_exit(2);
	if (pthread_create(&t, NULL, sleeper, &hold[0]))
		_exit(2);
	fd = open_dev();
	p = map_anon_both(len);
	q = map_anon_both(len);
	if (fd < 0 || !p || !q || ioc_populate(fd, p, len, 0, &req) ||
	    setresuid(0, 0, 0) || ioc_populate(fd, q, len2, 0, &req))
		_exit(3);
	usleep(200 * 1000);	/* threads stopped are gone from /proc */
	d = opendir("/proc/self/task");
	if (!d)
		_exit(2);
	while ((e = readdir(d)) && n < 64) {
		char path[300];
		int tid = atoi(e->d_name);

		if (tid <= 0 || tid == self)
			continue;
		snprintf(path, sizeof(path), "self/task/%s", e->d_name);
		if (read_worker(path, tid, NULL))
			tids[n++] = tid;
		else
			ref = tid;
	}
	closedir(d);
	g = fork();
	if (g < 0)
		_exit(2);
	if (!g) {
		int ok = 0, err = 0;

		if (setresuid(UID_A, UID_A, UID_A))
			_exit(2);
		for (int i = 0; i < n; i++)
			ok += !syscall(SYS_tgkill, self, tids[i], 0);
		if (syscall(SYS_tgkill, self, ref, 0))
			err = errno;
		_exit(write(res[1], &ok, sizeof(ok)) == sizeof(ok) &&
		      write(res[1], &err, sizeof(err)) == sizeof(err) ? 0 : 2);
	}
	if (waitpid(g, &status, 0) != g || status ||
	    read(res[0], &rep.signallable, sizeof(int)) != sizeof(int) ||
	    read(res[0], &rep.ref_err, sizeof(int)) != sizeof(int))
		_exit(4);
	rep.workers = n;
	_exit(write(report, &rep, sizeof(rep)) == sizeof(rep) ? 0 : 2);
}

static void cred_child_32m(int report)
{
	cred_child(report, 32 * MiB);
}

static void cred_child_2m(int report)
{
	cred_child(report, 2 * MiB);
}

/*
 * @small: the second call is of 2 MiB, which has no worker: the idle
 * workers of before are stopped at its end, and none is left
 */
static void old_credentials(struct __test_metadata *_metadata, bool small)
{
	struct cred_report rep = { -1, -1, -1 };
	int rd, status;
	pid_t pid;

	if (!uid_usable(UID_A))
		SKIP(return, "cannot become uid %d", UID_A);
	ASSERT_TRUE(workers_gone(30));
	pid = fork_reporting(small ? cred_child_2m : cred_child_32m, &rd);
	ASSERT_LE(0, pid);
	if (!read_within(rd, &rep, sizeof(rep), 120))
		rep.workers = -1;
	EXPECT_LE(0, wait_pid(pid, 60, &status, 0));
	TH_LOG("after setresuid(0, 0, 0) and a call of %d MiB: %d workers, %d of them signallable by uid %d; a thread made before: %s",
	       small ? 2 : 32, rep.workers, rep.signallable, UID_A,
	       strerror(rep.ref_err));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x", status);
	/* The harness's EXPECT is not one statement */
	if (small) {
		EXPECT_EQ(0, rep.workers);
	} else {
		EXPECT_LE(1, rep.workers);
	}
	EXPECT_EQ(0, rep.signallable);
	EXPECT_EQ(EPERM, rep.ref_err);
	close(rd);
	EXPECT_TRUE(workers_gone(30));
}

TEST_F_TIMEOUT(wing, workers_of_old_credentials_are_not_kept, SLOW)
{
	old_credentials(_metadata, false);
}

TEST_F_TIMEOUT(wing, workers_of_old_credentials_stop_after_a_small_call,
	       SLOW)
{
	old_credentials(_metadata, true);
}

TEST_HARNESS_MAIN
