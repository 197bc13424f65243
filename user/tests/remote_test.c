// SPDX-License-Identifier: GPL-2.0
/*
 * libmemprepop's remote form (memprepop_ctx_new_pid()): another process's
 * memory, read from outside through its /proc files, against what its own
 * madvise(MADV_POPULATE_WRITE) does to an identical mapping.
 *
 * Whether the kernel populates another process is asked of the kernel
 * itself, with process_madvise(2) on an empty vector, not of the library:
 * where it does not (every stock kernel), the refusal is checked (nothing
 * touched) and the other cases skip saying "cannot populate another
 * process", which make check-rfc counts as a failure on the kernel with
 * contrib/linux's series.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <memprepop.h>
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#ifndef __NR_pidfd_open
#define __NR_pidfd_open		434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise	440
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define SIZE		(32UL << 20)
/* C: 16 of the library's 16 MiB chunks */
#define BIG		(256UL << 20)
#define SLOW		600

/*
 * What the target does with its two mappings before it waits; QMP: it
 * answers one client on a QMP socket first, as QEMU would, with B as its
 * one memory backend
 */
enum setup { PLAIN, BOUND, LOCKED, NOBODY, QMP };

/* A process with two identical mappings, A and B, that waits */
struct target {
	pid_t pid;
	int pidfd;
	int cmd, ack;		/* pipes: to it, from it */
	char *a, *b;		/* addresses in it (the same as ours) */
	char *c;		/* BIG bytes, for a cancel midway */
	int node;		/* BOUND: where A and B are bound */
	char qmp[64];		/* QMP: its socket, else empty */
};

/*
 * A QMP server as QEMU's monitor answers what memprepop populate --qmp
 * asks: the greeting, then qmp_capabilities, query-memdev and
 * x-query-ramblock, B being backend "ram0" (QEMU's human-readable table,
 * the block named for its backend's path); one client after the other,
 * each until it closes, until the target is stopped
 */
static void qmp_serve(int listener, const char *b)
{
	char *line = NULL;
	size_t cap = 0;
	int fd;

	while ((fd = accept(listener, NULL, NULL)) >= 0) {
		FILE *in = fdopen(fd, "r");

		if (!in)
			break;
		dprintf(fd, "{\"QMP\": {\"version\": {}, "
			"\"capabilities\": []}}\n");
		while (getline(&line, &cap, in) > 0) {
			if (strstr(line, "\"qmp_capabilities\""))
				dprintf(fd, "{\"return\": {}}\n");
			else if (strstr(line, "\"query-memdev\""))
				dprintf(fd, "{\"return\": [{\"id\": \"ram0\", "
					"\"size\": %lu, "
					"\"policy\": \"default\"}]}\n", SIZE);
			else if (strstr(line, "\"x-query-ramblock\""))
				dprintf(fd, "{\"return\": "
					"{\"human-readable-text\": "
					"\"Block Name PSize Offset Used Total "
					"HVA RO\\n/objects/ram0 4 KiB 0x0 0x%lx "
					"0x%lx 0x%lx rw\\n\"}}\n", SIZE, SIZE,
					(unsigned long)b);
			else
				dprintf(fd, "{\"error\": {\"class\": "
					"\"CommandNotFound\", "
					"\"desc\": \"no\"}}\n");
		}
		fclose(in);
	}
	free(line);
}

/* Listening on @path: the descriptor, or -1 */
static int qmp_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strcpy(sa.sun_path, path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, 1))
		return -1;
	return fd;
}

