// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl under pressure: a fatal signal mid-populate, userfaultfd-armed
 * ranges, several processes and threads at once, munmap/mprotect/mremap
 * racing with it, a descriptor passed to another process.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "uffd_helpers.h"

static int open_dev(void)
{
	return open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
}

#define TRACING	"/sys/kernel/tracing"

/*
 * SIGKILL mid-populate: the process dies at once, the call ends with EINTR,
 * and every page below populated is there. The caller does not wait for
 * its workers once killed, so pages at and above it may still be faulted
 * by them, within a batch.
 */
TEST(kill_mid_populate)
{
	size_t len = 1024 * MiB, off;
	unsigned char *vec;
	char buf[8192], *line;
	long populated = -1;
	int ret = 1, status;
	bool traced;
	double t0;
	char *p;
	pid_t pid;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	traced = !write_file(TRACING "/trace", "") &&
		 !write_file(TRACING "/events/memprepop/memprepop_populate_end/enable",
			     "1");

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct memprepop_populate req;
		int fd = open_dev();

		_exit(fd < 0 ? 2 : ioc_populate(fd, p, len, 0, &req) ? 3 : 0);
	}
	usleep(500 * 1000);
	t0 = now();
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	TH_LOG("died %.3f s after SIGKILL", now() - t0);
	ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("populate finished first");
	EXPECT_GT(1.0, now() - t0);

	if (!traced)
		SKIP(goto out, "no tracefs: populated not checked");
	write_file(TRACING "/events/memprepop/memprepop_populate_end/enable",
		   "0");
	ASSERT_LT(0, read_file(TRACING "/trace", buf, sizeof(buf)));
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *s = strstr(line, "populated=");

		if (s && strstr(line, "memprepop_populate_end")) {
			populated = strtol(s + 10, NULL, 10);
			ret = strtol(strstr(line, "ret=") + 4, NULL, 10);
		}
	}
	ASSERT_LE(0, populated);
	EXPECT_EQ(-EINTR, ret);
	vec = malloc(len / page_size());
	ASSERT_NE(NULL, vec);
	ASSERT_EQ(0, mincore(p, len, vec));
	for (off = 0; off < (size_t)populated; off += page_size())
		if (!(vec[off / page_size()] & 1))
			break;
	EXPECT_LE(populated, off);
	free(vec);
out:
	munmap(p, len);
}

/*
 * Workers hold module references; none may be left behind by a kill. A
 * killed caller does not wait for its workers: they stop within a batch on
 * their own (the last one tears the address space down), so wait for them,
 * within seconds even under KASAN.
 */
TEST(kill_leaks_no_worker)
{
	char before[32], after[32];
	int i, status;
	double t0;

	ASSERT_LT(0, read_file("/sys/module/memprepop/refcnt", before,
			       sizeof(before)));
	for (i = 0; i < 3; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			struct memprepop_populate req;
			int fd = open_dev();
			char *q = map_anon(512 * MiB);

			_exit(ioc_populate(fd, q, 512 * MiB, 0, &req) ? 1 : 0);
		}
		usleep((100 + 150 * i) * 1000);
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
	}
	t0 = now();
	do {
		usleep(10 * 1000);
		ASSERT_LT(0, read_file("/sys/module/memprepop/refcnt", after,
				       sizeof(after)));
	} while (strcmp(before, after) && now() - t0 < 20);
	TH_LOG("workers gone %.3f s after the last kill", now() - t0);
	EXPECT_STREQ(before, after);
}

