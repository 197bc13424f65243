// SPDX-License-Identifier: GPL-2.0
/*
 * Background requests: started, left running, learnt of through poll() or
 * an eventfd, reaped with MEMPREPOP_IOC_WAIT; cancelled through @control, by
 * closing the file, by the process exiting; and still the caller's (its
 * scheduling, its userfaultfd handler). Each outcome is read from outside:
 * pages present, worker threads in /proc, whether the process is reaped.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"
#include "uffd_helpers.h"
#include "worker_helpers.h"

#define SLOW	3600

struct bg {
	struct memprepop_populate req;
	struct memprepop_control ctl;
};

static int bg_start(int fd, struct bg *bg, void *addr, size_t len,
		    uint64_t flags)
{
	memset(bg, 0, sizeof(*bg));
	bg->req.addr = (uintptr_t)addr;
	bg->req.len = len;
	bg->req.flags = MEMPREPOP_F_BACKGROUND | flags;
	bg->req.control = (uintptr_t)&bg->ctl;
	return ioctl(fd, MEMPREPOP_IOC_POPULATE, &bg->req) ? -errno : 0;
}

FIXTURE(bg)
{
	int fd;
};

FIXTURE_SETUP(bg)
{
	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(bg)
{
	close(self->fd);
}

/*
 * The call returns while the workers fault; poll() says nothing until they
 * are done, then EPOLLIN; the wait reaps it with the outcome the synchronous
 * call would have had.
 */
TEST_F_TIMEOUT(bg, start_poll_wait, SLOW)
{
	size_t len = 512 * MiB, at_start;
	double t0, t_start, t_done;
	struct bg bg;
	int result;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	t0 = now();
	ASSERT_EQ(0, bg_start(self->fd, &bg, p, len, 0));
	t_start = now() - t0;
	at_start = present_pages(p, len);
	EXPECT_FALSE(readable(self->fd, 0));
	EXPECT_EQ(-EAGAIN, bg_wait(self->fd, MEMPREPOP_WAIT_NOHANG, &result));
	EXPECT_TRUE(readable(self->fd, 600 * 1000));
	t_done = now() - t0;
	ASSERT_EQ(0, bg_wait(self->fd, MEMPREPOP_WAIT_NOHANG, &result));
	TH_LOG("started in %.4f s with %zu of %zu pages, done in %.3f s",
	       t_start, at_start, len / page_size(), t_done);
	EXPECT_EQ(0, result);
	EXPECT_LT(at_start, len / page_size());
	EXPECT_LT(t_start * 10, t_done);
	EXPECT_EQ(len, bg.req.populated);
	EXPECT_EQ(len, bg.ctl.done);
	EXPECT_LE(1, bg.req.workers);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	/* Reaped: nothing left, and a new one may start */
	EXPECT_EQ(-ENOENT, bg_wait(self->fd, 0, &result));
	EXPECT_FALSE(readable(self->fd, 0));
	munmap(p, len);
}

/* Even a small request is the workers', not left to the reaping thread */
TEST_F_TIMEOUT(bg, small_request_done_by_workers, SLOW)
{
	size_t len = 2 * MiB;
	struct bg bg;
	int result;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, bg_start(self->fd, &bg, p, len, 0));
	EXPECT_TRUE(readable(self->fd, 60 * 1000));
	/* Done before anyone waits */
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	ASSERT_EQ(0, bg_wait(self->fd, 0, &result));
	EXPECT_EQ(0, result);
	EXPECT_EQ(len, bg.req.populated);
	munmap(p, len);
}

/* An eventfd given is signalled once the request wants to be reaped */
TEST_F_TIMEOUT(bg, eventfd_signalled, SLOW)
{
	size_t len = 128 * MiB;
	int efd = eventfd(0, EFD_CLOEXEC), result;
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	uint64_t count = 0;
	struct bg bg;
	char *p = map_anon(len);

	ASSERT_LE(0, efd);
	ASSERT_NE(NULL, p);
	memset(&bg, 0, sizeof(bg));
	bg.req.addr = (uintptr_t)p;
	bg.req.len = len;
	bg.req.flags = MEMPREPOP_F_BACKGROUND | MEMPREPOP_F_EVENTFD;
	bg.req.eventfd = efd;
	ASSERT_EQ(0, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &bg.req));
	ASSERT_EQ(1, poll(&pfd, 1, 600 * 1000));
	ASSERT_EQ(sizeof(count), read(efd, &count, sizeof(count)));
	EXPECT_LE(1, count);
	ASSERT_EQ(0, bg_wait(self->fd, MEMPREPOP_WAIT_NOHANG, &result));
	EXPECT_EQ(0, result);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	close(efd);
	munmap(p, len);
}

