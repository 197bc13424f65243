// SPDX-License-Identifier: GPL-2.0
/*
 * Workers are the caller: every test does what an outsider would, the same
 * operation with madvise(MADV_POPULATE_WRITE) in the caller on an identical
 * mapping, or a limit read from outside (cgroup files, /proc/PID/stat,
 * /proc/kpageflags, whether a killed process is reaped), and compares.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "uffd_helpers.h"
#include "worker_helpers.h"

static int open_dev(void)
{
	return open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
}

struct sampler {
	pthread_t tid;
	volatile bool stop;
	int most;		/* most workers alive at once */
	int seen;		/* worker observations */
	int running;		/* ... of a worker in state R */
	int mismatched;		/* ... whose policy or nice was not @want */
	struct worker_stat want;
	bool check;
	bool check_ioprio;	/* ... or whose I/O priority was not @want's */
};

static void *sample(void *arg)
{
	struct sampler *s = arg;
	struct worker_stat ws[64];
	int running[64], nr_running = 0;

	while (!s->stop) {
		int n = scan_workers(ws, 64), was_running = nr_running;
		int ran[64];

		memcpy(ran, running, sizeof(ran));
		nr_running = 0;

		if (n > s->most)
			s->most = n;
		for (int i = 0; i < n && i < 64; i++) {
			s->seen++;
			s->running += ws[i].state == 'R';
			if (s->check && (ws[i].policy != s->want.policy ||
					 ws[i].nice != s->want.nice))
				s->mismatched++;
			if (s->check && s->want.uclamp_min >= 0 &&
			    (ws[i].uclamp_min != s->want.uclamp_min ||
			     ws[i].uclamp_max != s->want.uclamp_max))
				s->mismatched++;
			/*
			 * Faulting, and already at the last sample: not in the
			 * microseconds after it is woken, before it sets its
			 * I/O priority, nor idle after the call
			 */
			if (ws[i].state != 'R')
				continue;
			running[nr_running++] = ws[i].tid;
			for (int j = 0; s->check_ioprio && j < was_running; j++)
				if (ran[j] == ws[i].tid &&
				    ws[i].ioprio != s->want.ioprio)
					s->mismatched++;
		}
		usleep(1000);
	}
	return NULL;
}

/*
 * Each test takes seconds here and minutes under KASAN and TCG, longer than
 * the harness's 30 s default: the runner's timeout (the settings file)
 * bounds the whole program instead.
 */
#define SLOW	3600

FIXTURE(caller)
{
	int unused;
};

FIXTURE_SETUP(caller)
{
}

FIXTURE_TEARDOWN(caller)
{
}

/* Populates while @s samples the workers, then stops the sampler */
static int populate_sampled(int fd, char *p, size_t len, struct sampler *s)
{
	struct memprepop_populate req;
	int ret = ioc_populate(fd, p, len, 0, &req);

	s->stop = true;
	pthread_join(s->tid, NULL);
	return ret;
}

/* --- identity: scheduling ------------------------------------------------- */

/*
 * A caller's scheduling policy and nice are its workers': a SCHED_IDLE
 * caller never gets SCHED_NORMAL workers.
 */
TEST_F_TIMEOUT(caller, workers_take_callers_scheduling, SLOW)
{
	static const struct worker_stat cases[] = {
		{ .policy = SCHED_IDLE, .nice = 0,
		  .uclamp_min = -1, .uclamp_max = -1 },
		{ .policy = SCHED_BATCH, .nice = 7,
		  .uclamp_min = -1, .uclamp_max = -1 },
		{ .policy = SCHED_OTHER, .nice = 3,
		  .uclamp_min = -1, .uclamp_max = -1 },
	};

	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int status;
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			struct sched_param sp = { 0 };
			struct sampler s = { .want = cases[i], .check = true };
			size_t len = 256 * MiB;
			char *p = map_anon_both(len);
			int fd = open_dev();

			if (!p || fd < 0)
				_exit(10);
			/* The sampler runs at the default policy */
			if (pthread_create(&s.tid, NULL, sample, &s))
				_exit(11);
			if (sched_setscheduler(0, cases[i].policy, &sp) ||
			    setpriority(PRIO_PROCESS, 0, cases[i].nice))
				_exit(12);
			if (populate_sampled(fd, p, len, &s))
				_exit(13);
			dprintf(1, "# policy %d nice %d: %d worker observations, %d not the caller's\n",
			       cases[i].policy, cases[i].nice, s.seen,
			       s.mismatched);
			_exit(s.mismatched ? 1 : s.seen ? 0 : 2);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status))
			TH_LOG("policy %d nice %d", cases[i].policy,
			       cases[i].nice);
	}
}

/* ioprio_set(2)'s, from the kernel's uapi <linux/ioprio.h> */
#define IOPRIO_CLASS_SHIFT	13
#define IOPRIO_CLASS_IDLE	3
#define IOPRIO_WHO_PROCESS	1

static void *report_ioprio(void *arg)
{
	*(int *)arg = task_ioprio(syscall(SYS_gettid));
	return NULL;
}

/*
 * A caller's I/O priority is its workers', as it is a thread's it creates
 * (the one an `ionice -c3` VMM's page-cache reads are submitted with): an
 * idle-class caller gets idle-class workers, and a caller that set none
 * gets workers that report what its own new thread reports, not the idle
 * class a previous caller left.
 */
TEST_F_TIMEOUT(caller, workers_take_callers_ioprio, SLOW)
{
	for (int idle = 1; idle >= 0; idle--) {
		int status;
		pid_t pid;

		/* No worker of the idle-class caller is seen as the next's */
		ASSERT_TRUE(workers_gone(30));
		pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			struct sampler s = { .check_ioprio = true };
			size_t len = 256 * MiB;
			char *p = map_anon_both(len);
			int fd = open_dev();
			pthread_t tid;

			if (!p || fd < 0)
				_exit(10);
			if (idle && syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS,
					    0, IOPRIO_CLASS_IDLE <<
					    IOPRIO_CLASS_SHIFT))
				_exit(11);
			/* What a thread of the caller has: the reference */
			if (pthread_create(&tid, NULL, report_ioprio,
					   &s.want.ioprio) ||
			    pthread_join(tid, NULL))
				_exit(12);
			if (idle && s.want.ioprio >> IOPRIO_CLASS_SHIFT !=
				    IOPRIO_CLASS_IDLE)
				_exit(13);
			if (pthread_create(&s.tid, NULL, sample, &s))
				_exit(14);
			if (populate_sampled(fd, p, len, &s))
				_exit(15);
			dprintf(1, "# ioprio %#x: %d observations of a faulting worker, %d not the caller's\n",
				s.want.ioprio, s.running, s.mismatched);
			_exit(s.mismatched ? 1 : s.running ? 0 : 2);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status))
			TH_LOG("idle class %d", idle);
	}
}

/*
 * A killed child's commitment is given back once its mm goes, which can be
 * after it is reaped (its last worker lets go of it): the tests after the
 * one that killed it measure the commit limit. Waits up to 30 s for
 * Committed_AS (kB) to be back within 1 MiB of @committed.
 */
static void commit_given_back(long committed)
{
	for (int i = 0; i < 3000 &&
	     meminfo_field("Committed_AS") > committed + 1024; i++)
		usleep(10 * 1000);
}

/*
 * RLIMIT_RTTIME of a SCHED_FIFO caller, 50 ms, @hard its hard limit:
 * madvise of 1 GiB in its own thread runs past it without blocking, and the
 * process is killed by @sig (SIGKILL at the hard limit, SIGXCPU, whose
 * default action ends it, at the soft one); so it must be with the ioctl,
 * which gives such a caller no workers (the kernel checks the limit at the
 * return to user mode, which a worker never reaches: security.rst) and
 * faults the range in the calling thread.
 */
