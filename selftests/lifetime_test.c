// SPDX-License-Identifier: GPL-2.0
/*
 * Lifetimes a caller of the device reaches: the file closed while the last
 * worker of its request still tells it, poll() woken before the request is
 * published, an eventfd told after the request was reaped, and a request
 * whose process is gone (exec, exit) while another holds the file. Each is
 * done as a program in the kvm group would do it and read from outside:
 * epoll, eventfd counts, poll, the errno of the next call; and a kept
 * worker idle again before its request is done. A use-after-free
 * shows as a KASAN report in the debug kernel (make check-debug), which the
 * test VM fails the run on, as on any splat.
 */
#define _GNU_SOURCE
#include <numa.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "worker_helpers.h"

#define SLOW	3600

static int open_dev(void)
{
	return open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
}

/* A background request of [addr, addr + len): 0 or -errno */
static int bg_start(int fd, struct memprepop_populate *req, void *addr,
		    size_t len, unsigned int max_workers, int efd)
{
	memset(req, 0, sizeof(*req));
	req->addr = (uintptr_t)addr;
	req->len = len;
	req->flags = MEMPREPOP_F_BACKGROUND;
	req->max_workers = max_workers;
	if (efd >= 0) {
		req->flags |= MEMPREPOP_F_EVENTFD;
		req->eventfd = efd;
	}
	return ioctl(fd, MEMPREPOP_IOC_POPULATE, req) ? -errno : 0;
}

/* Reaps without sleeping in the kernel: spins on NOHANG. 0 or -errno */
static int bg_spin_reap(int fd, int *result)
{
	int ret;

	while ((ret = bg_wait(fd, MEMPREPOP_WAIT_NOHANG, result)) == -EAGAIN)
		;
	return ret;
}

static void pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* A page bound to node 1, so that its one worker runs on CPU 1 */
static char *page_on_node1(void)
{
	unsigned long mask = 2;
	char *p = map_anon(page_size());

	if (p && mbind(p, page_size(), MPOL_BIND, &mask, 8 * sizeof(mask), 0))
		return NULL;
	return p;
}

#define PREEMPT_MODE	"/sys/kernel/debug/sched/preempt"

FIXTURE(lifetime)
{
};

/*
 * The races below need a thread preempted anywhere, which the voluntary
 * preemption Debian's kernel boots with makes rare: where the kernel lets
 * it be chosen at run time (PREEMPT_DYNAMIC), full preemption while the
 * program runs. The mode shows as "none voluntary (full)", the chosen in
 * brackets. A change patches the kernel's text while other CPUs run it,
 * which QEMU's TCG does not always survive ("Oops: int3" in a static call
 * on 7.3 when it was switched for each case): switched once, by the
 * program, and back when it ends.
 */
static char preempt_was[32];
static pid_t preempt_owner;

static void __attribute__((constructor)) preempt_full(void)
{
	char *open_b, *close_b;

	if (read_file(PREEMPT_MODE, preempt_was, sizeof(preempt_was)) < 0)
		goto none;
	open_b = strchr(preempt_was, '(');
	close_b = open_b ? strchr(open_b, ')') : NULL;
	if (!close_b)
		goto none;
	*close_b = 0;
	memmove(preempt_was, open_b + 1, strlen(open_b + 1) + 1);
	if (!strcmp(preempt_was, "full") || write_file(PREEMPT_MODE, "full"))
		goto none;
	preempt_owner = getpid();
	return;
none:
	preempt_was[0] = 0;
}

static void __attribute__((destructor)) preempt_back(void)
{
	if (preempt_was[0] && getpid() == preempt_owner)
		write_file(PREEMPT_MODE, preempt_was);
}

FIXTURE_SETUP(lifetime)
{
}

FIXTURE_TEARDOWN(lifetime)
{
}

FIXTURE_VARIANT(lifetime)
{
	size_t len;
};

/* No worker at all: the start's own notify is the only one */
FIXTURE_VARIANT_ADD(lifetime, empty)
{
	.len = 0,
};

/* One worker, which may be done before the call returns */
FIXTURE_VARIANT_ADD(lifetime, one_page)
{
	.len = 4096,
};