static int target_start(struct target *t, enum setup setup, int node)
{
	int cmd[2], ack[2];
	char c;

	if (pipe(cmd) || pipe(ack))
		return -1;
	t->node = node;
	if (setup == QMP)
		snprintf(t->qmp, sizeof(t->qmp), "/tmp/remote_test.%d.qmp",
			 getpid());
	/*
	 * Mapped here, before the fork: the child has them, untouched. A and
	 * B are two mappings, a hole between them and after B.
	 */
	t->a = mmap(NULL, 4 * SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t->a == MAP_FAILED)
		return -1;
	t->b = t->a + 2 * SIZE;
	munmap(t->a + SIZE, SIZE);
	munmap(t->b + SIZE, SIZE);
	/* Apart from A, which it would merge with if next to it */
	t->c = mmap(NULL, BIG + SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t->c == MAP_FAILED)
		return -1;
	munmap(t->c + BIG, SIZE);
	/*
	 * The harness runs each case in a process of its own, with one
	 * thread: the children may call anything after fork()
	 */
	t->pid = fork();
	if (t->pid < 0)
		return -1;
	if (!t->pid) {
		unsigned long mask = 1UL << node;
		int ret = 0, listener = -1;

		close(cmd[1]);
		close(ack[0]);
		if (setup == BOUND &&
		    (mbind(t->a, SIZE, MPOL_BIND, &mask, 64, 0) ||
		     mbind(t->b, SIZE, MPOL_BIND, &mask, 64, 0)))
			ret = 1;
		/*
		 * Another user's, 65534 (nobody), and dumpable again as a
		 * process started by that user would be
		 */
		if (setup == NOBODY && (setgid(65534) || setuid(65534) ||
					prctl(PR_SET_DUMPABLE, 1)))
			ret = 1;
		if (setup == LOCKED &&
		    (mlock2(t->a, SIZE, MLOCK_ONFAULT) ||
		     mlock2(t->b, SIZE, MLOCK_ONFAULT)))
			ret = 1;
		if (setup == QMP) {
			/* A client that leaves before the greeting is no end */
			signal(SIGPIPE, SIG_IGN);
			listener = qmp_listen(t->qmp);
			if (listener < 0)
				ret = 1;
		}
		c = ret ? 'e' : 'r';
		if (write(ack[1], &c, 1) != 1)
			_exit(1);
		if (listener >= 0)
			qmp_serve(listener, t->b);
		/* 'a': populate A itself */
		while (read(cmd[0], &c, 1) == 1 && c == 'a') {
			c = madvise(t->a, SIZE, MADV_POPULATE_WRITE) ? 'e' : 'd';
			if (write(ack[1], &c, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(cmd[0]);
	close(ack[1]);
	t->cmd = cmd[1];
	t->ack = ack[0];
	munmap(t->a, SIZE);
	munmap(t->b, SIZE);
	munmap(t->c, BIG);
	t->pidfd = syscall(__NR_pidfd_open, t->pid, 0);
	if (read(t->ack, &c, 1) != 1 || c != 'r' || t->pidfd < 0)
		return -1;
	return 0;
}

/* The target populates A itself: 0, or -1 */
static int target_self(struct target *t)
{
	char c = 'a';

	if (write(t->cmd, &c, 1) != 1 || read(t->ack, &c, 1) != 1)
		return -1;
	return c == 'd' ? 0 : -1;
}

static void target_stop(struct target *t)
{
	if (t->pid > 0) {
		close(t->cmd);
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		close(t->ack);
		close(t->pidfd);
		if (t->qmp[0])
			unlink(t->qmp);
	}
	t->pid = 0;
}

/* Pages of [addr, addr + len) of @pid present, from its pagemap */
static long present(pid_t pid, const char *addr, size_t len)
{
	long page = sysconf(_SC_PAGESIZE), n = 0;
	size_t i, pages = len / page;
	uint64_t *e = calloc(pages, sizeof(*e));
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0 || !e ||
	    pread(fd, e, pages * sizeof(*e),
		  (uintptr_t)addr / page * sizeof(*e)) !=
	    (ssize_t)(pages * sizeof(*e)))
		n = -1;
	for (i = 0; n >= 0 && i < pages; i++)
		n += !!(e[i] & (1ULL << 63));
	if (fd >= 0)
		close(fd);
	free(e);
	return n;
}

/* A field ("Locked:", "Rss:") of @pid's smaps for the mapping at @addr */
static long smaps_kb(pid_t pid, const char *addr, const char *field)
{
	char path[64], line[256];
	bool in = false;
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;

		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			in = start == (uintptr_t)addr;
			continue;
		}
		if (in && !strncmp(line, field, strlen(field))) {
			kb = atol(line + strlen(field));
			break;
		}
	}
	fclose(f);
	return kb;
}

/* The N<node>= pages numa_maps shows for @pid's mapping at @addr */
static long numa_maps_pages(pid_t pid, const char *addr, int node)
{
	char path[64], key[16], *line = NULL, *at;
	size_t cap = 0;
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/numa_maps", pid);
	snprintf(key, sizeof(key), " N%d=", node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		if (strtoul(line, NULL, 16) != (uintptr_t)addr)
			continue;
		at = strstr(line, key);
		n = at ? atol(at + strlen(key)) : 0;
		break;
	}
	free(line);
	fclose(f);
	return n;
}

/* Does this kernel populate another process? Asked of it, not of us */
static bool kernel_populates(struct target *t)
{
	struct iovec none = { 0 };

	return !syscall(__NR_process_madvise, t->pidfd, &none, 1,
			MADV_POPULATE_WRITE, 0);
}

#define NEED_SERIES(t) do {						\
	if (!kernel_populates(t)) {					\
		target_stop(t);						\
		SKIP(return, "this kernel cannot populate another process"); \
	}								\
} while (0)