/* What the file refuses, each with its errno, nothing started by it */
TEST_F(bg, refused)
{
	size_t len = 32 * MiB;
	struct memprepop_wait w = { 0 };
	int pipefd[2], result;
	struct bg bg, bg2;
	char *p = map_anon(len), *q = map_anon(len);

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	EXPECT_EQ(-ENOENT, bg_wait(self->fd, 0, &result));
	w.flags = 2;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	w.flags = 0;
	w.__reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);

	/* Not an eventfd */
	ASSERT_EQ(0, pipe(pipefd));
	memset(&bg, 0, sizeof(bg));
	bg.req.addr = (uintptr_t)q;
	bg.req.len = len;
	bg.req.flags = MEMPREPOP_F_BACKGROUND | MEMPREPOP_F_EVENTFD;
	bg.req.eventfd = pipefd[0];
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &bg.req));
	EXPECT_EQ(EBADF, errno);
	bg.req.eventfd = -1;
	EXPECT_EQ(-1, ioctl(self->fd, MEMPREPOP_IOC_POPULATE, &bg.req));
	EXPECT_EQ(EBADF, errno);
	close(pipefd[0]);
	close(pipefd[1]);
	EXPECT_EQ(0, present_pages(q, len));

	/* One at a time per file; another file takes its own */
	ASSERT_EQ(0, bg_start(self->fd, &bg, p, len, 0));
	EXPECT_EQ(-EBUSY, bg_start(self->fd, &bg2, q, len, 0));
	ASSERT_EQ(0, bg_wait(self->fd, 0, &result));
	EXPECT_EQ(0, result);
	EXPECT_EQ(0, present_pages(q, len));
	munmap(p, len);
	munmap(q, len);
}

struct vm_sibling {
	int fd;
	int err;
};

/* In a process that shares the caller's mm (clone(CLONE_VM)) */
static int wait_from_sibling(void *arg)
{
	struct vm_sibling *v = arg;
	struct memprepop_wait w = { 0 };

	v->err = syscall(SYS_ioctl, v->fd, MEMPREPOP_IOC_WAIT, &w) ? errno : 0;
	return 0;
}

/*
 * A request is its process's to reap: another process that shares its mm
 * (clone(CLONE_VM) without CLONE_THREAD, as vfork() children are) gets
 * EPERM rather than wait for the first one's workers.
 */
TEST_F_TIMEOUT(bg, not_reaped_by_a_process_sharing_the_mm, SLOW)
{
	size_t len = 256 * MiB, stack_len = 256 * 1024;
	struct vm_sibling v = { .fd = self->fd, .err = -1 };
	char *p = map_anon(len), *stack = map_anon(stack_len);
	int result, status;
	struct bg bg;
	pid_t pid;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, stack);
	ASSERT_EQ(0, bg_start(self->fd, &bg, p, len, 0));
	pid = clone(wait_from_sibling, stack + stack_len, CLONE_VM | SIGCHLD,
		    &v);
	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(EPERM, v.err);
	ASSERT_EQ(0, bg_wait(self->fd, 0, &result));
	EXPECT_EQ(0, result);
	EXPECT_EQ(len, bg.req.populated);
	munmap(stack, stack_len);
	munmap(p, len);
}

struct vm_heir {
	int fd;
	int go[2], rep[2];
	char *p;
	size_t len;
};

/* Shares the mm and descriptors of a process that exits before it acts */
static int start_after_owner_exits(void *arg)
{
	struct vm_heir *h = arg;
	struct memprepop_populate req = { 0 };
	struct memprepop_wait w = { 0 };
	int ret[2];
	char c;

	if (read(h->go[0], &c, 1) != 1)
		return 1;
	req.addr = (uintptr_t)h->p;
	req.len = h->len;
	req.flags = MEMPREPOP_F_BACKGROUND;
	ret[0] = syscall(SYS_ioctl, h->fd, MEMPREPOP_IOC_POPULATE, &req) ?
		 errno : 0;
	ret[1] = ret[0] ? -1 :
		 syscall(SYS_ioctl, h->fd, MEMPREPOP_IOC_WAIT, &w) ? errno :
		 w.result;
	return write(h->rep[1], ret, sizeof(ret)) != sizeof(ret);
}

/*
 * A process starts a request, then exits while another process shares
 * its mm and descriptor table (clone(CLONE_VM | CLONE_FILES)): nobody may
 * reap the request now, so it is let go, and the other process starts
 * its own on the file and reaps it, where the file stayed busy before.
 */
