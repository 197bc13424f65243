// SPDX-License-Identifier: GPL-2.0
/*
 * A fault that waits on a file system that does not answer: a FUSE file
 * whose READ requests this test's own tiny server holds. What the wait
 * may hold up is the same whether a thread of the caller populates with
 * madvise() or the module's worker does: the caller's own mmap() (the
 * fault path drops mmap_lock while it waits), CPU hotplug (the waiting
 * thread is not pinned to its CPU), and the caller's death (the wait ends
 * at a fatal signal). Each is timed from outside, for both.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "fuse_helpers.h"
#include "worker_helpers.h"

#define SLOW		3600
#define FILE_LEN	(16 * MiB)	/* what wait_on_an_unanswered_read maps */
#define FILE_SIZE	FUSE_FILE_SIZE
#define CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"

FIXTURE(fuse)
{
	struct fuse_server s;
};

FIXTURE_VARIANT(fuse)
{
	bool by_ioctl;
};

FIXTURE_VARIANT_ADD(fuse, madvise)
{
	.by_ioctl = false,
};

FIXTURE_VARIANT_ADD(fuse, ioctl)
{
	.by_ioctl = true,
};

FIXTURE_SETUP(fuse)
{
	int ret = fuse_server_start(&self->s, "fuse");

	if (ret == -ENODEV)
		SKIP(return, "no /dev/fuse");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(fuse)
{
	if (self->s.fd < 0)
		return;
	fuse_release_reads(&self->s);
	write_file(CPU1_ONLINE, "1");
	fuse_server_stop(&self->s);
}

/* Waits for @pid up to @secs: seconds taken, or -1 when still running */
static double wait_for(pid_t pid, double secs, int *status)
{
	double t0 = now();

	while (now() - t0 < secs) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return now() - t0;
		usleep(5000);
	}
	return -1;
}

/* A helper process writes @val to @path: its pid */
static pid_t write_in_child(const char *path, const char *val)
{
	pid_t pid = fork();

	if (!pid)
		_exit(write_file(path, val) ? 1 : 0);
	return pid;
}

struct caller_side {
	int go, done;		/* pipes: the parent says go, it says how long */
};

/* The caller's other thread: times an mmap() when told to */
static void *time_mmap(void *arg)
{
	struct caller_side *c = arg;
	double t0, took;
	char byte;
	void *p;

	if (read(c->go, &byte, 1) != 1)
		return NULL;
	t0 = now();
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	took = now() - t0;
	if (p != MAP_FAILED)
		munmap(p, 4096);
	(void)!write(c->done, &took, sizeof(took));
	return NULL;
}

/*
 * The caller, on CPU 1, faults the FUSE file's mapping in: by madvise() in
 * its own thread, or through the module, whose one worker then runs on
 * CPU 1 too (the memory's node is the caller's).
 */
static void caller(const char *path, bool by_ioctl, struct caller_side *c)
{
	struct memprepop_populate req;
	cpu_set_t one;
	pthread_t tid;
	int fd, dev;
	char *p;

	CPU_ZERO(&one);
	CPU_SET(1, &one);
	sched_setaffinity(0, sizeof(one), &one);
	fd = open(path, O_RDONLY);
	dev = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0 || dev < 0)
		_exit(2);
	p = mmap(NULL, FILE_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED || pthread_create(&tid, NULL, time_mmap, c))
		_exit(3);
	if (by_ioctl)
		ioc_populate_workers(dev, p, FILE_LEN, 0, 1, &req);
	else
		madvise_populate_write(p, FILE_LEN);
	_exit(0);
}