static int populate(int pidfd, char *addr, size_t len,
		    struct memprepop_opts *opts, struct memprepop_result *res)
{
	struct memprepop_range r = { .addr = (uintptr_t)addr, .len = len };
	struct memprepop_ctx *ctx;
	int ret;

	ret = memprepop_ctx_new_pid(&ctx, pidfd, 0);
	if (ret)
		return ret;
	ret = memprepop_ctx_populate(ctx, &r, 1, opts, res);
	memprepop_ctx_free(ctx);
	return ret;
}

/* Only for the harness's timeouts, which come with fixtures */
FIXTURE(remote)
{
	int unused;
};

FIXTURE_SETUP(remote)
{
}

FIXTURE_TEARDOWN(remote)
{
}

/* Stock kernels: refused before anything, nothing of the target touched */
TEST(refused_where_the_kernel_cannot)
{
	struct target t = { 0 };
	struct memprepop_ctx *ctx = NULL;

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	if (kernel_populates(&t)) {
		target_stop(&t);
		SKIP(return, "this kernel populates another process");
	}
	EXPECT_EQ(-EOPNOTSUPP, memprepop_ctx_new_pid(&ctx, t.pidfd, 0));
	EXPECT_EQ(0, present(t.pid, t.a, SIZE));
	EXPECT_EQ(0, present(t.pid, t.b, SIZE));
	target_stop(&t);
}

TEST(not_a_pidfd)
{
	struct memprepop_ctx *ctx = NULL;
	int fd = open("/dev/null", O_RDONLY);

	EXPECT_EQ(-EBADF, memprepop_ctx_new_pid(&ctx, fd, 0));
	EXPECT_EQ(-EINVAL, memprepop_ctx_new_pid(&ctx, fd, 1));
	close(fd);
}

/* The same pages as the target's own madvise on an identical mapping */
TEST_F_TIMEOUT(remote, same_as_its_own_madvise, SLOW)
{
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	long pages = SIZE / sysconf(_SC_PAGESIZE);
	struct target t = { 0 };

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	ASSERT_EQ(0, target_self(&t));
	ASSERT_EQ(0, populate(t.pidfd, t.b, SIZE, &opts, &res));
	EXPECT_EQ(MEMPREPOP_BACKEND_REMOTE, res.backend);
	EXPECT_EQ(SIZE, res.populated);
	EXPECT_EQ(pages, present(t.pid, t.a, SIZE));
	EXPECT_EQ(present(t.pid, t.a, SIZE), present(t.pid, t.b, SIZE));
	EXPECT_EQ(smaps_kb(t.pid, t.a, "Rss:"), smaps_kb(t.pid, t.b, "Rss:"));
	target_stop(&t);
}

/* A bound mapping's pages where its policy says, counted and in numa_maps */
TEST_F_TIMEOUT(remote, bound_mapping_placed_by_its_policy, SLOW)
{
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	uint64_t counts[64] = { 0 };
	struct target t = { 0 };
	int node;

	if (numa_available() < 0 || numa_max_node() < 1)
		SKIP(return, "not two NUMA nodes");
	node = numa_max_node();
	ASSERT_EQ(0, target_start(&t, BOUND, node));
	NEED_SERIES(&t);
	opts.node_pages = counts;
	opts.nr_nodes = 64;
	ASSERT_EQ(0, populate(t.pidfd, t.b, SIZE, &opts, &res));
	EXPECT_EQ(SIZE / sysconf(_SC_PAGESIZE), counts[node]);
	ASSERT_EQ(0, target_self(&t));
	/* numa_maps, from outside: B as A, all on the node bound */
	EXPECT_EQ((long)counts[node], numa_maps_pages(t.pid, t.b, node));
	EXPECT_EQ(numa_maps_pages(t.pid, t.a, node),
		  numa_maps_pages(t.pid, t.b, node));
	target_stop(&t);
}