TEST_F_TIMEOUT(bg, let_go_when_its_process_exits_beside_an_mm_sharer, SLOW)
{
	int status, ret[2] = { -1, -1 };
	pid_t pid;
	struct vm_heir h = { .len = 256 * MiB };

	ASSERT_EQ(0, pipe(h.go));
	ASSERT_EQ(0, pipe(h.rep));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t stack_len = 256 * 1024;
		char *stack = map_anon(stack_len), *q = map_anon(h.len);
		struct bg bg;

		h.p = map_anon(h.len);
		h.fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
		if (!stack || !q || !h.p || h.fd < 0 ||
		    bg_start(h.fd, &bg, q, h.len, 0))
			_exit(10);
		if (clone(start_after_owner_exits, stack + stack_len,
			  CLONE_VM | CLONE_FILES, &h) < 0)
			_exit(11);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* Its owner reaped: the heir goes on */
	ASSERT_EQ(1, write(h.go[1], "g", 1));
	ASSERT_TRUE(read_within(h.rep[0], ret, sizeof(ret), 120));
	TH_LOG("the heir's start: %s, its wait's result %d",
	       ret[0] ? strerror(ret[0]) : "0", ret[1]);
	EXPECT_EQ(0, ret[0]);
	EXPECT_EQ(0, ret[1]);
}

/*
 * Failures in the background are the synchronous call's: a hole and a
 * read-only part give madvise's errno and populated.
 */
TEST_F_TIMEOUT(bg, failure_like_madvise, SLOW)
{
	static const enum piece layout[3] = { RW, RO, RW };
	size_t len = 3 * PIECE;
	int want, result;
	size_t want_pages;
	struct bg bg;
	char *p = lay_out(layout, 3);

	ASSERT_NE(NULL, p);
	want = madvise_populate_write(p, len);
	want_pages = present_pages(p, len);
	munmap(p, len);
	p = lay_out(layout, 3);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, bg_start(self->fd, &bg, p, len, 0));
	ASSERT_EQ(0, bg_wait(self->fd, 0, &result));
	EXPECT_EQ(want, result);
	EXPECT_EQ(want_pages, present_pages(p, len));
	EXPECT_EQ(present_prefix(p, len), bg.req.populated);
	munmap(p, len);
}

/*
 * Cancelled through @control at a random moment: ECANCELED (or 0 when it
 * was done first), populated exactly what is there.
 */
TEST_F_TIMEOUT(bg, cancel_through_control, SLOW)
{
	size_t len = 512 * MiB;
	int result, cancelled = 0;

	srand(getpid());
	for (int round = 0; round < 4; round++) {
		char *p = map_anon(len);
		size_t at_cancel;
		struct bg bg;
		double t0;

		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, no_thp(p, len));
		ASSERT_EQ(0, bg_start(self->fd, &bg, p, len, 0));
		usleep(rand() % 400000);
		t0 = now();
		at_cancel = present_pages(p, len) * page_size();
		__atomic_store_n(&bg.ctl.cancel, 1, __ATOMIC_SEQ_CST);
		ASSERT_EQ(0, bg_wait(self->fd, 0, &result));
		TH_LOG("round %d: %d after %.3f s, %zu bytes at the cancel, %llu populated of %zu",
		       round, result, now() - t0, at_cancel,
		       (unsigned long long)bg.req.populated, len);
		if (result == -ECANCELED) {
			cancelled++;
			EXPECT_GT(len, bg.req.populated);
		} else {
			EXPECT_EQ(0, result);
			EXPECT_EQ(len, bg.req.populated);
		}
		EXPECT_EQ(present_prefix(p, len), bg.req.populated);
		munmap(p, len);
	}
	EXPECT_LE(1, cancelled);
}

/* Closing the file cancels: its workers go, the rest is never faulted */
TEST_F_TIMEOUT(bg, close_cancels, SLOW)
{
	size_t len = 2048 * MiB, at_close, later;
	struct bg bg;
	char *p = map_anon(len);
	int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, no_thp(p, len));
	ASSERT_TRUE(workers_gone(30));
	ASSERT_EQ(0, bg_start(fd, &bg, p, len, 0));
	usleep(100 * 1000);
	EXPECT_LT(0, scan_workers(NULL, 0));
	close(fd);
	at_close = present_pages(p, len);
	EXPECT_TRUE(workers_gone(10));
	later = present_pages(p, len);
	TH_LOG("%zu pages at close, %zu once the workers were gone, of %zu",
	       at_close, later, len / page_size());
	EXPECT_GT(len / page_size(), later);
	munmap(p, len);
}

/*
 * The process that started it exits, while another holds the file (a child
 * that inherited it): the request ends with the process, its memory is not
 * kept and the exit is not held up; the holder finds nothing to reap
 * (ENOENT: nobody can reap a request whose process is gone, so it is let
 * go), where it could not reap it while the process lived (EPERM).
 */