/*
 * The race rig: a one-page request on node 1, whose one worker runs on
 * CPU 1 SCHED_IDLE (a worker takes its caller's scheduling and runs on the
 * caller's CPUs of its node), preempted at every burst of a spinner there;
 * the starter is SCHED_IDLE too, on either CPU; the reaper is on CPU 0 and
 * spins on NOHANG, so it reaps the moment the worker counts itself out,
 * before the worker has told anyone.
 */
struct race {
	volatile bool stop;
	char *page;
	sem_t started, reaped;
	int fd, efd;
	unsigned long rounds, errors;
};

static void *race_starter(void *arg)
{
	struct sched_param sp = { 0 };
	struct race *r = arg;
	cpu_set_t both;

	CPU_ZERO(&both);
	CPU_SET(0, &both);
	CPU_SET(1, &both);
	sched_setaffinity(0, sizeof(both), &both);
	sched_setscheduler(0, SCHED_IDLE, &sp);
	while (!r->stop) {
		struct memprepop_populate req;

		madvise(r->page, page_size(), MADV_DONTNEED);
		/* Each round is the reaper's to end: it says when to stop */
		if (bg_start(r->fd, &req, r->page, page_size(), 1, r->efd))
			r->errors++;
		sem_post(&r->started);
		sem_wait(&r->reaped);
	}
	return NULL;
}

/*
 * On CPU 1, in bursts of random length after gaps of random length: each
 * wake-up preempts the SCHED_IDLE worker at some point of its run, for as
 * long as the burst lasts.
 */
static void *race_spinner(void *arg)
{
	unsigned int seed = getpid();
	struct race *r = arg;

	pin_self(1);
	while (!r->stop) {
		double t0 = now(), burst = (500 + rand_r(&seed) % 2000) / 1e6;

		while (now() - t0 < burst)
			;
		usleep(10 + rand_r(&seed) % 200);
	}
	return NULL;
}

/*
 * Runs the rig for @secs, calling @round after each reap (with the file
 * reaped; it may close and reopen r->fd). Returns false when the machine
 * has not 2 CPUs on 2 nodes.
 */
static bool race_run(struct race *r, double secs,
		     void (*round)(struct race *r))
{
	pthread_t starter, spinner;
	double t0 = now();
	int result;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || numa_available() < 0 ||
	    numa_max_node() < 1)
		return false;
	r->page = page_on_node1();
	if (!r->page)
		return false;
	sem_init(&r->started, 0, 0);
	sem_init(&r->reaped, 0, 0);
	pin_self(0);
	if (pthread_create(&spinner, NULL, race_spinner, r) ||
	    pthread_create(&starter, NULL, race_starter, r))
		return false;
	while (!r->stop) {
		sem_wait(&r->started);
		if (bg_spin_reap(r->fd, &result) || result)
			r->errors++;
		round(r);
		r->rounds++;
		r->stop = now() - t0 >= secs;
		sem_post(&r->reaped);
	}
	pthread_join(starter, NULL);
	pthread_join(spinner, NULL);
	return true;
}

/* The reaped request's file closed at once, another opened */
static void close_and_reopen(struct race *r)
{
	close(r->fd);
	r->fd = open_dev();
	if (r->fd < 0)
		r->errors++;
}

/*
 * The recipe of a use-after-free of the file: the last worker of a request
 * has just counted itself out and has yet to tell the file's poll queue;
 * the reaper sees the request done, reaps it, closes the file (freed) and
 * opens another. The worker must never touch the freed file. Many rounds;
 * the kernel log (KASAN in make check-debug) decides.
 */
TEST_F_TIMEOUT(lifetime, reap_and_close_while_the_worker_notifies, SLOW)
{
	struct race r = { .efd = -1 };

	if (!variant->len)
		SKIP(return, "once is enough");
	r.fd = open_dev();
	ASSERT_LE(0, r.fd);
	if (!race_run(&r, stress_secs(10), close_and_reopen))
		SKIP(return, "needs 2 CPUs on 2 nodes");
	close(r.fd);
	TH_LOG("%lu rounds of start, reap, close (preemption %s)", r.rounds,
	       preempt_was[0] ? "full" : "as booted");
	EXPECT_EQ(0, r.errors);
	EXPECT_LT(10, r.rounds);
}

static void nothing_more(struct race *r)
{
}