static void rttime_case(struct __test_metadata *_metadata, rlim_t hard,
			int sig)
{
	for (int by_ioctl = 0; by_ioctl < 2; by_ioctl++) {
		long committed = meminfo_field("Committed_AS");
		int status;
		pid_t pid;

		ASSERT_TRUE(workers_gone(30));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct sched_param sp = { .sched_priority = 1 };
			struct rlimit rl = { 50000, hard };
			struct rlimit nocore = { 0, 0 };
			struct memprepop_populate req;
			size_t len = 1024 * MiB;
			char *p = map_anon_both(len);
			int fd = open_dev();

			if (!p || fd < 0)
				_exit(10);
			if (setrlimit(RLIMIT_CORE, &nocore) ||
			    setrlimit(RLIMIT_RTTIME, &rl) ||
			    sched_setscheduler(0, SCHED_FIFO, &sp))
				_exit(11);
			if (by_ioctl)
				ioc_populate(fd, p, len, 0, &req);
			else
				madvise_populate_write(p, len);
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		TH_LOG("%s: %s %d", by_ioctl ? "ioctl" : "madvise",
		       WIFSIGNALED(status) ? "killed by signal" : "exited",
		       WIFSIGNALED(status) ? WTERMSIG(status) :
		       WEXITSTATUS(status));
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig);
		commit_given_back(committed);
	}
}

TEST_F_TIMEOUT(caller, rttime_applies_to_the_call, SLOW)
{
	rttime_case(_metadata, 50000, SIGKILL);
}

TEST_F_TIMEOUT(caller, rttime_soft_applies_to_the_call, SLOW)
{
	rttime_case(_metadata, RLIM_INFINITY, SIGXCPU);
}

/*
 * RLIMIT_CPU of 1 s (soft; hard unlimited), then 1536 MiB populated and
 * 0.2 s of the caller's own computing: the process gets SIGXCPU, whose
 * default action ends it. The kernel acts on a process CPU timer only
 * when a thread of the process returns to user mode: madvise's thread
 * gets it as its call returns; the ioctl's workers, the process's own
 * threads, use the CPU while the calling thread only waits, and the
 * calling thread gets it once it computes.
 */
TEST_F_TIMEOUT(caller, cpu_limit_applies_to_workers, SLOW)
{
	for (int by_ioctl = 0; by_ioctl < 2; by_ioctl++) {
		long committed = meminfo_field("Committed_AS");
		struct rusage ru;
		int status;
		pid_t pid;

		ASSERT_TRUE(workers_gone(30));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct rlimit rl = { 1, RLIM_INFINITY };
			struct memprepop_populate req;
			size_t len = 1536 * MiB;
			char *p = map_anon_both(len);
			int fd = open_dev();

			if (!p || fd < 0)
				_exit(10);
			if (setrlimit(RLIMIT_CPU, &rl))
				_exit(11);
			if (by_ioctl)
				ioc_populate(fd, p, len, 0, &req);
			else
				madvise_populate_write(p, len);
			for (double t0 = now(); now() - t0 < 0.2;)
				;
			_exit(0);
		}
		ASSERT_EQ(pid, wait4(pid, &status, 0, &ru));
		TH_LOG("%s: %s %d after %.2f s of CPU",
		       by_ioctl ? "ioctl" : "madvise",
		       WIFSIGNALED(status) ? "killed by signal" : "exited",
		       WIFSIGNALED(status) ? WTERMSIG(status) :
		       WEXITSTATUS(status),
		       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU);
		commit_given_back(committed);
	}
}

#define SCHED_FLAG_KEEP_ALL		0x18
#define SCHED_FLAG_UTIL_CLAMP		0x60

/*
 * A caller's utilization clamps are its workers' (kernels with
 * CONFIG_UCLAMP_TASK: the debug kernel; Debian's have none).
 */
TEST_F_TIMEOUT(caller, workers_take_callers_clamps, SLOW)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		struct sched_attr_clamps attr = {
			.size = sizeof(attr),
			.sched_flags = SCHED_FLAG_KEEP_ALL |
				       SCHED_FLAG_UTIL_CLAMP,
			.sched_util_min = 256, .sched_util_max = 512,
		};
		struct sampler s = { .check = true,
				     .want = { .policy = SCHED_OTHER,
					       .uclamp_min = 256,
					       .uclamp_max = 512 } };
		size_t len = 256 * MiB;
		char *p = map_anon_both(len);
		int fd = open_dev();
		char self[32];

		if (!p || fd < 0)
			_exit(10);
		if (syscall(SYS_sched_setattr, 0, &attr, 0))
			_exit(4);
		snprintf(self, sizeof(self), "%d", (int)syscall(SYS_gettid));
		read_uclamp(self, &s.want);
		if (s.want.uclamp_min != 256 || s.want.uclamp_max != 512)
			_exit(14);
		if (pthread_create(&s.tid, NULL, sample, &s))
			_exit(11);
		if (populate_sampled(fd, p, len, &s))
			_exit(13);
		dprintf(1, "# clamps 256..512: %d worker observations, %d not the caller's\n",
		       s.seen, s.mismatched);
		_exit(s.mismatched ? 1 : s.seen ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 4)
		SKIP(return, "no utilization clamping (CONFIG_UCLAMP_TASK)");
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Clamps a caller did not set are the defaults, which a thread follows as
 * the system's change: a real-time thread's minimum follows
 * sched_util_clamp_min_rt_default. So do its workers': a real-time child
 * populates with workers, kept idle, and the default is changed; each
 * worker's minimum (sched_getattr(2)) must be what a pthread of the child
 * then has. Were the module to set the caller's values on its workers,
 * they would be the workers' own, kept at the old default, and clamping
 * would be turned on for the whole system.
 */
#define UCLAMP_RT_DEFAULT	"/proc/sys/kernel/sched_util_clamp_min_rt_default"

