// SPDX-License-Identifier: GPL-2.0
/*
 * Workers that stay: a process's workers wait, idle, for its next call
 * instead of being created again; they are the caller's at each call
 * (scheduling, read from /proc), never more than its CPUs, and gone
 * once it closes the file that keeps them. Another process using a passed
 * file gets workers of its own; nothing is shared between processes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "worker_helpers.h"

/* Minutes under KASAN and TCG: the runner's timeout bounds the program */
#define SLOW	3600

FIXTURE(pool)
{
	int unused;
};

FIXTURE_SETUP(pool)
{
}

FIXTURE_TEARDOWN(pool)
{
}

/*
 * The second call takes the workers of the first: none is created, as many
 * are reused, and they are there, idle, between the calls. Another file
 * of the process has workers of its own. Closing the file ends them.
 */
TEST_F_TIMEOUT(pool, kept_between_calls, SLOW)
{
	size_t len = 64 * MiB;
	struct memprepop_populate req;
	long started, reused;
	int fd, idle;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	ASSERT_TRUE(workers_gone(30));
	fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	started = workers_started();
	ASSERT_EQ(0, ioc_populate(fd, p, len, 0, &req));
	EXPECT_LE(1, req.workers);
	EXPECT_EQ(req.workers, workers_started() - started);
	idle = scan_workers(NULL, 0);
	EXPECT_EQ(req.workers, idle);

	madvise(p, len, MADV_DONTNEED);
	started = workers_started();
	reused = workers_reused();
	ASSERT_EQ(0, ioc_populate(fd, p, len, 0, &req));
	TH_LOG("second call: %u workers, %ld created, %ld reused",
	       req.workers, workers_started() - started,
	       workers_reused() - reused);
	EXPECT_EQ(0, workers_started() - started);
	EXPECT_EQ(req.workers, workers_reused() - reused);
	EXPECT_EQ(len / page_size(), present_pages(p, len));

	/* Another file of the same process has its own, gone at its close */
	{
		int fd2 = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);

		ASSERT_LE(0, fd2);
		madvise(p, len, MADV_DONTNEED);
		started = workers_started();
		ASSERT_EQ(0, ioc_populate(fd2, p, len, 0, &req));
		EXPECT_EQ(req.workers, workers_started() - started);
		EXPECT_EQ(idle + req.workers, scan_workers(NULL, 0));
		close(fd2);
	}
	EXPECT_EQ(idle, scan_workers(NULL, 0));
	close(fd);
	EXPECT_TRUE(workers_gone(5));
	munmap(p, len);
}

/*
 * A worker that stayed is made the caller's again at each call: after a
 * call at SCHED_OTHER, a SCHED_BATCH nice 5 caller's call runs on workers
 * of that policy and nice only.
 */
TEST_F_TIMEOUT(pool, kept_workers_take_each_callers_scheduling, SLOW)
{
	int status;
	pid_t pid;

	ASSERT_TRUE(workers_gone(30));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct memprepop_populate req;
		size_t len = 512 * MiB;
		int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
		int seen = 0, bad = 0;
		char *p = map_anon(len);
		long reused = workers_reused();

		if (!p || fd < 0 || ioc_populate(fd, p, 64 * MiB, 0, &req))
			_exit(2);
		if (become_batch_nice5())
			_exit(3);
		memset(&req, 0, sizeof(req));
		req.addr = (uintptr_t)p;
		req.len = len;
		req.flags = MEMPREPOP_F_BACKGROUND;
		if (ioctl(fd, MEMPREPOP_IOC_POPULATE, &req))
			_exit(4);
		for (;;) {
			struct memprepop_wait w = {
				.flags = MEMPREPOP_WAIT_NOHANG,
			};

			sample_batch_nice5(&seen, &bad);
			if (!ioctl(fd, MEMPREPOP_IOC_WAIT, &w))
				break;
			if (errno != EAGAIN)
				_exit(5);
		}
		printf("# %d worker observations, %d not SCHED_BATCH nice 5, %ld reused\n",
		       seen, bad, workers_reused() - reused);
		fflush(stdout);
		_exit(!seen ? 6 : bad ? 7 : workers_reused() == reused ? 8 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

struct own_sampler {
	pthread_t tid;
	volatile bool stop, ready;
	int most;		/* most workers seen among this process's threads */
};

static void *sample_own(void *arg)
{
	struct own_sampler *s = arg;

	while (!s->stop) {
		int n = own_workers();

		if (n > s->most)
			s->most = n;
		s->ready = true;
		usleep(1000);
	}
	return NULL;
}

/*
 * A file passed to another process serves it with workers of its own,
 * which go when it closes its descriptor; the owner's stay. When workers
 * are the caller's threads, the owner's that stay are threads of the
 * owner, and the receiver's are threads of the receiver, never the
 * owner's.
 */
TEST_F_TIMEOUT(pool, passed_file_gets_its_own_workers, SLOW)
{
	size_t len = 256 * MiB;
	struct memprepop_populate req;
	int sv[2], status, fd, kept;
	char *p = map_anon(len);
	pid_t pid;

	ASSERT_NE(NULL, p);
	ASSERT_TRUE(workers_gone(30));
	fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioc_populate(fd, p, len, 0, &req));
	kept = scan_workers(NULL, 0);
	EXPECT_LE(1, kept);
	EXPECT_EQ(kept, own_workers());
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct own_sampler os = { 0 };
		char *q = map_anon(len);
		int rfd;

		close(fd);
		rfd = recv_fd(sv[1]);
		if (!q || rfd < 0)
			_exit(2);
		long w0 = workers_started();

		if (pthread_create(&os.tid, NULL, sample_own, &os))
			_exit(6);
		while (!os.ready)
			usleep(1000);
		if (ioc_populate(rfd, q, len, 0, &req) || !req.workers)
			_exit(3);
		os.stop = true;
		pthread_join(os.tid, NULL);
		dprintf(1, "# the receiver's call: %u workers, %ld started, at most %d seen among its own threads\n",
			req.workers, workers_started() - w0, os.most);
		if (os.most < 1)
			_exit(7);
		if (present_pages(q, len) != len / page_size())
			_exit(4);
		/* Closed: its workers gone at once, the owner's still there */
		close(rfd);
		_exit(scan_workers(NULL, 0) == kept ? 0 : 5);
	}
	ASSERT_EQ(0, send_fd(sv[0], fd));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
	EXPECT_TRUE(workers_gone(5));
	munmap(p, len);
}