/*
 * A kept worker is back on its idle list before its request counts as
 * done: the start that follows the reap at once takes it, and none other is
 * created. The rig preempts the worker just after its count, which, were
 * it told before the worker is idle, leaves the next start without one.
 */
TEST_F_TIMEOUT(lifetime, kept_worker_idle_once_reaped, SLOW)
{
	struct race r = { .efd = -1 };
	long started;

	if (!variant->len)
		SKIP(return, "once is enough");
	ASSERT_TRUE(workers_gone(30));
	r.fd = open_dev();
	ASSERT_LE(0, r.fd);
	started = workers_started();
	if (!race_run(&r, stress_secs(10), nothing_more))
		SKIP(return, "needs 2 CPUs on 2 nodes");
	started = workers_started() - started;
	close(r.fd);
	TH_LOG("%lu rounds of start and reap: %ld workers created (preemption %s)",
	       r.rounds, started, preempt_was[0] ? "full" : "as booted");
	EXPECT_EQ(0, r.errors);
	EXPECT_LT(10, r.rounds);
	EXPECT_EQ(1, started);
}

/* Nothing told to the eventfd after the reap: read it, wait, read again */
static void eventfd_after_reap(struct race *r)
{
	uint64_t count;

	(void)!read(r->efd, &count, sizeof(count));
	usleep(5000);
	if (read(r->efd, &count, sizeof(count)) == sizeof(count))
		r->errors++;
}

/*
 * Once a request is reaped, its eventfd is told nothing more: a count that
 * appears after the reap would read as the next request's.
 */
TEST_F_TIMEOUT(lifetime, eventfd_quiet_after_the_reap, SLOW)
{
	struct race r = { 0 };

	if (!variant->len)
		SKIP(return, "once is enough");
	r.fd = open_dev();
	ASSERT_LE(0, r.fd);
	r.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, r.efd);
	if (!race_run(&r, stress_secs(10), eventfd_after_reap))
		SKIP(return, "needs 2 CPUs on 2 nodes");
	TH_LOG("%lu of %lu reaped requests told their eventfd later",
	       r.errors, r.rounds);
	EXPECT_EQ(0, r.errors);
	close(r.efd);
	close(r.fd);
}

struct watcher {
	int epfd;
	sem_t seen, again;
	volatile bool stop;
};

/* An event loop: level-triggered epoll on the file, told back each time */
static void *watch(void *arg)
{
	struct watcher *w = arg;

	pin_self(0);
	while (!w->stop) {
		struct epoll_event ev;

		if (epoll_wait(w->epfd, &ev, 1, 100) != 1)
			continue;
		sem_post(&w->seen);
		sem_wait(&w->again);
	}
	return NULL;
}

static int sem_wait_ms(sem_t *s, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return sem_timedwait(s, &ts);
}

/*
 * An event loop blocked in epoll_wait() on the file learns of every
 * request: none is lost because its workers were done, and poll() woken,
 * before the call that started it had published it. The caller is
 * SCHED_IDLE beside the loop, so the loop runs the moment it is woken.
 */
TEST_F_TIMEOUT(lifetime, epoll_learns_of_every_request, SLOW)
{
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int rounds = 2000, lost = 0;
	struct sched_param sp = { 0 };
	struct watcher w = { 0 };
	pthread_t tid;
	int fd, result;
	char *p = map_anon(4096);

	ASSERT_NE(NULL, p);
	fd = open_dev();
	ASSERT_LE(0, fd);
	w.epfd = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, w.epfd);
	ASSERT_EQ(0, epoll_ctl(w.epfd, EPOLL_CTL_ADD, fd, &ev));
	sem_init(&w.seen, 0, 0);
	sem_init(&w.again, 0, 0);
	ASSERT_EQ(0, pthread_create(&tid, NULL, watch, &w));
	pin_self(0);
	ASSERT_EQ(0, sched_setscheduler(0, SCHED_IDLE, &sp));
	/* A few lost are enough to know: each one waits a second */
	for (unsigned int i = 0; i < rounds && lost < 5; i++) {
		struct memprepop_populate req;

		madvise(p, 4096, MADV_DONTNEED);
		ASSERT_EQ(0, bg_start(fd, &req, p, variant->len, 0, -1));
		if (sem_wait_ms(&w.seen, 1000)) {
			lost++;
			ASSERT_EQ(0, bg_wait(fd, 0, &result));
			continue;
		}
		ASSERT_EQ(0, bg_wait(fd, MEMPREPOP_WAIT_NOHANG, &result));
		EXPECT_EQ(0, result);
		sem_post(&w.again);
	}
	w.stop = true;
	sem_post(&w.again);
	pthread_join(tid, NULL);
	TH_LOG("%u requests never reported by epoll (of up to %u)", lost,
	       rounds);
	EXPECT_EQ(0, lost);
	close(w.epfd);
	close(fd);
}