TEST_F_TIMEOUT(caller, workers_follow_default_clamps, SLOW)
{
	int status, up[2], down[2];
	char old[32] = "", byte;
	bool changed = false;
	pid_t pid;

	if (read_file(UCLAMP_RT_DEFAULT, old, sizeof(old)) <= 0)
		SKIP(return, "no utilization clamping (CONFIG_UCLAMP_TASK)");
	ASSERT_TRUE(workers_gone(30));
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct sched_param sp = { .sched_priority = 1 };
		struct worker_stat ws[16], ref;
		struct memprepop_populate req;
		size_t len = 64 * MiB;
		char *p = map_anon_both(len), id[16];
		int fd = open_dev(), n, off = 0;

		if (!p || fd < 0)
			_exit(10);
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			_exit(11);
		if (ioc_populate(fd, p, len, 0, &req) || !req.workers)
			_exit(12);
		/* The default is changed, from outside */
		if (write(up[1], "x", 1) != 1 || read(down[0], id, 1) != 1)
			_exit(13);
		snprintf(id, sizeof(id), "%d", (int)syscall(SYS_gettid));
		read_uclamp(id, &ref);
		n = scan_workers(ws, 16);
		for (int i = 0; i < n && i < 16; i++)
			off += ws[i].uclamp_min != ref.uclamp_min;
		dprintf(1, "# the caller's minimum %ld; %d workers, %d with another\n",
			ref.uclamp_min, n, off);
		_exit(n < 1 ? 3 : off ? 1 : 0);
	}
	if (read(up[0], &byte, 1) == 1)
		changed = !write_file(UCLAMP_RT_DEFAULT, "100");
	(void)!write(down[1], "x", 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	write_file(UCLAMP_RT_DEFAULT, old);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	ASSERT_TRUE(changed);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* --- identity: credentials and mm ------------------------------------------ */

/* Pages of a fresh memfd an unprivileged caller gets before EFAULT */
static long memfd_pages_until_full(int fd, size_t len, bool ioctl_,
				   int *err)
{
	struct memprepop_populate req;
	long pages;
	char *p = map_file_shared(memfd_create("mpp", 0), len);

	if (!p)
		return -1;
	*err = ioctl_ ? ioc_populate(fd, p, len, 0, &req) :
			madvise_populate_write(p, len);
	pages = present_pages(p, len);
	munmap(p, len);
	return pages;
}

/*
 * With strict overcommit, a memfd page is committed when it is faulted,
 * and an unprivileged task may not use the admin reserve nor its mm's user
 * reserve: the workers' faults are the caller's, credentials and mm, so
 * the caller gets no more than its own madvise gets.
 *
 * madvise is measured before and after the ioctl: what other processes
 * commit meanwhile (the debug run's stall watcher forks every 10 s) moves
 * the room left, and once it moved the ioctl's count by 1294 pages (about
 * 5 MiB, 18773 against 20067). A round counts when the two madvise counts
 * agree within 1 MiB; the ioctl must then be within 1 MiB of them, where
 * the admin reserve alone would give it up to 8 MiB more. Up to 20 rounds:
 * under the debug kernel five in a row once moved (by 1600 to 2000 pages).
 */
TEST_F_TIMEOUT(caller, overcommit_reserves_like_madvise, SLOW)
{
	static const char *const knobs[] = {
		"/proc/sys/vm/overcommit_memory",
		"/proc/sys/vm/overcommit_kbytes",
		"/proc/sys/vm/overcommit_ratio",
	};
	long saved[3], committed;
	int status, fd = open_dev();
	char val[32];
	pid_t pid;

	ASSERT_LE(0, fd);
	for (int i = 0; i < 3; i++)
		saved[i] = read_long(knobs[i]);
	if (meminfo_field("SwapTotal") != 0)
		SKIP(return, "swap would move the commit limit");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		long before, after, by_ioctl, w0;
		int err_b, err_a, err_i;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		prctl(PR_SET_DUMPABLE, 1);
		/* Wait for the parent to set the limit */
		while (read_long("/proc/sys/vm/overcommit_memory") != 2)
			usleep(1000);
		/* The file keeps its workers: the first call starts them */
		w0 = workers_started();
		for (int round = 0; round < 20; round++) {
			before = memfd_pages_until_full(fd, 512 * MiB, false,
							&err_b);
			by_ioctl = memfd_pages_until_full(fd, 512 * MiB, true,
							  &err_i);
			after = memfd_pages_until_full(fd, 512 * MiB, false,
						       &err_a);
			dprintf(1, "# madvise: %ld pages, errno %d; ioctl: %ld pages, errno %d, %ld workers started; madvise again: %ld pages\n",
				before, -err_b, by_ioctl, -err_i,
				workers_started() - w0, after);
			if (err_b != -EFAULT || err_i != err_b || err_a != err_b)
				_exit(11);
			if (workers_started() == w0)
				_exit(12);
			/* The room moved meanwhile: again */
			if (labs(after - before) > 256)
				continue;
			_exit(labs(by_ioctl - before) <= 256 &&
			      labs(by_ioctl - after) <= 256 ? 0 : 13);
		}
		/* Never still for one round */
		_exit(14);
	}
	/*
	 * Room for 96 MiB more than is committed now, once what a process
	 * killed before this test committed is given back (its mm can go
	 * after it is reaped, when its last worker lets go of it)
	 */
	committed = meminfo_field("Committed_AS");
	for (int i = 0, stable = 0; i < 500 && stable < 20; i++) {
		long now_kb;

		usleep(10 * 1000);
		now_kb = meminfo_field("Committed_AS");
		stable = now_kb == committed ? stable + 1 : 0;
		committed = now_kb;
	}
	snprintf(val, sizeof(val), "%ld", committed + 96 * 1024);
	ASSERT_EQ(0, write_file(knobs[1], val));
	ASSERT_EQ(0, write_file(knobs[0], "2"));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	write_file(knobs[0], "0");
	snprintf(val, sizeof(val), "%ld", saved[2]);
	write_file(knobs[2], val);
	snprintf(val, sizeof(val), "%ld", saved[0]);
	write_file(knobs[0], val);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

/* --- kill, cancel, userfaultfd --------------------------------------------- */

/*
 * A userfaultfd handler that answers every fault with a zeroed page after
 * @delay, counting the faults reported for another thread than @caller
 * (UFFD_FEATURE_THREAD_ID)
 */
struct uffd_server {
	int uffd;
	useconds_t delay;
	pid_t caller;
	int faults;
	int foreign;
	volatile bool stop;
};

static void *uffd_serve_all(void *arg)
{
	struct uffd_server *u = arg;
	char *zero = calloc(1, page_size());

	while (!u->stop) {
		struct pollfd pfd = { .fd = u->uffd, .events = POLLIN };
		struct uffdio_copy copy = { 0 };
		struct uffd_msg msg;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if (read(u->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		if (u->caller &&
		    (pid_t)msg.arg.pagefault.feat.ptid != u->caller)
			u->foreign++;
		u->faults++;
		usleep(u->delay);
		copy.dst = msg.arg.pagefault.address & ~(page_size() - 1);
		copy.src = (uintptr_t)zero;
		copy.len = page_size();
		ioctl(u->uffd, UFFDIO_COPY, &copy);
	}
	free(zero);
	return NULL;
}

struct late_arm {
	struct uffd_server server;
	char *p;
	size_t len;
	useconds_t after;
	int registered;		/* 1 registered, -errno failed */
	bool serve;
};

/* Registers the range @after into the call; serves its faults if asked */
static void *arm_late(void *arg)
{
	struct late_arm *a = arg;
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)a->p, .len = a->len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	usleep(a->after);
	a->registered = ioctl(a->server.uffd, UFFDIO_REGISTER, &reg) ?
			-errno : 1;
	if (a->serve)
		uffd_serve_all(&a->server);
	return NULL;
}

static int uffd_open(uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd >= 0 && ioctl(uffd, UFFDIO_API, &api)) {
		close(uffd);
		return -1;
	}
	return uffd;
}

/*
 * A range armed for userfaultfd 30 ms into the call, nobody answering:
 * SIGKILL to the caller ends it within a second, it is reaped, and the
 * workers go away on their own.
 */
TEST_F_TIMEOUT(caller, kill_with_range_armed_midway, SLOW)
{
	int status;
	double t0;
	pid_t pid, got;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct late_arm a = { .len = 1024 * MiB, .after = 30 * 1000 };
		struct memprepop_populate req;
		pthread_t tid;
		int fd = open_dev();

		a.p = map_anon_both(a.len);
		a.server.uffd = uffd_open(0);
		if (!a.p || fd < 0 || a.server.uffd < 0)
			_exit(4);
		pthread_create(&tid, NULL, arm_late, &a);
		ioc_populate(fd, a.p, a.len, 0, &req);
		_exit(a.registered == 1 ? 1 : 5);
	}
	usleep(800 * 1000);
	t0 = now();
	kill(pid, SIGKILL);
	do {
		got = waitpid(pid, &status, WNOHANG);
		if (!got)
			usleep(5 * 1000);
	} while (!got && now() - t0 < 10);
	ASSERT_EQ(pid, got) TH_LOG("not reaped 10 s after SIGKILL");
	TH_LOG("reaped %.3f s after SIGKILL", now() - t0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
		SKIP(return, "no userfaultfd");
	ASSERT_TRUE(WIFSIGNALED(status))
		TH_LOG("exit %d: finished before the kill",
		       WEXITSTATUS(status));
	EXPECT_GT(1.0, now() - t0);
	EXPECT_TRUE(workers_gone(5));
}

/*
 * A range armed midway is faulted only by the caller, whose handler
 * answers: the messages (UFFD_FEATURE_THREAD_ID) name the calling thread
 * only, and the call succeeds with every page there.
 */
TEST_F_TIMEOUT(caller, armed_midway_faulted_by_caller_only, SLOW)
{
	struct late_arm a = { .len = 256 * MiB, .after = 30 * 1000,
			      .serve = true };
	struct memprepop_populate req;
	long w0 = workers_started();
	pthread_t tid;
	int fd = open_dev();

	ASSERT_LE(0, fd);
	a.p = map_anon_both(a.len);
	ASSERT_NE(NULL, a.p);
	a.server.uffd = uffd_open(UFFD_FEATURE_THREAD_ID);
	if (a.server.uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	a.server.caller = syscall(SYS_gettid);
	ASSERT_EQ(0, pthread_create(&tid, NULL, arm_late, &a));
	EXPECT_EQ(0, ioc_populate(fd, a.p, a.len, 0, &req));
	a.server.stop = true;
	pthread_join(tid, NULL);
	TH_LOG("%ld workers; %d faults reported, %d not by the caller",
	       workers_started() - w0, a.server.faults, a.server.foreign);
	EXPECT_EQ(1, a.registered);
	EXPECT_LT(0, workers_started() - w0);
	EXPECT_EQ(a.len, req.populated);
	EXPECT_EQ(a.len / page_size(), present_pages(a.p, a.len));
	EXPECT_LT(0, a.server.faults) TH_LOG("registered too late to matter");
	EXPECT_EQ(0, a.server.foreign);
	close(a.server.uffd);
	munmap(a.p, a.len);
	close(fd);
}

/*
 * Cancels a call 300 ms in; with @release, 200 ms later closes @uffd, the
 * handler going away, so that faults waiting for it go on
 */
struct canceller {
	struct memprepop_control *ctl;
	uint64_t done_before;
	double at;
	bool release;
	int uffd;
	double released_at;
};

static void *cancel_later(void *arg)
{
	struct canceller *c = arg;

	usleep(300 * 1000);
	c->done_before = __atomic_load_n(&c->ctl->done, __ATOMIC_RELAXED);
	c->at = now();
	__atomic_store_n(&c->ctl->cancel, 1, __ATOMIC_RELAXED);
	if (c->release) {
		usleep(200 * 1000);
		c->released_at = now();
		close(c->uffd);
	}
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * SIGALRM every @ms ms (0: none), to the one thread that does not block it,
 * handled and returned from, as a profiler's or a language runtime's
 * signals are
 */
static void steady_signals(unsigned int ms)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = {
		.it_interval = { .tv_usec = ms * 1000 },
		.it_value = { .tv_usec = ms * 1000 },
	};

	if (ms)
		sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * Progress and cancel work in the caller's own work too: a postcopy-like
 * range that only the caller faults reports progress, and a cancel ends
 * the call within 100 ms (plus what one page costs) with ECANCELED. Of
 * @len: 8 MiB makes a call with a request whose one segment is the
 * caller's; 4 MiB, less than one worker's share, a call its caller does
 * alone, without a request (kmod/alone.c). With @signal_ms, the calling
 * thread takes a signal that often meanwhile, each making it leave the
 * call and restart it: the cancel still ends it as soon.
 */
static void cancel_while_the_caller_faults(struct __test_metadata *_metadata,
					   size_t len, unsigned int signal_ms)
{
	size_t off;
	struct memprepop_control ctl = { 0 };
	/* Each fault answered after 1 ms, as a slow postcopy source would */
	struct uffd_server h = { .delay = 1000 };
	struct canceller c = { .ctl = &ctl };
	struct memprepop_populate req = { 0 };
	long alone0 = calls_alone();
	sigset_t alrm;
	pthread_t ht, ct;
	double end;
	int fd = open_dev(), ret;
	char *p = map_anon(len);

	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, p);
	h.uffd = uffd_arm(p, len, 0);
	if (h.uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	/* The other threads block SIGALRM: it is the caller's */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	ASSERT_EQ(0, pthread_create(&ht, NULL, uffd_serve_all, &h));
	ASSERT_EQ(0, pthread_create(&ct, NULL, cancel_later, &c));
	pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
	steady_signals(signal_ms);
	req.addr = (uintptr_t)p;
	req.len = len;
	req.control = (uintptr_t)&ctl;
	ret = ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) ? -errno : 0;
	end = now();
	steady_signals(0);
	pthread_join(ct, NULL);
	h.stop = true;
	pthread_join(ht, NULL);
	TH_LOG("done %llu bytes at the cancel; returned %.0f ms after it, populated %llu",
	       (unsigned long long)c.done_before, (end - c.at) * 1000,
	       (unsigned long long)req.populated);
	EXPECT_EQ(-ECANCELED, ret);
	/* The call went the way its size says (done alone: stats, once) */
	EXPECT_EQ(len < 8 * MiB, calls_alone() - alone0);
	EXPECT_LT(0, c.done_before);
	EXPECT_GT(0.1 + 0.05, end - c.at);
	EXPECT_GT(len, req.populated);
	for (off = 0; off < req.populated; off += page_size())
		if (!present_pages(p + off, page_size()))
			break;
	EXPECT_EQ(req.populated, off);
	close(h.uffd);
	munmap(p, len);
	close(fd);
}

TEST_F_TIMEOUT(caller, cancel_while_only_the_caller_faults, SLOW)
{
	cancel_while_the_caller_faults(_metadata, 8 * MiB, 0);
}

TEST_F_TIMEOUT(caller, cancel_while_the_caller_faults_alone, SLOW)
{
	cancel_while_the_caller_faults(_metadata, 4 * MiB, 0);
}

TEST_F_TIMEOUT(caller, cancel_under_steady_signals, SLOW)
{
	cancel_while_the_caller_faults(_metadata, 8 * MiB, 20);
}

TEST_F_TIMEOUT(caller, cancel_alone_under_steady_signals, SLOW)
{
	cancel_while_the_caller_faults(_metadata, 4 * MiB, 20);
}

/*
 * A range that fails on its own keeps its errno after a cancel, as
 * madvise() of it gives: a range [a 64 KiB hole, then 64 KiB mapped] and
 * @len of slow userfaultfd faults, in that order or, with @hole_last, the
 * other, cancelled 300 ms in. The range with the hole fails at its start
 * with ENOMEM (the hole is at its start so that no order of the call's
 * work can leave it short of its failure), also when the cancel came
 * before the call reached it; the other with ECANCELED; the call with the
 * first by index; whether it had a request (8 MiB) or was its caller's
 * alone (4 MiB).
 */
static void cancel_keeps_a_failure(struct __test_metadata *_metadata,
				   size_t len, bool hole_last)
{
	struct memprepop_control ctl = { 0 };
	struct uffd_server h = { .delay = 1000 };
	struct canceller c = { .ctl = &ctl };
	struct memprepop_populate req = { 0 };
	struct memprepop_range r[2] = { 0 };
	struct memprepop_range *rh = &r[hole_last], *ru = &r[!hole_last];
	long alone0 = calls_alone();
	int fd = open_dev(), ret, madv_err;
	char *hole = map_anon(128 * KiB), *p = map_anon(len);
	pthread_t ht, ct;

	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, hole);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, munmap(hole, 64 * KiB));
	/* What madvise() says of the range, which it leaves as it was */
	madv_err = madvise(hole, 128 * KiB, MADV_POPULATE_WRITE) ? errno : 0;
	EXPECT_EQ(0, present_pages(hole + 64 * KiB, 64 * KiB));
	h.uffd = uffd_arm(p, len, 0);
	if (h.uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, pthread_create(&ht, NULL, uffd_serve_all, &h));
	ASSERT_EQ(0, pthread_create(&ct, NULL, cancel_later, &c));
	*rh = (struct memprepop_range){ .addr = (uintptr_t)hole,
					.len = 128 * KiB };
	*ru = (struct memprepop_range){ .addr = (uintptr_t)p, .len = len };
	req.ranges = (uintptr_t)r;
	req.nr_ranges = 2;
	req.range_size = sizeof(r[0]);
	req.control = (uintptr_t)&ctl;
	ret = ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) ? -errno : 0;
	pthread_join(ct, NULL);
	h.stop = true;
	pthread_join(ht, NULL);
	TH_LOG("madvise: %s; ranges: %s, %llu; %s, %llu",
	       strerror(madv_err), strerror(-r[0].error),
	       (unsigned long long)r[0].populated, strerror(-r[1].error),
	       (unsigned long long)r[1].populated);
	EXPECT_EQ(ENOMEM, madv_err);
	EXPECT_EQ(-madv_err, rh->error);
	EXPECT_EQ(0, rh->populated);
	EXPECT_EQ(-ECANCELED, ru->error);
	EXPECT_GT(len, ru->populated);
	EXPECT_EQ(r[0].error, ret);
	EXPECT_EQ(len < 8 * MiB, calls_alone() - alone0);
	close(h.uffd);
	munmap(hole + 64 * KiB, 64 * KiB);
	munmap(p, len);
	close(fd);
}