TEST_F_TIMEOUT(fuse, wait_on_an_unanswered_read, SLOW)
{
	int go[2], done[2], status;
	double mmap_took = -1, offline, reaped, t0;
	struct caller_side c;
	char path[96];
	pid_t pid, hp;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || access(CPU1_ONLINE, W_OK))
		SKIP(return, "needs a CPU 1 that can go offline");
	ASSERT_TRUE(workers_gone(30));
	fuse_path(&self->s, 0, path, sizeof(path));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	c.go = go[0];
	c.done = done[1];
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		caller(path, variant->by_ioctl, &c);

	/* Until the first READ is held, and the faulting thread waits on it */
	t0 = now();
	while (!self->s.reads && now() - t0 < 30)
		usleep(10 * 1000);
	ASSERT_LT(0, self->s.reads);
	usleep(300 * 1000);

	/* The caller's own mmap(), from another of its threads */
	ASSERT_EQ(1, write(go[1], "x", 1));
	t0 = now();
	while (now() - t0 < 10 &&
	       read(done[0], &mmap_took, sizeof(mmap_took)) != sizeof(mmap_took))
		;
	/* CPU 1, where the faulting thread waits, goes offline */
	hp = write_in_child(CPU1_ONLINE, "0");
	ASSERT_LE(0, hp);
	offline = wait_for(hp, 10, &status);
	if (offline < 0) {
		/* Held up: let the reads go, so that it can finish */
		fuse_release_reads(&self->s);
		waitpid(hp, &status, 0);
	}
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(0, write_file(CPU1_ONLINE, "1"));

	/* The caller dies while its fault (or its worker's) still waits */
	t0 = now();
	kill(pid, SIGKILL);
	reaped = wait_for(pid, 10, &status);
	TH_LOG("%s: the caller's mmap() %.3f s, CPU 1 offline %.3f s, the killed caller reaped %.3f s (-1: more than 10 s)",
	       variant->by_ioctl ? "ioctl" : "madvise", mmap_took, offline,
	       reaped);
	if (reaped < 0) {
		fuse_release_reads(&self->s);
		waitpid(pid, &status, 0);
	}
	EXPECT_LE(0, mmap_took);
	EXPECT_GT(1.0, mmap_took);
	EXPECT_LE(0, offline);
	EXPECT_GT(1.0, offline);
	EXPECT_LE(0, reaped);
	EXPECT_GT(1.0, reaped);
	/* The worker, told by the kill, does not wait for the answer */
	EXPECT_TRUE(workers_gone(5));
	fuse_release_reads(&self->s);
	EXPECT_TRUE(workers_gone(10));
	for (int i = 0; i < 2; i++) {
		close(go[i]);
		close(done[i]);
	}
}

/*
 * The caller's thread changes its fsuid (a VMM dropping privileges) while
 * the file's pages are faulted in: by madvise() of the first 16 MiB, then
 * of the rest; or by a background request of all 64 MiB, whose worker
 * cannot get past the first READ, held until the change is made. The FUSE server
 * sees the fsuid of the faulting task in each READ: from 32 MiB on, past
 * the chunk the worker was in, every READ has the new one.
 */
TEST_F_TIMEOUT(fuse, fsuid_changed_while_populating, SLOW)
{
	unsigned int old = 0, changed = 0, late_old = 0;
	int tell[2], status;
	char path[96], byte;
	pid_t pid;

	ASSERT_TRUE(workers_gone(30));
	fuse_path(&self->s, 0, path, sizeof(path));
	ASSERT_EQ(0, pipe(tell));
	self->s.release = !variant->by_ioctl;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct memprepop_populate req;
		int fd = open(path, O_RDONLY);
		int dev = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC), res;
		char *p;

		if (fd < 0 || dev < 0)
			_exit(2);
		p = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			 fd, 0);
		if (p == MAP_FAILED)
			_exit(3);
		if (!variant->by_ioctl) {
			if (madvise_populate_write(p, 16 * MiB))
				_exit(4);
			syscall(SYS_setfsuid, 1234);
			_exit(madvise_populate_write(p + 16 * MiB,
						     FILE_SIZE - 16 * MiB) ?
			      5 : 0);
		}
		if (ioc_populate_workers(dev, p, FILE_SIZE,
					 MEMPREPOP_F_BACKGROUND, 1, &req))
			_exit(6);
		/* Its worker cannot get past the first READ until told */
		syscall(SYS_setfsuid, 1234);
		if (write(tell[1], "x", 1) != 1 || bg_wait(dev, 0, &res))
			_exit(7);
		_exit(res ? 8 : 0);
	}
	if (variant->by_ioctl) {
		ASSERT_EQ(1, read(tell[0], &byte, 1));
		fuse_release_reads(&self->s);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x", status);
	pthread_mutex_lock(&self->s.lock);
	for (unsigned int i = 0; i < self->s.nr_log; i++) {
		bool late = self->s.log[i].offset >= 32 * MiB;

		if (self->s.log[i].uid == 1234) {
			changed++;
		} else {
			old++;
			late_old += late;
		}
	}
	pthread_mutex_unlock(&self->s.lock);
	TH_LOG("%s: %u READs with the old fsuid (%u of them from 32 MiB on), %u with the new",
	       variant->by_ioctl ? "ioctl" : "madvise", old, late_old,
	       changed);
	EXPECT_LE(1, old);
	EXPECT_EQ(0, late_old);
	EXPECT_LE(1, changed);
	close(tell[0]);
	close(tell[1]);
}

TEST_HARNESS_MAIN