/* Lock-on-fault mappings end up locked, as after the target's own faults */
TEST_F_TIMEOUT(remote, lock_on_fault_mapping_locked, SLOW)
{
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct target t = { 0 };

	ASSERT_EQ(0, target_start(&t, LOCKED, 0));
	NEED_SERIES(&t);
	ASSERT_EQ(0, target_self(&t));
	ASSERT_EQ(0, populate(t.pidfd, t.b, SIZE, &opts, &res));
	EXPECT_EQ(SIZE >> 10, smaps_kb(t.pid, t.a, "Locked:"));
	EXPECT_EQ(smaps_kb(t.pid, t.a, "Locked:"),
		  smaps_kb(t.pid, t.b, "Locked:"));
	/* Locking is the target's: refused */
	opts.flags = MEMPREPOP_OPT_LOCK;
	EXPECT_EQ(-EINVAL, populate(t.pidfd, t.b, SIZE, &opts, &res));
	target_stop(&t);
}

/* Another user may not, as it could not attach with ptrace */
TEST(another_user_refused)
{
	struct target t = { 0 };
	int status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "not root: cannot be another user");
	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct memprepop_ctx *ctx;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		_exit(memprepop_ctx_new_pid(&ctx, t.pidfd, 0) == -EPERM ? 0 :
		      1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, present(t.pid, t.b, SIZE));
	target_stop(&t);
}

/* A caller as user 65534: memprepop_ctx_new_pid()'s return */
static int as_nobody(int pidfd)
{
	struct memprepop_ctx *ctx;
	int status;
	pid_t pid;

	pid = fork();
	if (!pid) {
		int ret;

		if (setgid(65534) || setuid(65534))
			_exit(100);
		ret = memprepop_ctx_new_pid(&ctx, pidfd, 0);
		if (!ret)
			memprepop_ctx_free(ctx);
		_exit(-ret);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1000;
	return -WEXITSTATUS(status);
}

#define PTRACE_SCOPE	"/proc/sys/kernel/yama/ptrace_scope"

/* Sets Yama's ptrace_scope: true when written */
static bool set_scope(const char *scope)
{
	FILE *f = fopen(PTRACE_SCOPE, "w");
	bool ok;

	if (!f)
		return false;
	ok = fputs(scope, f) >= 0;
	return !fclose(f) && ok;
}

/* ptrace_scope as it was, put back whatever the case did */
FIXTURE(yama)
{
	char was[8];
};

FIXTURE_SETUP(yama)
{
	FILE *f;

	self->was[0] = 0;
	if (geteuid())
		SKIP(return, "not root: cannot set ptrace_scope");
	f = fopen(PTRACE_SCOPE, "r");
	if (!f)
		SKIP(return, "no Yama here");
	if (!fgets(self->was, sizeof(self->was), f))
		self->was[0] = 0;
	fclose(f);
	if (self->was[0] == '3')
		SKIP(return, "ptrace_scope 3: nobody may attach until reboot");
}

FIXTURE_TEARDOWN(yama)
{
	if (self->was[0] && !set_scope(self->was))
		TH_LOG("ptrace_scope not put back to %s", self->was);
}

/*
 * Yama: a process of the same user that is not its ancestor may populate
 * it at ptrace_scope 0, not at 1 (only ancestors) nor 2 (only with
 * CAP_SYS_PTRACE, which root has); as ptrace could attach.
 */
TEST_F(yama, scopes)
{
	static const struct {
		const char *scope;
		int nobody, root;
	} want[] = {
		{ "0", 0, 0 }, { "1", -EPERM, 0 }, { "2", -EPERM, 0 },
	};
	struct memprepop_ctx *ctx;
	struct target t = { 0 };
	unsigned int i;
	int ret;

	if (_metadata->skip)
		return;
	/* The target is nobody's, not a child of the nobody caller */
	ASSERT_EQ(0, target_start(&t, NOBODY, 0));
	NEED_SERIES(&t);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		EXPECT_TRUE(set_scope(want[i].scope));
		EXPECT_EQ(want[i].nobody, as_nobody(t.pidfd)) {
			TH_LOG("ptrace_scope %s, another process of the "
			       "target's user", want[i].scope);
		}
		ret = memprepop_ctx_new_pid(&ctx, t.pidfd, 0);
		EXPECT_EQ(want[i].root, ret) {
			TH_LOG("ptrace_scope %s, root", want[i].scope);
		}
		if (!ret)
			memprepop_ctx_free(ctx);
	}
	EXPECT_EQ(0, present(t.pid, t.b, SIZE));
	target_stop(&t);
}