TEST_F_TIMEOUT(caller, cancel_keeps_a_failure, SLOW)
{
	cancel_keeps_a_failure(_metadata, 8 * MiB, false);
}

TEST_F_TIMEOUT(caller, cancel_alone_keeps_a_failure, SLOW)
{
	cancel_keeps_a_failure(_metadata, 4 * MiB, false);
}

TEST_F_TIMEOUT(caller, cancel_keeps_a_failure_not_reached, SLOW)
{
	cancel_keeps_a_failure(_metadata, 8 * MiB, true);
}

TEST_F_TIMEOUT(caller, cancel_alone_keeps_a_failure_not_reached, SLOW)
{
	cancel_keeps_a_failure(_metadata, 4 * MiB, true);
}

/*
 * In a child: 4 MiB over a userfaultfd-armed mapping whose handler, a
 * process of its own (a stop of the caller's process does not stop it),
 * answers each fault after 2 ms, through the ioctl (less than one worker's
 * share: a call its caller does alone) or with madvise(). Exits 0 once
 * every page is there and the call said so, 4 without userfaultfd, 1
 * otherwise.
 */
static void slow_small_call_child(bool by_ioctl, int ready)
{
	size_t len = 4 * MiB;
	struct uffd_server h = { .delay = 2000 };
	struct memprepop_populate req;
	char *p = map_anon(len);
	int fd = open_dev(), ret;
	pid_t server;

	h.uffd = p ? uffd_arm(p, len, 0) : -1;
	if (h.uffd < 0 || fd < 0)
		_exit(4);
	server = fork();
	if (!server) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		uffd_serve_all(&h);
		_exit(0);
	}
	if (server < 0 || write(ready, "", 1) != 1)
		_exit(1);
	if (by_ioctl)
		ret = ioc_populate(fd, p, len, 0, &req) ?:
		      (req.populated == len ? 0 : -EIO);
	else
		ret = madvise_populate_write(p, len);
	kill(server, SIGKILL);
	_exit(!ret && present_pages(p, len) == len / page_size() ? 0 : 1);
}