/*
 * A large background request of the calling process, on a file it may
 * hand on (not close-on-exec): the file, or -1.
 */
static int start_large_request(void)
{
	struct memprepop_populate req;
	size_t len = 1024 * MiB;
	char *p = map_anon(len);
	int fd = open(MEMPREPOP_DEVICE, O_RDWR);

	if (!p || fd < 0 || bg_start(fd, &req, p, len, 0, -1))
		return -1;
	return fd;
}

/*
 * What a process that inherited the file finds once the request's process
 * is gone: poll() does not report it (a level-triggered loop would spin),
 * the wait has nothing to reap, and the file takes a request of its own.
 * The request's workers, threads of the old image, stop with it.
 * Returns 0, or the number of the check that failed.
 */
static int orphan_checks(int fd)
{
	struct memprepop_populate req;
	char *p = map_anon(4096);
	int result;

	if (!p)
		return 10;
	/* Its workers stop as its mm goes; give them time, then look */
	if (!workers_gone(30))
		return 11;
	if (readable(fd, 300))
		return 12;
	if (bg_wait(fd, MEMPREPOP_WAIT_NOHANG, &result) != -ENOENT)
		return 13;
	if (bg_start(fd, &req, p, 4096, 0, -1))
		return 14;
	if (!readable(fd, 30 * 1000))
		return 15;
	if (bg_wait(fd, 0, &result) || result || req.populated != 4096)
		return 16;
	return 0;
}

#define ORPHAN_FD_ENV	"MEMPREPOP_TEST_ORPHAN_FD"

/* The image exec() brings in: the checks on the file it kept, and out */
static void __attribute__((constructor)) orphan_after_exec(void)
{
	const char *fd = getenv(ORPHAN_FD_ENV);

	if (fd)
		_exit(orphan_checks(atoi(fd)));
}

/*
 * A process starts a large request on a file it keeps across exec(), and
 * execs: the old mm is gone, so is the request's process.
 */
TEST_F_TIMEOUT(lifetime, request_of_a_process_that_execs, SLOW)
{
	int status;
	pid_t pid;

	if (variant->len)
		SKIP(return, "once is enough");
	ASSERT_TRUE(workers_gone(30));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = start_large_request();
		char env[64];

		if (fd < 0)
			_exit(2);
		snprintf(env, sizeof(env), "%d", fd);
		setenv(ORPHAN_FD_ENV, env, 1);
		execl("/proc/self/exe", "lifetime_test", NULL);
		_exit(3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * A process starts a large request and exits while a child it forked
 * holds the file: the child finds the request gone, as after exec().
 */
TEST_F_TIMEOUT(lifetime, request_of_a_process_that_exits, SLOW)
{
	int sv[2], status;
	pid_t pid, holder;
	char byte = 1;

	if (variant->len)
		SKIP(return, "once is enough");
	ASSERT_TRUE(workers_gone(30));
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = start_large_request();
		pid_t h;

		if (fd < 0)
			_exit(2);
		h = fork();
		if (!h) {
			/* Once the starter is gone */
			if (read(sv[1], &byte, 1) != 1)
				_exit(9);
			_exit(orphan_checks(fd));
		}
		_exit(write(sv[1], &h, sizeof(h)) == sizeof(h) ? 0 : 2);
	}
	close(sv[1]);
	ASSERT_EQ(sizeof(holder), read(sv[0], &holder, sizeof(holder)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_EQ(1, write(sv[0], &byte, 1));
	close(sv[0]);
	ASSERT_EQ(holder, waitpid(holder, &status, __WALL));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