/* The target gone between two requests: ESRCH */
TEST(target_exited)
{
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct memprepop_range r;
	struct memprepop_ctx *ctx;
	struct target t = { 0 };

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	ASSERT_EQ(0, memprepop_ctx_new_pid(&ctx, t.pidfd, 0));
	kill(t.pid, SIGKILL);
	waitpid(t.pid, NULL, 0);
	r = (struct memprepop_range){ .addr = (uintptr_t)t.b, .len = SIZE };
	EXPECT_EQ(-ESRCH, memprepop_ctx_populate(ctx, &r, 1, &opts, &res));
	EXPECT_EQ(0, res.populated);
	memprepop_ctx_free(ctx);
	close(t.cmd);
	close(t.ack);
	close(t.pidfd);
}

/* A hole stops a range where the target's madvise stops: ENOMEM there */
TEST_F_TIMEOUT(remote, hole_stops_as_madvise, SLOW)
{
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct target t = { 0 };

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	/* B, and the unmapped page after it */
	EXPECT_EQ(-ENOMEM, populate(t.pidfd, t.b, SIZE + 4096, &opts, &res));
	EXPECT_EQ(SIZE, res.populated);
	EXPECT_EQ(SIZE / sysconf(_SC_PAGESIZE), present(t.pid, t.b, SIZE));
	target_stop(&t);
}

/*
 * Cancelled once part is done: -ECANCELED, and what it says populated is
 * there. C, 16 chunks, one thread, started in the background and
 * cancelled when the progress first shows bytes done.
 */
TEST_F_TIMEOUT(remote, cancel_exact, SLOW)
{
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t done = 0, total = 0;
	struct memprepop_range r;
	struct memprepop_ctx *ctx;
	struct target t = { 0 };
	int ret;

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	ASSERT_EQ(0, memprepop_ctx_new_pid(&ctx, t.pidfd, 0));
	opts.max_threads = 1;
	r = (struct memprepop_range){ .addr = (uintptr_t)t.c, .len = BIG };
	ASSERT_EQ(0, memprepop_ctx_start(ctx, &r, 1, &opts));
	while (!memprepop_ctx_progress(ctx, &done, &total) && !done)
		usleep(200);
	EXPECT_EQ(0, memprepop_ctx_cancel(ctx));
	ret = memprepop_ctx_wait(ctx, 0, &res);
	if (ret == 0 && res.populated == BIG) {
		memprepop_ctx_free(ctx);
		target_stop(&t);
		SKIP(return, "done before the cancel came");
	}
	EXPECT_EQ(-ECANCELED, ret);
	EXPECT_LT(0, res.populated);
	EXPECT_GT(BIG, res.populated);
	EXPECT_EQ((long)(res.populated / page),
		  present(t.pid, t.c, res.populated));
	memprepop_ctx_free(ctx);
	target_stop(&t);
}

/* In the background, reaped with the same outcome */
TEST_F_TIMEOUT(remote, background, SLOW)
{
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct memprepop_range r;
	struct memprepop_ctx *ctx;
	struct target t = { 0 };

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	ASSERT_EQ(0, memprepop_ctx_new_pid(&ctx, t.pidfd, 0));
	r = (struct memprepop_range){ .addr = (uintptr_t)t.b, .len = SIZE };
	ASSERT_EQ(0, memprepop_ctx_start(ctx, &r, 1, &opts));
	EXPECT_EQ(0, memprepop_ctx_wait(ctx, 0, &res));
	EXPECT_EQ(SIZE, res.populated);
	EXPECT_EQ(MEMPREPOP_BACKEND_REMOTE, res.backend);
	EXPECT_EQ(SIZE / sysconf(_SC_PAGESIZE), present(t.pid, t.b, SIZE));
	memprepop_ctx_free(ctx);
	target_stop(&t);
}

/* memprepop(1): beside this test's directory, as installed, or on PATH */
static const char *tool_path(void)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	char *slash;

	if (n > 0) {
		path[n] = 0;
		slash = strrchr(path, '/');
		if (slash) {
			strcpy(slash, "/../bin/memprepop");
			if (!access(path, X_OK))
				return path;
		}
	}
	return "memprepop";
}