/*
 * Seconds from SIGSTOP, 300 ms into the child's call, to waitpid()'s report
 * of the stop (-1: none within 10 s); then it is let go, and *@status is
 * how it ended
 */
static double stop_during_slow_call(bool by_ioctl, int *status)
{
	int ready[2];
	double t0, stopped = -1;
	pid_t pid;
	char c;

	if (pipe(ready))
		return -2;
	pid = fork();
	if (!pid)
		slow_small_call_child(by_ioctl, ready[1]);
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1) {
		close(ready[0]);
		*status = 4 << 8;
		if (pid > 0)
			waitpid(pid, status, 0);
		return -2;
	}
	close(ready[0]);
	usleep(300 * 1000);
	t0 = now();
	kill(pid, SIGSTOP);
	while (now() - t0 < 10) {
		pid_t got = waitpid(pid, status, WUNTRACED | WNOHANG);

		if (got == pid && WIFSTOPPED(*status)) {
			stopped = now() - t0;
			break;
		}
		if (got == pid)
			return -3;
		usleep(2 * 1000);
	}
	kill(pid, SIGCONT);
	waitpid(pid, status, 0);
	return stopped;
}

/*
 * A call its caller does alone leaves for a stop as a call with workers
 * does: SIGSTOP 300 ms into 4 MiB of slow userfaultfd faults (2 s of them)
 * stops the process at the caller's next pause, within 100 ms and a page
 * (bound: 0.6 s, against the 1.7 s the call has left); after SIGCONT the
 * restarted call makes it anew and ends with every page there. madvise()
 * under the same stop is timed and logged: it holds the stop until its
 * end.
 */
TEST_F_TIMEOUT(caller, stop_during_a_call_alone, SLOW)
{
	int st_ioctl = 0, st_madvise = 0;
	double by_ioctl = stop_during_slow_call(true, &st_ioctl);
	double by_madvise = stop_during_slow_call(false, &st_madvise);

	if (WIFEXITED(st_ioctl) && WEXITSTATUS(st_ioctl) == 4)
		SKIP(return, "no userfaultfd");
	TH_LOG("stopped %.3f s after SIGSTOP with the ioctl, %.3f s with madvise (exits %d, %d)",
	       by_ioctl, by_madvise, WIFEXITED(st_ioctl) ?
	       WEXITSTATUS(st_ioctl) : -1, WIFEXITED(st_madvise) ?
	       WEXITSTATUS(st_madvise) : -1);
	EXPECT_LE(0, by_ioctl);
	EXPECT_GT(0.6, by_ioctl);
	ASSERT_TRUE(WIFEXITED(st_ioctl));
	EXPECT_EQ(0, WEXITSTATUS(st_ioctl));
	EXPECT_TRUE(WIFEXITED(st_madvise) && !WEXITSTATUS(st_madvise));
}

/*
 * A range armed midway, nobody answering: the workers hand the rest of
 * each chunk back, the caller waits in the fault of the first it took,
 * the others queue. A cancel, then the handler gone (its userfaultfd
 * closed): the call ends with ECANCELED at once, the chunks still handed
 * back counted up to where their workers stopped, populated exact.
 */
TEST_F_TIMEOUT(caller, cancel_with_chunks_handed_back, SLOW)
{
	struct late_arm a = { .len = 256 * MiB, .after = 30 * 1000 };
	struct memprepop_control ctl = { 0 };
	struct canceller c = { .ctl = &ctl, .release = true };
	struct memprepop_populate req = { 0 };
	long w0 = workers_started();
	pthread_t at, ct;
	double end;
	size_t off;
	int fd = open_dev(), ret;

	ASSERT_LE(0, fd);
	a.p = map_anon_both(a.len);
	ASSERT_NE(NULL, a.p);
	a.server.uffd = uffd_open(0);
	if (a.server.uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	c.uffd = a.server.uffd;
	ASSERT_EQ(0, pthread_create(&at, NULL, arm_late, &a));
	ASSERT_EQ(0, pthread_create(&ct, NULL, cancel_later, &c));
	req.addr = (uintptr_t)a.p;
	req.len = a.len;
	req.control = (uintptr_t)&ctl;
	ret = ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) ? -errno : 0;
	end = now();
	pthread_join(at, NULL);
	pthread_join(ct, NULL);
	TH_LOG("%ld workers; returned %.0f ms after the handler went, populated %llu of %zu",
	       workers_started() - w0, (end - c.released_at) * 1000,
	       (unsigned long long)req.populated, a.len);
	EXPECT_EQ(1, a.registered);
	EXPECT_LT(0, workers_started() - w0);
	EXPECT_EQ(-ECANCELED, ret);
	EXPECT_GT(1.0, end - c.released_at);
	EXPECT_GT(a.len, req.populated);
	for (off = 0; off < a.len; off += page_size())
		if (!present_pages(a.p + off, page_size()))
			break;
	EXPECT_EQ(req.populated, off);
	munmap(a.p, a.len);
	close(fd);
}

/*
 * As above, over 65536 ranges of a page each, a chunk each: the workers
 * hand back every chunk they reach after the arming. After the cancel the
 * outcome counts each chunk handed back for its range once (one that
 * looked through them all for each range took 37 s here): the call ends
 * after the handler went within twice what a whole call of the same ranges
 * takes once their pages are present (a walk of them all, timed after),
 * and each range reports exactly the page that is present, or none.
 * (Where the workers are done with all 65536 before the arming, there is
 * nothing to cancel: a skip.)
 */
TEST_F_TIMEOUT(caller, cancel_with_many_ranges_handed_back, SLOW)
{
	unsigned int nr = 65536, i, done = 0, wrong = 0;
	size_t ps = page_size();
	struct late_arm a = { .len = nr * ps, .after = 30 * 1000 };
	struct memprepop_control ctl = { 0 };
	struct canceller c = { .ctl = &ctl, .release = true };
	struct memprepop_populate req = { 0 }, again;
	struct memprepop_range *r = calloc(nr, sizeof(*r));
	uint64_t *pm = calloc(nr, sizeof(*pm));
	int fd = open_dev(), pmfd, ret;
	double end, t0, walk;
	pthread_t at, ct;

	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, pm);
	a.p = map_anon_both(a.len);
	ASSERT_NE(NULL, a.p);
	ASSERT_EQ(0, no_thp(a.p, a.len));
	a.server.uffd = uffd_open(0);
	if (a.server.uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	c.uffd = a.server.uffd;
	for (i = 0; i < nr; i++)
		r[i] = (struct memprepop_range){
			.addr = (uintptr_t)a.p + i * ps, .len = ps,
		};
	ASSERT_EQ(0, pthread_create(&at, NULL, arm_late, &a));
	ASSERT_EQ(0, pthread_create(&ct, NULL, cancel_later, &c));
	req.ranges = (uintptr_t)r;
	req.nr_ranges = nr;
	req.range_size = sizeof(*r);
	req.control = (uintptr_t)&ctl;
	ret = ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) ? -errno : 0;
	end = now();
	pthread_join(at, NULL);
	pthread_join(ct, NULL);
	/* Each page's pagemap entry, in one read: bit 63 is present */
	pmfd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, pmfd);
	ASSERT_EQ(nr * sizeof(*pm),
		  pread(pmfd, pm, nr * sizeof(*pm),
			(uintptr_t)a.p / ps * sizeof(*pm)));
	close(pmfd);
	for (i = 0; i < nr; i++) {
		done += r[i].populated == ps;
		wrong += r[i].populated != (pm[i] >> 63) * ps;
	}
	/* The same ranges again, every page present: what a walk costs */
	ASSERT_EQ(0, madvise_populate_write(a.p, a.len));
	t0 = now();
	memset(&again, 0, sizeof(again));
	again.ranges = (uintptr_t)r;
	again.nr_ranges = nr;
	again.range_size = sizeof(*r);
	ASSERT_EQ(0, ioctl(fd, MEMPREPOP_IOC_POPULATE, &again));
	walk = now() - t0;
	TH_LOG("returned %.0f ms after the handler went (a call of them all present: %.0f ms); %u of %u ranges populated, %u reported wrong",
	       (end - c.released_at) * 1000, walk * 1000, done, nr, wrong);
	EXPECT_EQ(1, a.registered);
	EXPECT_EQ(0, wrong);
	if (!ret && done == nr)
		SKIP(goto out, "the workers were done before the arming");
	EXPECT_EQ(-ECANCELED, ret);
	EXPECT_GT(2 * walk, end - c.released_at);
	EXPECT_GT(nr, done);
	EXPECT_EQ(done * ps, req.populated);