/* A userfaultfd-armed range is faulted by the caller, whose handler answers */
TEST(userfaultfd_served)
{
	size_t len = 4 * MiB;
	struct uffd_handler h = { 0 };
	struct memprepop_populate req;
	pthread_t tid;
	char *p = map_anon(len);
	int fd = open_dev();

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, fd);
	h.zero = calloc(1, page_size());
	h.uffd = uffd_arm(p, len, 0);
	if (h.uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, pthread_create(&tid, NULL, uffd_serve, &h));
	EXPECT_EQ(0, ioc_populate(fd, p, len, 0, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	h.stop = true;
	pthread_join(tid, NULL);
	close(h.uffd);
	EXPECT_EQ(len / page_size(), h.faults);
}

/* Nobody answers the userfaultfd: the caller waits, and a kill ends it */
TEST(userfaultfd_unanswered_killable)
{
	int status;
	double t0;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		struct memprepop_populate req;
		char *p = map_anon(32 * MiB);
		int fd = open_dev();

		if (uffd_arm(p, 32 * MiB, 0) < 0)
			_exit(4);
		_exit(ioc_populate(fd, p, 32 * MiB, 0, &req) ? 1 : 0);
	}
	usleep(300 * 1000);
	t0 = now();
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
		SKIP(return, "no userfaultfd");
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_GT(1.0, now() - t0);
}

/* Several processes at once, each populating its own memory */
TEST(concurrent_processes)
{
	int i, status, ok = 0;

	for (i = 0; i < 4; i++) {
		if (!fork()) {
			size_t len = 96 * MiB;
			struct memprepop_populate req;
			uint64_t counts[TEST_NODES];
			char *p = map_anon(len);
			int fd = open_dev();

			_exit(!p || fd < 0 ||
			      ioc_populate_stats(fd, p, len, 0, counts,
						 TEST_NODES, &req) ||
			      req.populated != len ||
			      present_pages(p, len) != len / page_size());
		}
	}
	for (i = 0; i < 4; i++) {
		ASSERT_LT(0, wait(&status));
		ok += WIFEXITED(status) && !WEXITSTATUS(status);
	}
	EXPECT_EQ(4, ok);
}

/* Several threads of one process at once, sharing one descriptor */
TEST(concurrent_threads)
{
	struct ioc_call t[4];
	pthread_t tid[4];
	int fd = open_dev(), i;

	ASSERT_LE(0, fd);
	for (i = 0; i < 4; i++) {
		t[i].fd = fd;
		t[i].len = 64 * MiB;
		t[i].p = map_anon(t[i].len);
		ASSERT_NE(NULL, t[i].p);
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, ioc_thread,
					    &t[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, t[i].ret);
		EXPECT_EQ(t[i].len / page_size(),
			  present_pages(t[i].p, t[i].len));
		munmap(t[i].p, t[i].len);
	}
}

struct racer {
	char *p;
	size_t len;
	int what;
	volatile bool stop;
};