TEST_F_TIMEOUT(bg, exit_cancels_with_file_held_elsewhere, SLOW)
{
	int sv[2], status;
	pid_t pid, holder;
	double t0;
	char byte;

	ASSERT_TRUE(workers_gone(30));
	/* The holder is a grandchild: ours to reap once its parent is gone */
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t len = 2048 * MiB;
		char *p = map_anon(len);
		int fd = open(MEMPREPOP_DEVICE, O_RDWR);
		struct bg bg;
		pid_t h;

		if (!p || fd < 0 || bg_start(fd, &bg, p, len, 0))
			_exit(2);
		/* The holder: inherits the file, lives on */
		h = fork();
		if (!h) {
			int result, ret;

			ret = bg_wait(fd, MEMPREPOP_WAIT_NOHANG, &result);
			if (ret != -EPERM && ret != -ENOENT)
				_exit(4);
			read(sv[1], &byte, 1);
			ret = bg_wait(fd, 0, &result);
			_exit(ret == -ENOENT ? 0 : 3);
		}
		write(sv[1], &h, sizeof(h));
		usleep(200 * 1000);
		_exit(0);
	}
	close(sv[1]);
	ASSERT_EQ(sizeof(holder), read(sv[0], &holder, sizeof(holder)));
	t0 = now();
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_TRUE(workers_gone(10));
	TH_LOG("starter reaped and workers gone %.3f s after the exit",
	       now() - t0);
	/* The holder still has the file: the request is gone with its owner */
	byte = 1;
	ASSERT_EQ(1, write(sv[0], &byte, 1));
	close(sv[0]);
	ASSERT_EQ(holder, waitpid(holder, &status, __WALL));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Killed at a random moment with a request running: reaped at once, and no
 * worker left behind.
 */
TEST_F_TIMEOUT(bg, kill_at_random_moments, SLOW)
{
	srand(getpid() ^ 0x5a5a);
	for (int round = 0; round < 6; round++) {
		int status, delay = rand() % 300000;
		pid_t pid = fork();
		double t0;

		ASSERT_LE(0, pid);
		if (!pid) {
			size_t len = 1024 * MiB;
			char *p = map_anon(len);
			int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
			struct bg bg;

			if (!p || fd < 0 || bg_start(fd, &bg, p, len, 0))
				_exit(2);
			for (;;)
				pause();
		}
		usleep(delay);
		t0 = now();
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
		EXPECT_GT(5.0, now() - t0);
		EXPECT_TRUE(workers_gone(10)) TH_LOG("round %d", round);
	}
}

/*
 * The workers of a background request are the caller's too: a SCHED_BATCH
 * caller at nice 5 never has workers of another policy or nice.
 */
TEST_F_TIMEOUT(bg, workers_take_callers_scheduling, SLOW)
{
	int status;
	pid_t pid;

	ASSERT_TRUE(workers_gone(30));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t len = 1024 * MiB;
		int seen = 0, bad = 0, result;
		char *p = map_anon(len);
		int fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
		struct bg bg;

		if (!p || fd < 0 || become_batch_nice5())
			_exit(2);
		if (bg_start(fd, &bg, p, len, 0))
			_exit(3);
		while (!readable(fd, 1))
			sample_batch_nice5(&seen, &bad);
		if (bg_wait(fd, 0, &result) || result)
			_exit(4);
		printf("# %d worker observations, %d not SCHED_BATCH nice 5\n",
		       seen, bad);
		fflush(stdout);
		_exit(!seen ? 5 : bad ? 6 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * A userfaultfd-armed range is faulted by the thread that reaps, never by a
 * worker: poll() says so at once, and the wait does it, the handler
 * answering.
 */
TEST_F_TIMEOUT(bg, userfaultfd_left_to_the_reaper, SLOW)
{
	size_t len = 16 * MiB;
	struct uffd_handler h = { 0 };
	pthread_t tid;
	struct bg bg;
	int result;
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	h.zero = calloc(1, page_size());
	h.uffd = uffd_arm(p, len, 0);
	if (h.uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, pthread_create(&tid, NULL, uffd_serve, &h));
	ASSERT_EQ(0, bg_start(self->fd, &bg, p, len, 0));
	EXPECT_TRUE(readable(self->fd, 10 * 1000));
	ASSERT_EQ(0, bg_wait(self->fd, 0, &result));
	EXPECT_EQ(0, result);
	EXPECT_EQ(len, bg.req.populated);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	h.stop = true;
	pthread_join(tid, NULL);
	/* Counted after its answer woke the faulting thread: read it after */
	EXPECT_EQ(len / page_size(), h.faults);
	close(h.uffd);
	munmap(p, len);
}

TEST_HARNESS_MAIN