out:
	munmap(a.p, a.len);
	close(fd);
	free(pm);
	free(r);
}

/*
 * A cancel right after a fault that mapped a transparent huge page: a range
 * armed for userfaultfd from the start, nobody answering, the caller waits
 * in the fault of its first page; a cancel, then the handler gone. That
 * fault then maps a huge page (where THP is on and one is free), the call
 * stops after it with ECANCELED, and populated is exactly the pages present
 * from the start: 2 MiB, not the one page the fault was asked for. With a
 * request (8 MiB) and without (4 MiB, the caller's alone).
 */
static void cancel_after_a_huge_page_fault(struct __test_metadata *_metadata,
					   size_t len)
{
	struct memprepop_control ctl = { 0 };
	struct canceller c = { .ctl = &ctl, .release = true };
	struct memprepop_populate req = { 0 };
	long alone0 = calls_alone();
	int fd = open_dev(), ret;
	char *raw, *p;
	pthread_t ct;

	ASSERT_LE(0, fd);
	raw = map_anon(len + HPAGE);
	ASSERT_NE(NULL, raw);
	p = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	/* Without THP (PREEMPT_RT) the fault maps a page: still compared */
	madvise(p, len, MADV_HUGEPAGE);
	c.uffd = uffd_arm(p, len, 0);
	if (c.uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, pthread_create(&ct, NULL, cancel_later, &c));
	req.addr = (uintptr_t)p;
	req.len = len;
	req.control = (uintptr_t)&ctl;
	ret = ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) ? -errno : 0;
	pthread_join(ct, NULL);
	TH_LOG("populated %llu, %zu present from the start, %ld kB in huge pages",
	       (unsigned long long)req.populated, present_prefix(p, len),
	       smaps_field_kb(p, "AnonHugePages"));
	EXPECT_EQ(-ECANCELED, ret);
	EXPECT_EQ(len < 8 * MiB, calls_alone() - alone0);
	EXPECT_LT(0, req.populated);
	EXPECT_EQ(present_prefix(p, len), req.populated);
	munmap(raw, len + HPAGE);
	close(fd);
}

TEST_F_TIMEOUT(caller, cancel_after_a_huge_page_fault_is_exact, SLOW)
{
	cancel_after_a_huge_page_fault(_metadata, 8 * MiB);
}

TEST_F_TIMEOUT(caller, cancel_alone_after_a_huge_page_fault_is_exact, SLOW)
{
	cancel_after_a_huge_page_fault(_metadata, 4 * MiB);
}

/*
 * A cancel read while a 1 GiB hugetlb page is faulted (seconds of zeroing
 * under TCG): the walk stops a batch into the page, which is all there,
 * and @populated counts it whole, as the page tables say, not up to the
 * next 2 MiB boundary.
 */
TEST_F_TIMEOUT(caller, cancel_inside_a_1g_page_is_exact, SLOW)
{
	size_t len = 1024 * MiB;
	struct memprepop_control ctl = { 0 };
	struct canceller c = { .ctl = &ctl };
	struct memprepop_populate req = { 0 };
	int fd = open_dev(), mfd, ret;
	pthread_t ct;
	double t0;
	char *p;

	ASSERT_LE(0, fd);
	if (read_long(HUGE_1G_FREE) < 1)
		SKIP(return, "no free 1 GiB hugetlb page");
	p = map_hugetlb_1g(len, &mfd);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pthread_create(&ct, NULL, cancel_later, &c));
	req.addr = (uintptr_t)p;
	req.len = len;
	req.control = (uintptr_t)&ctl;
	t0 = now();
	ret = ioctl(fd, MEMPREPOP_IOC_POPULATE, &req) ? -errno : 0;
	pthread_join(ct, NULL);
	TH_LOG("%s after %.3f s (cancel at %.3f s): populated %llu, %zu present from the start",
	       ret ? strerror(-ret) : "done", now() - t0, c.at - t0,
	       (unsigned long long)req.populated, present_prefix(p, len));
	EXPECT_TRUE(!ret || ret == -ECANCELED);
	EXPECT_EQ(present_prefix(p, len), req.populated);
	munmap(p, len);
	close(mfd);
	close(fd);
}

/* --- equal to madvise on the same mapping ---------------------------------- */

#define KPF_LRU		5
#define KPF_UNEVICTABLE	18
#define KPF_MLOCKED	33

/* Pages of [p, p + len) whose /proc/kpageflags has every bit of @mask */
static long kpageflags_count(const char *p, size_t len, uint64_t mask)
{
	int pm = open("/proc/self/pagemap", O_RDONLY);
	int kf = open("/proc/kpageflags", O_RDONLY);
	long count = 0;

	if (pm < 0 || kf < 0)
		return -1;
	for (size_t off = 0; off < len; off += page_size()) {
		uint64_t ent, flags;

		if (pread(pm, &ent, 8, ((uintptr_t)p + off) / page_size() * 8)
		    != 8 || !(ent & (1ULL << 63)))
			continue;
		if (pread(kf, &flags, 8, (ent & ((1ULL << 55) - 1)) * 8) != 8)
			continue;
		count += (flags & mask) == mask;
	}
	close(pm);
	close(kf);
	return count;
}

/*
 * Every page is on an LRU list, and with MEMPREPOP_F_REQUIRE_MLOCKED
 * unevictable and mlocked, as after madvise(), once the CPUs' LRU batches
 * are drained: compaction drains every CPU's first (lru_add_drain_all()).
 * madvise's populate drains its own CPU's batches at its end, with
 * lru_add_drain(), which is not exported: the module leaves the last pages
 * of each thread's batch to that CPU's next drain, and right after the
 * call the counts are logged, not compared (a thread that moves to
 * another CPU mid-call leaves its batch behind with madvise too).
 */
static bool drain_all_cpus(void)
{
	int cpu = sched_getcpu(), fd;
	cpu_set_t was, one;
	bool ok;

	/*
	 * Compaction then migrates pages, and puts those it moved in the
	 * batch of the CPU it runs on, this thread's: a madvise() populate on
	 * that CPU drains it (mm/gup.c faultin_page_range())
	 */
	if (cpu < 0 || sched_getaffinity(0, sizeof(was), &was))
		return false;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return false;
	fd = open("/proc/sys/vm/compact_memory", O_WRONLY);
	ok = fd >= 0 && write(fd, "1", 1) == 1;
	if (fd >= 0)
		close(fd);
	if (ok) {
		static char page[1 << 16] __attribute__((aligned(1 << 16)));

		ok = !madvise_populate_write(page, page_size());
	}
	sched_setaffinity(0, sizeof(was), &was);
	return ok;
}

TEST_F_TIMEOUT(caller, lru_and_unevictable_once_drained, SLOW)
{
	size_t len = 64 * MiB, n = len / page_size();
	int fd = open_dev();

	ASSERT_LE(0, fd);
	if (kpageflags_count(NULL, 0, 0) < 0)
		SKIP(return, "no /proc/kpageflags");
	if (!drain_all_cpus())
		SKIP(return, "no /proc/sys/vm/compact_memory: %s",
		     strerror(errno));
	for (int lock = 0; lock < 2; lock++) {
		uint64_t mask = 1ULL << KPF_LRU;
		long now[2], drained[2];

		if (lock)
			mask |= 1ULL << KPF_UNEVICTABLE | 1ULL << KPF_MLOCKED;
		for (int by_ioctl = 0; by_ioctl < 2; by_ioctl++) {
			struct memprepop_populate req;
			char *p = map_anon_both(len);
			int ret;

			ASSERT_NE(NULL, p);
			no_thp(p, len);
			if (lock)
				ASSERT_EQ(0, mlock2(p, len, MLOCK_ONFAULT));
			ret = by_ioctl ?
			      ioc_populate(fd, p, len,
					   lock ? MEMPREPOP_F_REQUIRE_MLOCKED : 0, &req) :
			      madvise_populate_write(p, len);
			ASSERT_EQ(0, ret);
			now[by_ioctl] = kpageflags_count(p, len, mask);
			ASSERT_TRUE(drain_all_cpus());
			drained[by_ioctl] = kpageflags_count(p, len, mask);
			munmap(p, len);
		}
		TH_LOG("%s of %zu pages, right after the call: madvise %ld, the ioctl %ld; once drained: %ld, %ld",
		       lock ? "lru+unevictable+mlocked" : "lru", n, now[0],
		       now[1], drained[0], drained[1]);
		EXPECT_EQ((long)n, drained[0]);
		EXPECT_EQ((long)n, drained[1]);
	}
	close(fd);
}