/*
 * memprepop populate --pid with @a1 and @a2 (@a2 may be NULL), as user and
 * group @uid (0: this test's own): its exit status; in @err the first line
 * of what it said on stderr, in *@lines how many lines it said there
 */
static int run_tool_as(uid_t uid, pid_t pid, const char *a1, const char *a2,
		       char *err, size_t len, int *lines)
{
	char pidbuf[16], buf[4096], *nl;
	size_t got = 0;
	int fds[2], status;
	ssize_t n;
	pid_t child;

	snprintf(pidbuf, sizeof(pidbuf), "%d", pid);
	if (pipe(fds))
		return -1;
	child = fork();
	if (!child) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(fds[1], 2);
		if (uid && (setgid(uid) || setuid(uid)))
			_exit(126);
		execlp(tool_path(), "memprepop", "populate", "--pid", pidbuf,
		       a1, a2, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	*lines = 0;
	while ((n = read(fds[0], buf, sizeof(buf))) > 0) {
		size_t room = len - 1 - got;
		size_t keep = room < (size_t)n ? room : (size_t)n;

		memcpy(err + got, buf, keep);
		got += keep;
		for (ssize_t i = 0; i < n; i++)
			*lines += buf[i] == '\n';
	}
	err[got] = 0;
	nl = strchr(err, '\n');
	if (nl)
		*nl = 0;
	close(fds[0]);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* run_tool_as() as this test's own user */
static int run_tool(pid_t pid, const char *a1, const char *a2, char *err,
		    size_t len, int *lines)
{
	return run_tool_as(0, pid, a1, a2, err, len, lines);
}

/* Stock kernels: the tool says so in one line, exits 2, touches nothing */
TEST(tool_refused_where_the_kernel_cannot)
{
	struct target t = { 0 };
	int lines;
	char range[64], err[512];

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	if (kernel_populates(&t)) {
		target_stop(&t);
		SKIP(return, "this kernel populates another process");
	}
	snprintf(range, sizeof(range), "%p+%lu", (void *)t.b, SIZE);
	EXPECT_EQ(2, run_tool(t.pid, "--range", range, err, sizeof(err),
			      &lines));
	EXPECT_NE(NULL, strstr(err, "this kernel cannot populate another "
			       "process"));
	EXPECT_EQ(1, lines);
	EXPECT_EQ(0, present(t.pid, t.b, SIZE));
	target_stop(&t);
}

/* The tool on a range given */
TEST_F_TIMEOUT(remote, tool_populates_a_range, SLOW)
{
	struct target t = { 0 };
	int lines;
	char range[64], err[512];

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	snprintf(range, sizeof(range), "%p+%lu", (void *)t.b, SIZE);
	EXPECT_EQ(0, run_tool(t.pid, "--range", range, err, sizeof(err),
			      &lines));
	EXPECT_EQ(SIZE / sysconf(_SC_PAGESIZE), present(t.pid, t.b, SIZE));
	EXPECT_EQ(0, present(t.pid, t.a, SIZE));
	target_stop(&t);
}

/* The tool finding the mappings with a policy of their own */
TEST_F_TIMEOUT(remote, tool_finds_bound_mappings, SLOW)
{
	long pages = SIZE / sysconf(_SC_PAGESIZE);
	struct target t = { 0 };
	int lines;
	char err[512];

	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	/* Nothing bound: nothing it can tell, nothing touched */
	EXPECT_EQ(2, run_tool(t.pid, "--json", NULL, err, sizeof(err),
			      &lines));
	EXPECT_NE(NULL, strstr(err, "give --range or --qmp"));
	EXPECT_EQ(1, lines);
	EXPECT_EQ(0, present(t.pid, t.b, SIZE));
	target_stop(&t);

	ASSERT_EQ(0, target_start(&t, BOUND, numa_available() < 0 ? 0 :
				  numa_max_node()));
	EXPECT_EQ(0, run_tool(t.pid, "--json", NULL, err, sizeof(err),
			      &lines));
	EXPECT_EQ(pages, present(t.pid, t.a, SIZE));
	EXPECT_EQ(pages, present(t.pid, t.b, SIZE));
	target_stop(&t);
}

/*
 * The tool asking QEMU's monitor: a target answering on a QMP socket as
 * QEMU does, B its one backend; and a socket that is not the target's
 */
TEST_F_TIMEOUT(remote, tool_asks_qmp, SLOW)
{
	long pages = SIZE / sysconf(_SC_PAGESIZE);
	struct target t = { 0 }, other = { 0 };
	char err[512];
	int lines;

	ASSERT_EQ(0, target_start(&t, QMP, 0));
	NEED_SERIES(&t);

	/* Another process's monitor: refused, nothing touched */
	ASSERT_EQ(0, target_start(&other, PLAIN, 0));
	EXPECT_EQ(2, run_tool(other.pid, "--qmp", t.qmp, err, sizeof(err),
			      &lines));
	EXPECT_NE(NULL, strstr(err, "is not process"));
	EXPECT_EQ(1, lines);
	EXPECT_EQ(0, present(other.pid, other.b, SIZE));
	target_stop(&other);

	EXPECT_EQ(0, run_tool(t.pid, "--qmp", t.qmp, err, sizeof(err),
			      &lines));
	EXPECT_EQ(pages, present(t.pid, t.b, SIZE));
	EXPECT_EQ(0, present(t.pid, t.a, SIZE));
	target_stop(&t);
}

/* Base pages of @pid's mappings bound to a node, per node (0 and 1) */
static void bound_pages(pid_t pid, long pages[2])
{
	char path[64], line[4096];
	FILE *f;

	pages[0] = pages[1] = 0;
	snprintf(path, sizeof(path), "/proc/%d/numa_maps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *tok, *save;
		long n;
		int node;

		if (!strstr(line, " bind:"))
			continue;
		for (tok = strtok_r(line, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save))
			if (sscanf(tok, "N%d=%ld", &node, &n) == 2 &&
			    node >= 0 && node < 2)
				pages[node] += n;
	}
	if (f)
		fclose(f);
}

/* Mappings of @pid bound to a node, from its numa_maps */
static int bound_mappings(pid_t pid)
{
	char path[64], line[4096];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/numa_maps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		n += !!strstr(line, " bind:");
	if (f)
		fclose(f);
	return n;
}

/*
 * A stock QEMU (Debian's, where the VM has one: make check-rfc), root's,
 * paused with two backends bound to nodes 0 and 1 (both 0 on one node), as
 * a manager starts one to populate from outside: another user may not
 * populate it, and nothing of it is touched; root may, and each backend's
 * pages are on its node
 */
TEST_F_TIMEOUT(remote, another_users_qemu_refused, SLOW)
{
	const char *qemu = "/usr/bin/qemu-system-x86_64";
	int second = numa_available() < 0 ? 0 : numa_max_node() > 0;
	long pages[2], want = (64 << 20) / sysconf(_SC_PAGESIZE);
	char m0[128], m1[128], err[512];
	struct target t = { 0 };
	int lines, i;
	pid_t pid;

	if (geteuid())
		SKIP(return, "not root: cannot be another user");
	if (access(qemu, X_OK))
		SKIP(return, "no QEMU here");
	ASSERT_EQ(0, target_start(&t, PLAIN, 0));
	NEED_SERIES(&t);
	target_stop(&t);
	snprintf(m0, sizeof(m0), "memory-backend-ram,id=m0,size=64M,"
		 "host-nodes=0,policy=bind");
	snprintf(m1, sizeof(m1), "memory-backend-ram,id=m1,size=64M,"
		 "host-nodes=%d,policy=bind", second);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		execl(qemu, qemu, "-machine", "none", "-nodefaults", "-display",
		      "none", "-S", "-object", m0, "-object", m1,
		      (char *)NULL);
		_exit(127);
	}
	/* Its backends exist once both are mapped and bound */
	for (i = 0; i < 600 && bound_mappings(pid) < 2; i++)
		usleep(100 * 1000);
	ASSERT_EQ(2, bound_mappings(pid));

	EXPECT_EQ(2, run_tool_as(65534, pid, "--json", NULL, err, sizeof(err),
				 &lines));
	EXPECT_NE(NULL, strstr(err, "not allowed to attach"));
	EXPECT_EQ(1, lines);
	bound_pages(pid, pages);
	EXPECT_EQ(0, pages[0] + pages[1]);

	EXPECT_EQ(0, run_tool(pid, "--json", NULL, err, sizeof(err), &lines));
	bound_pages(pid, pages);
	if (second) {
		EXPECT_EQ(want, pages[0]);
		EXPECT_EQ(want, pages[1]);
	} else {
		EXPECT_EQ(2 * want, pages[0]);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

TEST_HARNESS_MAIN