/* Unmaps, remaps, re-protects and moves the range under the populate */
static void *race_vmas(void *arg)
{
	struct racer *r = arg;
	unsigned int i = 0;

	while (!r->stop) {
		size_t off = (i++ % 8) * (r->len / 8);
		char *q = r->p + off;

		switch (r->what) {
		case 0:
			munmap(q, r->len / 8);
			mmap(q, r->len / 8, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			break;
		case 1:
			mprotect(q, r->len / 8, PROT_READ);
			mprotect(q, r->len / 8, PROT_READ | PROT_WRITE);
			break;
		case 2:
			madvise(q, r->len / 8, MADV_DONTNEED);
			break;
		case 3: {
			char *tmp = mremap(q, r->len / 8, r->len / 8,
					   MREMAP_MAYMOVE);

			if (tmp != MAP_FAILED)
				mremap(tmp, r->len / 8, r->len / 8,
				       MREMAP_MAYMOVE | MREMAP_FIXED, q);
			break;
		}
		}
	}
	return NULL;
}

/* Errors or success, never a crash or a hang, whatever races with it */
TEST(vma_races)
{
	static const char *const what[] = {
		"munmap", "mprotect", "dontneed", "mremap",
	};
	int fd = open_dev();

	ASSERT_LE(0, fd);
	for (int w = 0; w < 4; w++) {
		struct racer r = { .len = 64 * MiB, .what = w };
		int calls = 0, ok = 0, errs = 0;
		double end = now() + 1.5;
		pthread_t tid;

		r.p = map_anon(r.len);
		ASSERT_NE(NULL, r.p);
		ASSERT_EQ(0, pthread_create(&tid, NULL, race_vmas, &r));
		while (now() < end) {
			struct memprepop_populate req;
			int ret = ioc_populate(fd, r.p, r.len, 0, &req);

			calls++;
			if (!ret)
				ok++;
			else if (ret == -ENOMEM || ret == -EINVAL ||
				 ret == -EFAULT)
				errs++;
			else
				TH_LOG("%s: unexpected %d", what[w], ret);
			EXPECT_GE(r.len, req.populated);
		}
		r.stop = true;
		pthread_join(tid, NULL);
		TH_LOG("%s: %d calls, %d succeeded, %d failed as expected",
		       what[w], calls, ok, errs);
		EXPECT_EQ(calls, ok + errs);
		munmap(r.p, r.len);
	}
}

/* A descriptor received over a socket acts on the receiver's own memory */
TEST(fd_passed_acts_on_receiver)
{
	int sv[2], status, fd = open_dev();
	pid_t pid;

	if (fd < 0)
		SKIP(return, "no %s", MEMPREPOP_DEVICE);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct memprepop_populate req;
		size_t len = 16 * MiB;
		char *p = map_anon(len);

		/* Not the parent's: the descriptor comes over the socket */
		close(fd);
		close(sv[0]);
		fd = recv_fd(sv[1]);
		if (fd < 0)
			_exit(2);
		if (ioc_populate(fd, p, len, 0, &req))
			_exit(3);
		_exit(present_pages(p, len) == len / page_size() ? 0 : 4);
	}
	close(sv[1]);
	ASSERT_EQ(0, send_fd(sv[0], fd));
	close(fd);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

#define CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"

/*
 * CPU 1 goes offline and online again and again while calls run, each
 * with a worker per node: one sized for node 1 may find, when it begins,
 * that its CPUs are gone, and takes nothing. Every call still ends as
 * madvise() by the caller on an identical mapping does meanwhile: 0, and
 * every page there.
 */
TEST(cpu_offline_while_workers_begin)
{
	int calls = 0, bad = 0, mbad = 0, fd = open_dev(), status;
	/* A worker per node: 8 MiB each */
	size_t len = 16 * MiB;
	double t0 = now();
	pid_t toggler;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || access(CPU1_ONLINE, W_OK))
		SKIP(return, "needs a CPU 1 that can go offline");
	ASSERT_LE(0, fd);
	toggler = fork();
	ASSERT_LE(0, toggler);
	if (!toggler) {
		for (;;) {
			write_file(CPU1_ONLINE, "0");
			usleep(2000);
			write_file(CPU1_ONLINE, "1");
			usleep(20000);
		}
	}
	while (now() - t0 < 15) {
		struct memprepop_populate req;
		char *p = map_anon_both(len), *q = map_anon_both(len);
		int ret;

		ASSERT_NE(NULL, p);
		ASSERT_NE(NULL, q);
		ret = ioc_populate(fd, p, len, 0, &req);
		if (ret || req.populated != len ||
		    present_pages(p, len) != len / page_size()) {
			TH_LOG("call %d: %d, populated %llu of %zu", calls, ret,
			       (unsigned long long)req.populated, len);
			bad++;
		}
		if (calls % 8 == 0 && madvise(q, len, MADV_POPULATE_WRITE))
			mbad++;
		calls++;
		munmap(p, len);
		munmap(q, len);
	}
	kill(toggler, SIGKILL);
	waitpid(toggler, &status, 0);
	write_file(CPU1_ONLINE, "1");
	TH_LOG("%d calls, %d short; madvise failed %d times", calls, bad, mbad);
	EXPECT_EQ(0, mbad);
	EXPECT_EQ(0, bad);
	close(fd);
}

TEST_HARNESS_MAIN