/*
 * Holes and unpopulatable mappings after a hole: the errno and the pages
 * the running kernel's madvise() gives (before 6.9 it walks past holes),
 * with populated the prefix that is there, with and without
 * node statistics.
 */
TEST_F_TIMEOUT(caller, holes_like_madvise, SLOW)
{
	static const enum piece layouts[][3] = {
		{ RW, HOLE, RO }, { RW, HOLE, RW }, { HOLE, NONE, RW },
		{ RW, HOLE, PAST_EOF }, { RW, RO, RW }, { RW, RW, HOLE },
		{ HOLE, RW, RW },
	};
	int fd = open_dev();

	ASSERT_LE(0, fd);
	for (unsigned int l = 0; l < sizeof(layouts) / sizeof(layouts[0]);
	     l++) {
		int want, got[2];
		size_t want_pages, len = 3 * PIECE;
		char *p;

		p = lay_out(layouts[l], 3);
		ASSERT_NE(NULL, p);
		want = madvise_populate_write(p, len);
		want_pages = present_pages(p, len);
		munmap(p, len);
		for (int stats = 0; stats < 2; stats++) {
			struct memprepop_populate req;
			uint64_t counts[TEST_NODES];

			p = lay_out(layouts[l], 3);
			ASSERT_NE(NULL, p);
			got[stats] = ioc_populate_stats(fd, p, len, 0,
					stats ? counts : NULL,
					stats ? TEST_NODES : 0, &req);
			EXPECT_EQ(want_pages, present_pages(p, len))
				TH_LOG("layout %u stats %d", l, stats);
			EXPECT_EQ(present_prefix(p, len), req.populated)
				TH_LOG("layout %u stats %d", l, stats);
			munmap(p, len);
		}
		TH_LOG("layout %u: madvise %d (%zu pages), ioctl %d, with node stats %d",
		       l, want, want_pages, got[0], got[1]);
		EXPECT_EQ(want, got[0]);
		EXPECT_EQ(want, got[1]);
	}
	close(fd);
}

/*
 * MEMPREPOP_F_REQUIRE_MLOCKED accepts what mlock() cannot flag: a hugetlb mapping
 * never mlocked succeeds (its pages are never reclaimed), anonymous memory
 * never mlocked is refused.
 */
TEST_F_TIMEOUT(caller, lock_rule_for_hugetlb, SLOW)
{
	struct memprepop_populate req;
	int fd = open_dev();
	char *p;

	ASSERT_LE(0, fd);
	p = map_anon(4 * MiB);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EINVAL, ioc_populate(fd, p, 4 * MiB, MEMPREPOP_F_REQUIRE_MLOCKED,
					&req));
	munmap(p, 4 * MiB);
	if (meminfo_field("HugePages_Free") < 2)
		SKIP(return, "needs 2 free 2 MiB hugetlb pages");
	p = mmap(NULL, 2 * HPAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, ioc_populate(fd, p, 2 * HPAGE, MEMPREPOP_F_REQUIRE_MLOCKED, &req));
	EXPECT_EQ(2 * HPAGE, req.populated);
	munmap(p, 2 * HPAGE);
	close(fd);
}

/* A protection key that denies writes: EINVAL, nothing faulted, as madvise */
TEST_F_TIMEOUT(caller, pkey_denied_like_madvise, SLOW)
{
	size_t len = 32 * MiB;
	struct memprepop_populate req;
	int fd = open_dev(), pkey, want;
	char *p;

	ASSERT_LE(0, fd);
	pkey = syscall(SYS_pkey_alloc, 0, 2 /* PKEY_DISABLE_WRITE */);
	if (pkey < 0)
		SKIP(return, "no protection keys: %s", strerror(errno));
	for (int by_ioctl = 0; by_ioctl < 2; by_ioctl++) {
		p = map_anon_both(len);
		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, syscall(SYS_pkey_mprotect, p, len,
				     PROT_READ | PROT_WRITE, pkey));
		if (!by_ioctl)
			want = madvise_populate_write(p, len);
		else
			EXPECT_EQ(want, ioc_populate(fd, p, len, 0, &req));
		EXPECT_EQ(0, present_pages(p, len));
		munmap(p, len);
	}
	EXPECT_EQ(-EINVAL, want);
	close(fd);
}

/* --- bounds ---------------------------------------------------------------- */

struct caller_thread {
	pthread_t tid;
	int fd;
	int ret;
};

static void *populate_256m(void *arg)
{
	struct caller_thread *t = arg;
	struct memprepop_populate req;
	size_t len = 256 * MiB;
	char *p = map_anon_both(len);

	t->ret = p ? ioc_populate(t->fd, p, len, 0, &req) : -ENOMEM;
	if (p)
		munmap(p, len);
	return NULL;
}

/*
 * Four threads calling at once get no more workers between them than the
 * process has CPUs: workers are bounded per process, however many
 * callers.
 */
TEST_F_TIMEOUT(caller, threads_bounded_per_process, SLOW)
{
	struct caller_thread t[4];
	struct sampler s = { 0 };
	int fd = open_dev();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pthread_create(&s.tid, NULL, sample, &s));
	for (int i = 0; i < 4; i++) {
		t[i].fd = fd;
		ASSERT_EQ(0, pthread_create(&t[i].tid, NULL, populate_256m,
					    &t[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i].tid, NULL);
		EXPECT_EQ(0, t[i].ret);
	}
	s.stop = true;
	pthread_join(s.tid, NULL);
	TH_LOG("at most %d workers at once for 4 callers on %ld CPUs",
	       s.most, sysconf(_SC_NPROCESSORS_ONLN));
	EXPECT_LT(0, s.most);
	EXPECT_GE(sysconf(_SC_NPROCESSORS_ONLN), s.most);
	close(fd);
}

/* --- identity: NUMA balancing's task groups ------------------------------ */

/*
 * NUMA balancing driven fast, as the tests of the library drive it: the
 * scanner makes a range's PTEs PROT_NONE every few milliseconds, so that
 * the threads touching it take hinting faults.
 */
static const char *const balancing_knobs[][2] = {
	{ "/proc/sys/kernel/numa_balancing", "1" },
	{ "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms", "0" },
	{ "/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms", "10" },
	{ "/sys/kernel/debug/sched/numa_balancing/scan_size_mb", "1024" },
};

#define NR_KNOBS	(sizeof(balancing_knobs) / sizeof(balancing_knobs[0]))

#define SCHED_SIZE	16384

/* /proc/TID/sched into @buf of SCHED_SIZE: false if it cannot be read */
static bool sched_of(pid_t tid, char *buf)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/sched", tid);
	return read_file(path, buf, SCHED_SIZE) > 0;
}

/* The number after @key in a /proc/TID/sched, or -1 when it has none */
static int sched_field(const char *buf, const char *key)
{
	const char *s = strstr(buf, key);

	return s ? atoi(s + strlen(key)) : -1;
}

/*
 * A task's NUMA balancing group, as /proc/TID/sched shows it: the group's
 * id, 0 for none, -1 when the file does not say (no CONFIG_SCHED_DEBUG).
 */
static int numa_group_of(pid_t tid)
{
	char buf[SCHED_SIZE];

	return sched_of(tid, buf) ? sched_field(buf, "numa_group_id=") : -1;
}

/*
 * What NUMA balancing saw of a thread, for the log: the node it runs on
 * and the hinting faults it took, private (on pages it noted last) and
 * shared (noted by another thread: the only ones that can group it).
 */