/*
 * Many processes, each with its file and workers that stay, calling at
 * once and again: never more workers for one process than it has CPUs,
 * and never more alive than that for all of them.
 */
TEST_F_TIMEOUT(pool, many_processes_within_their_cpus, SLOW)
{
	int nproc = 8, ncpu = sysconf(_SC_NPROCESSORS_ONLN), most = 0;
	pid_t pids[8];
	int status;

	ASSERT_TRUE(workers_gone(30));
	for (int i = 0; i < nproc; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i]) {
			size_t len = 64 * MiB;
			struct memprepop_populate req;
			int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
			char *p = map_anon(len);

			if (fd < 0 || !p)
				_exit(2);
			for (int round = 0; round < 4; round++) {
				if (ioc_populate(fd, p, len, 0, &req) ||
				    req.workers > (unsigned int)ncpu)
					_exit(3);
				if (own_workers() > ncpu)
					_exit(4);
				madvise(p, len, MADV_DONTNEED);
			}
			_exit(0);
		}
	}
	for (int done = 0; done < nproc;) {
		int n = scan_workers(NULL, 0);

		if (n > most)
			most = n;
		while (waitpid(-1, &status, WNOHANG) > 0) {
			EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
				TH_LOG("status %#x", status);
			done++;
		}
		usleep(2000);
	}
	TH_LOG("%d processes of %d CPUs: at most %d workers alive", nproc,
	       ncpu, most);
	EXPECT_GE(nproc * ncpu, most);
	EXPECT_TRUE(workers_gone(10));
}

/*
 * Nothing is shared between processes: processes that keep idle workers
 * (their files open) take nothing from another. Two processes keep two
 * workers each; a third gets its two, new, and the keepers' four stay.
 */
TEST_F_TIMEOUT(pool, idle_keepers_take_nothing_from_another, SLOW)
{
	int ready[2], hold[2], status, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t len = 64 * MiB;
	struct memprepop_populate req;
	pid_t keepers[2];
	long started;
	char *p;
	int fd;

	if (ncpu < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_TRUE(workers_gone(30));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(hold));
	for (int i = 0; i < 2; i++) {
		keepers[i] = fork();
		ASSERT_LE(0, keepers[i]);
		if (!keepers[i]) {
			char *q = map_anon_both(len);
			int kfd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
			char byte;

			if (!q || kfd < 0 ||
			    ioc_populate_workers(kfd, q, len, 0, 2, &req) ||
			    req.workers != 2)
				_exit(2);
			/* Its file open, its workers idle, until told */
			if (write(ready[1], "x", 1) != 1 ||
			    read(hold[0], &byte, 1) != 1)
				_exit(3);
			_exit(0);
		}
	}
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(1, read(ready[0], &status, 1));
	EXPECT_EQ(4, scan_workers(NULL, 0));

	p = map_anon_both(len);
	ASSERT_NE(NULL, p);
	fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	started = workers_started();
	EXPECT_EQ(0, ioc_populate_workers(fd, p, len, 0, 2, &req));
	TH_LOG("beside 4 idle kept workers of two other processes: %u workers, %ld new, %d alive",
	       req.workers, workers_started() - started,
	       scan_workers(NULL, 0));
	EXPECT_EQ(2, req.workers);
	EXPECT_EQ(2, workers_started() - started);
	EXPECT_EQ(6, scan_workers(NULL, 0));
	close(fd);
	EXPECT_EQ(4, scan_workers(NULL, 0));

	ASSERT_EQ(2, write(hold[1], "xx", 2));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(keepers[i], waitpid(keepers[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	}
	EXPECT_TRUE(workers_gone(10));
	munmap(p, len);
}

TEST_HARNESS_MAIN