static void numa_faults_of(const char *who, pid_t tid)
{
	unsigned long priv = 0, shared = 0, p, s;
	char buf[SCHED_SIZE], *line;

	if (!sched_of(tid, buf))
		return;
	for (line = buf; (line = strstr(line, "numa_faults node=")); line++)
		if (sscanf(line, "numa_faults node=%*d task_private=%lu task_shared=%lu",
			   &p, &s) == 2) {
			priv += p;
			shared += s;
		}
	dprintf(1, "#   %s %d: on node %d, hinting faults private %lu, shared %lu\n",
		who, tid, sched_field(buf, "current_node="), priv, shared);
}

struct shared_range {
	char *p;
	size_t len;
	int fd;			/* the device, or -1 for madvise */
	int stop;
	pid_t tid;
};

/* A thread of the process writing every page of the range, over and over */
static void *keep_writing(void *arg)
{
	struct shared_range *r = arg;

	__atomic_store_n(&r->tid, syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED))
		for (size_t off = 0; off < r->len; off += page_size())
			((volatile char *)r->p)[off]++;
	return NULL;
}

/* A thread of the process populating the range, over and over */
static void *keep_populating(void *arg)
{
	struct shared_range *r = arg;
	struct memprepop_populate req;

	__atomic_store_n(&r->tid, syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		if (r->fd < 0)
			madvise_populate_write(r->p, r->len);
		else
			ioc_populate(r->fd, r->p, r->len, 0, &req);
		usleep(1000);
	}
	return NULL;
}

/* Is a thread that populated, or a worker, in the writer's group now? */
static bool populators_grouped(struct shared_range *pop, int group)
{
	struct worker_stat ws[64];
	int n;

	if (pop->fd < 0)
		return numa_group_of(pop->tid) == group;
	n = scan_workers(ws, 64);
	for (int i = 0; i < n && i < 64; i++)
		if (numa_group_of(ws[i].tid) == group)
			return true;
	return false;
}

/*
 * In a child: one thread writes a range of the default policy (whose
 * hinting faults note the faulting thread in each page) while another
 * populates it again and again, by madvise or the ioctl (@fd), for up to
 * @secs. A thread faulting on a page the other, running, thread noted
 * last joins its group (task_numa_group()): the writer and the thread that
 * populates, or one of the workers, end up in one group. Exits 0 when
 * they did, 3 when the writer formed no group at all, 4 when the thread
 * that only waited is in it too (grouping then says nothing), 1 otherwise.
 */
static void numa_group_child(int fd, double secs)
{
	struct shared_range w = { .len = 32 * MiB, .fd = -1 };
	struct shared_range pop = { .len = w.len, .fd = fd };
	pthread_t writer, populator;
	int group = 0, grouped = 0, idle;
	double t0 = now();

	w.p = pop.p = map_anon(w.len);
	if (!w.p)
		_exit(10);
	memset(w.p, 1, w.len);
	if (pthread_create(&writer, NULL, keep_writing, &w) ||
	    pthread_create(&populator, NULL, keep_populating, &pop))
		_exit(11);
	while (!grouped && now() - t0 < secs) {
		usleep(100 * 1000);
		group = __atomic_load_n(&w.tid, __ATOMIC_ACQUIRE) ?
			numa_group_of(w.tid) : 0;
		grouped = group > 0 && populators_grouped(&pop, group);
	}
	numa_faults_of("the writer", w.tid);
	numa_faults_of(fd < 0 ? "madvise's thread" : "the caller", pop.tid);
	if (fd >= 0) {
		struct worker_stat ws[64];
		int n = scan_workers(ws, 64);

		for (int i = 0; i < n && i < 64; i++)
			numa_faults_of("a worker", ws[i].tid);
	}
	__atomic_store_n(&pop.stop, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
	pthread_join(populator, NULL);
	pthread_join(writer, NULL);
	/* The control: this thread has not touched the range since memset() */
	idle = numa_group_of(syscall(SYS_gettid));
	dprintf(1, "# %s: %s after %.1f s (the writer's group %d, the idle thread's %d)\n",
		fd < 0 ? "madvise" : "ioctl",
		grouped ? "grouped with the writer" : "not grouped",
		now() - t0, group, idle);
	if (grouped && idle == group)
		_exit(4);
	_exit(grouped ? 0 : group > 0 ? 1 : 3);
}

/* Rounds of numa_group_child(), and each child's time */
#define GROUP_ROUNDS	3
#define GROUP_SECS	30

/* One numa_group_child(), by madvise or the ioctl: its exit code, or -1 */
static int numa_group_run(bool by_ioctl)
{
	int status;
	pid_t pid;

	if (!workers_gone(30))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int fd = by_ioctl ? open_dev() : -1;

		if (by_ioctl && fd < 0)
			_exit(12);
		numa_group_child(fd, GROUP_SECS);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * NUMA balancing groups the threads of a process that share memory, and
 * schedules and places the group as one. A worker is a thread of the
 * caller, so it joins the caller's group by the same faults a thread of
 * the caller doing madvise joins it by. Under TCG a thread either joins
 * within a few seconds or, now and then, not in 30 s, madvise's as often
 * as a worker (2 of 3 madvise rounds missed in one make check; 3 ioctl
 * rounds missed once on 7.3.4 in a fresh clone's make check). madvise
 * first, up to GROUP_ROUNDS runs until its thread joins the writer's group
 * (none: nothing to compare with, a skip); then the ioctl, up to twice as
 * many, until a worker joins: a round joins or misses by chance, and
 * three misses in a row were one chance in four or so. If none does,
 * madvise once more: if its thread misses too, NUMA balancing has stopped
 * grouping anything and the comparison says nothing (a skip); only a
 * worker left out in every round while madvise's thread joins before and
 * after fails.
 */
TEST_F_TIMEOUT(caller, workers_join_callers_numa_group, SLOW)
{
	int control = -1, by_ioctl = -1, again = -1, left_out = 0;
	int madvise_rounds = 0, ioctl_rounds = 0;
	char saved[NR_KNOBS][32];
	bool changed[NR_KNOBS] = { 0 };
	bool broken = false;

	if (access(balancing_knobs[0][0], W_OK))
		SKIP(return, "no NUMA balancing in this kernel");
	if (numa_group_of(getpid()) < 0)
		SKIP(return, "/proc/PID/sched shows no numa_group_id");
	for (unsigned int i = 0; i < NR_KNOBS; i++)
		changed[i] = read_file(balancing_knobs[i][0], saved[i],
				       sizeof(saved[i])) > 0 &&
			     !write_file(balancing_knobs[i][0],
					 balancing_knobs[i][1]);
	/* Exit codes: 0 grouped, 1 the writer alone in a group, 3 none, 4 all */
	while (changed[0] && madvise_rounds < GROUP_ROUNDS && control) {
		control = numa_group_run(false);
		madvise_rounds++;
		broken |= control < 0 || control > 4;
		if (broken)
			break;
	}
	while (changed[0] && !broken && !control &&
	       ioctl_rounds < 2 * GROUP_ROUNDS && by_ioctl) {
		by_ioctl = numa_group_run(true);
		ioctl_rounds++;
		broken |= by_ioctl < 0 || by_ioctl > 4;
		left_out += by_ioctl == 1;
	}
	if (changed[0] && !broken && !control && by_ioctl) {
		again = numa_group_run(false);
		broken |= again < 0 || again > 4;
	}
	for (unsigned int i = NR_KNOBS; i--; )
		if (changed[i])
			write_file(balancing_knobs[i][0], saved[i]);
	if (!changed[0])
		SKIP(return, "cannot enable NUMA balancing");
	ASSERT_FALSE(broken)
		TH_LOG("a child ended with madvise %d, ioctl %d, madvise again %d",
		       control, by_ioctl, again);
	if (control)
		SKIP(return, "NUMA balancing grouped madvise's thread with the writer in none of %d rounds of %d s",
		     GROUP_ROUNDS, GROUP_SECS);
	if (!by_ioctl)
		return;
	if (!left_out)
		SKIP(return, "NUMA balancing grouped no worker nor the writer alone (or the idle thread too) in the ioctl's rounds");
	if (again)
		SKIP(return, "no worker joined in %d rounds, but madvise's thread no longer joined either: NUMA balancing stopped grouping",
		     ioctl_rounds);
	EXPECT_EQ(0, by_ioctl)
		TH_LOG("madvise's thread joined the writer's group in round %d and again after; no worker did in %d rounds",
		       madvise_rounds, ioctl_rounds);
}

TEST_HARNESS_MAIN
