// SPDX-License-Identifier: GPL-2.0
/*
 * libmemprepop: the same behaviour cases on every backend: the module, the
 * threaded MADV_POPULATE_WRITE fallback, and page touching. The module
 * variant is skipped where /dev/memprepop does not open (on a host without
 * the module), placement cases where there are not two NUMA nodes.
 */
#define _GNU_SOURCE
#include <memprepop.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

FIXTURE(lib)
{
	struct memprepop_opts opts;
};

FIXTURE_VARIANT(lib)
{
	int backend;
	unsigned int lib_flags;
};

FIXTURE_VARIANT_ADD(lib, module)
{
	.backend = MEMPREPOP_BACKEND_MODULE,
};

FIXTURE_VARIANT_ADD(lib, fallback)
{
	.backend = MEMPREPOP_BACKEND_FALLBACK,
	.lib_flags = MEMPREPOP_OPT_FALLBACK,
};

FIXTURE_VARIANT_ADD(lib, touch)
{
	.backend = MEMPREPOP_BACKEND_FALLBACK,
	.lib_flags = MEMPREPOP_OPT_TOUCH_ALWAYS,
};

FIXTURE_SETUP(lib)
{
	memset(&self->opts, 0, sizeof(self->opts));
	self->opts.lib_flags = variant->lib_flags;
	if (variant->backend == MEMPREPOP_BACKEND_MODULE &&
	    memprepop_backend() != MEMPREPOP_BACKEND_MODULE)
		SKIP(return, "%s does not open here", MEMPREPOP_DEVICE);
}

FIXTURE_TEARDOWN(lib)
{
}

/* This harness runs a test's body even when its setup skipped it */
#define RETURN_IF_SKIPPED() do { if (_metadata->skip) return; } while (0)

static bool two_nodes(void)
{
	return numa_available() >= 0 && numa_max_node() >= 1 &&
	       numa_num_configured_cpus() >= 2;
}

static size_t pages_on(char *p, size_t len, int node)
{
	uint64_t counts[MEMPREPOP_MAX_NODES];

	if (memprepop_node_pages(p, len, counts, MEMPREPOP_MAX_NODES))
		return 0;
	return counts[node];
}

TEST_F(lib, populate_anon)
{
	size_t len = 192 * MiB;
	struct memprepop_result res;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(len, res.populated);
	EXPECT_EQ(variant->backend, res.backend);
	EXPECT_LE(1, res.workers);
	EXPECT_LT(0, res.nsecs);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munmap(p, len);
}

/* Touching keeps what the pages hold */
TEST_F(lib, contents_kept)
{
	size_t len = 8 * MiB, i;
	char *p = map_anon(len);
	bool same = true;

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	for (i = 0; i < len; i += 3 * page_size())
		p[i] = (char)(i / page_size());
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, NULL));
	for (i = 0; i < len; i += 3 * page_size())
		same &= p[i] == (char)(i / page_size());
	EXPECT_TRUE(same);
	munmap(p, len);
}

TEST_F(lib, opts_and_result_may_be_null)
{
	size_t len = 4 * MiB;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	if (variant->backend == MEMPREPOP_BACKEND_MODULE) {
		ASSERT_EQ(0, memprepop_populate(p, len, NULL, NULL));
	} else {
		ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, NULL));
	}
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	EXPECT_EQ(0, memprepop_populate(p, 0, &self->opts, NULL));
	munmap(p, len);
}

TEST_F(lib, threads_capped_by_request)
{
	size_t len = 256 * MiB;
	struct memprepop_result res;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	self->opts.max_threads = 1;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(1, res.workers);
	EXPECT_EQ(len, res.populated);
	munmap(p, len);
}

TEST_F(lib, bad_options_einval)
{
	struct memprepop_result res;
	char *p = map_anon(page_size());

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	self->opts.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      &res));
	self->opts.reserved[0] = 0;
	self->opts.flags = 1ULL << 40;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      &res));
	self->opts.flags = 0;
	self->opts.lib_flags |= 1u << 30;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      &res));
	self->opts.lib_flags = variant->lib_flags;
	EXPECT_EQ(-EINVAL, memprepop_populate(p + 1, page_size(), &self->opts,
					      &res));
	EXPECT_EQ(-EINVAL, memprepop_populate(p, -page_size(), &self->opts,
					      &res));
	EXPECT_EQ(0, present_pages(p, page_size()));
	munmap(p, page_size());
}

/* A hole after 100 MiB: ENOMEM like madvise, populated exact */
TEST_F(lib, hole_enomem_exact)
{
	size_t head = 100 * MiB, len = 200 * MiB;
	struct memprepop_result res;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, munmap(p + head, 4 * MiB));
	EXPECT_EQ(-ENOMEM, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(head, res.populated);
	EXPECT_EQ(head / page_size(), present_pages(p, head));
	munmap(p, len);
}

/* A read-only or PROT_NONE tail: EINVAL like madvise, populated exact */
TEST_F(lib, not_writable_einval_exact)
{
	static const int prots[] = { PROT_READ, PROT_NONE };
	size_t head = 70 * MiB + 3 * page_size(), len = 160 * MiB;
	struct memprepop_result res;

	RETURN_IF_SKIPPED();
	for (unsigned int i = 0; i < 2; i++) {
		char *p = map_anon(len);

		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, mprotect(p + head, len - head, prots[i]));
		EXPECT_EQ(-EINVAL, madvise_populate_write(p + head,
							  len - head));
		EXPECT_EQ(-EINVAL, memprepop_populate(p, len, &self->opts,
						      &res));
		EXPECT_EQ(head, res.populated);
		munmap(p, len);
	}
}

/* Hugetlb pool exhausted: EFAULT like madvise, never SIGBUS */
TEST_F(lib, hugetlb_exhausted_efault)
{
	long free_pages = meminfo_field("HugePages_Free");
	size_t len = (free_pages + 2) * HPAGE;
	struct memprepop_result res;
	char *p;

	RETURN_IF_SKIPPED();
	if (free_pages < 1)
		SKIP(return, "no free 2 MiB hugetlb pages");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EFAULT, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(free_pages * HPAGE, res.populated);
	munmap(p, len);
}

TEST_F(lib, lock_like_mlock)
{
	size_t len = 4 * MiB;
	struct memprepop_result res;
	char *p;

	RETURN_IF_SKIPPED();
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	self->opts.flags = MEMPREPOP_F_LOCK;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(len, res.populated);
	EXPECT_EQ(len / KiB, smaps_field_kb(p, "Locked"));
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	ASSERT_EQ(0, munlock(p, len));
	EXPECT_EQ(0, smaps_field_kb(p, "Locked"));
	munmap(p, len);
}

/* Over RLIMIT_MEMLOCK, unprivileged: mlock's errno, nothing populated */
TEST_F(lib, lock_over_limit_like_mlock)
{
	int status;
	pid_t pid;

	RETURN_IF_SKIPPED();
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rlimit rl = { 4 * MiB, 4 * MiB };
		struct memprepop_result res;
		char *p = map_anon(16 * MiB);

		if (!p || setrlimit(RLIMIT_MEMLOCK, &rl) ||
		    (!getuid() && (setgid(65534) || setuid(65534))))
			_exit(10);
		self->opts.flags = MEMPREPOP_F_LOCK;
		if (mlock2(p, 16 * MiB, MLOCK_ONFAULT) != -1)
			_exit(11);
		_exit(memprepop_populate(p, 16 * MiB, &self->opts, &res) ==
		      -errno && res.populated == 0 ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F(lib, node_stats_sum_to_range)
{
	size_t len = 96 * MiB;
	struct memprepop_result res;
	uint64_t sum = 0;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	self->opts.flags = MEMPREPOP_F_NODE_STATS;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	for (int i = 0; i < MEMPREPOP_MAX_NODES; i++)
		sum += res.node_pages[i];
	EXPECT_EQ(len / page_size(), sum);
	munmap(p, len);
}

struct progress_log {
	int calls;
	uint64_t last;
	bool monotonic;
	int cancel_after;
};

static int log_progress(uint64_t done, uint64_t total, void *arg)
{
	struct progress_log *log = arg;

	log->monotonic &= done >= log->last && done <= total;
	log->last = done;
	return ++log->calls == log->cancel_after;
}

/* Progress comes while it runs; the last call says all of it */
TEST_F(lib, progress_reported)
{
	size_t len = 512 * MiB;
	struct progress_log log = { .monotonic = true };
	struct memprepop_result res;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	self->opts.progress = log_progress;
	self->opts.progress_arg = &log;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	TH_LOG("%d progress calls in %.3f s", log.calls, res.nsecs / 1e9);
	EXPECT_LE(1, log.calls);
	EXPECT_TRUE(log.monotonic);
	EXPECT_EQ(len, log.last);
	/* At most one call per 100 ms, plus the last */
	EXPECT_GE(res.nsecs / 100000000 + 2, (uint64_t)log.calls);
	munmap(p, len);
}

/* Cancelled from the callback: ECANCELED, populated exact */
TEST_F(lib, progress_cancels)
{
	/* Long enough to outlast the first report (100 ms), one thread */
	size_t len = meminfo_field("MemAvailable") > 4 * 1024 * 1024 ?
		     2048 * MiB : 1024 * MiB;
	struct progress_log log = { .monotonic = true, .cancel_after = 1 };
	struct memprepop_result res;
	char *p = map_anon(len);
	int ret;

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, madvise(p, len, MADV_NOHUGEPAGE));
	self->opts.progress = log_progress;
	self->opts.progress_arg = &log;
	self->opts.max_threads = 1;
	ret = memprepop_populate(p, len, &self->opts, &res);
	if (!ret && log.calls == 1) {
		munmap(p, len);
		SKIP(return, "done in %.3f s, before the first report",
		     res.nsecs / 1e9);
	}
	EXPECT_EQ(-ECANCELED, ret);
	TH_LOG("cancelled at %llu of %zu bytes",
	       (unsigned long long)res.populated, len);
	EXPECT_GT(len, res.populated);
	/* Exact: all pages below it there, the one at it not */
	EXPECT_EQ(res.populated / page_size(),
		  present_pages(p, res.populated));
	EXPECT_EQ(0, present_pages(p + res.populated, page_size()));
	munmap(p, len);
}

/* Placement as the caller's own faults: VMA bind to each node */
TEST_F(lib, placement_bind_each_node)
{
	size_t len = 128 * MiB;
	unsigned long m0 = 1, m1 = 2;
	char *p;

	RETURN_IF_SKIPPED();
	if (!two_nodes())
		SKIP(return, "needs two NUMA nodes");
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, mbind(p, len / 2, MPOL_BIND, &m0, 64, 0));
	ASSERT_EQ(0, mbind(p + len / 2, len / 2, MPOL_BIND, &m1, 64, 0));
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, NULL));
	EXPECT_EQ(len / 2 / page_size(), pages_on(p, len / 2, 0));
	EXPECT_EQ(len / 2 / page_size(), pages_on(p + len / 2, len / 2, 1));
	munmap(p, len);
}

/* Bind over both nodes: spread over both */
TEST_F(lib, placement_bind_both_spreads)
{
	size_t len = 256 * MiB;
	struct memprepop_result res;
	unsigned long mask = 3;
	char *p;

	RETURN_IF_SKIPPED();
	if (!two_nodes())
		SKIP(return, "needs two NUMA nodes");
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, mbind(p, len, MPOL_BIND, &mask, 64, 0));
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(2, res.workers);
	EXPECT_LT(len / page_size() / 8, pages_on(p, len, 0));
	EXPECT_LT(len / page_size() / 8, pages_on(p, len, 1));
	munmap(p, len);
}

/* No policy: the caller's node; a task policy: the caller's */
TEST_F(lib, placement_default_and_task_policy)
{
	size_t len = 128 * MiB;
	unsigned long mask = 1;
	cpu_set_t cpu1;
	char *p;

	RETURN_IF_SKIPPED();
	if (!two_nodes())
		SKIP(return, "needs two NUMA nodes");
	CPU_ZERO(&cpu1);
	CPU_SET(1, &cpu1);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpu1), &cpu1));
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, NULL));
	EXPECT_EQ(len / page_size(), pages_on(p, len, 1));
	munmap(p, len);

	ASSERT_EQ(0, set_mempolicy(MPOL_BIND, &mask, 64));
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, NULL));
	ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
	EXPECT_EQ(len / page_size(), pages_on(p, len, 0));
	munmap(p, len);
}

struct thread_call {
	struct memprepop_opts *opts;
	size_t len;
	int ret;
	bool present;
};

static void *call_populate(void *arg)
{
	struct thread_call *c = arg;
	char *p = map_anon(c->len);

	c->ret = p ? memprepop_populate(p, c->len, c->opts, NULL) : -ENOMEM;
	c->present = p && present_pages(p, c->len) == c->len / page_size();
	if (p)
		munmap(p, c->len);
	return NULL;
}

/* Thread-safe: several threads populate at once */
TEST_F(lib, concurrent_calls)
{
	struct thread_call calls[4];
	pthread_t tids[4];
	int i;

	RETURN_IF_SKIPPED();
	for (i = 0; i < 4; i++) {
		calls[i] = (struct thread_call){ .opts = &self->opts,
						 .len = 96 * MiB };
		ASSERT_EQ(0, pthread_create(&tids[i], NULL, call_populate,
					    &calls[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(tids[i], NULL);
		EXPECT_EQ(0, calls[i].ret);
		EXPECT_TRUE(calls[i].present);
	}
}

/* Safe after fork(): the child's calls act on the child */
TEST_F(lib, after_fork)
{
	struct memprepop_result res;
	int status;
	pid_t pid;

	RETURN_IF_SKIPPED();
	/* The parent opens (and caches) the device first */
	memprepop_backend();
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t len = 32 * MiB;
		char *p = map_anon(len);

		_exit(!p || memprepop_populate(p, len, &self->opts, &res) ||
		      res.backend != (uint32_t)variant->backend ||
		      present_pages(p, len) != len / page_size());
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST(version_and_names)
{
	EXPECT_STREQ(MEMPREPOP_VERSION, memprepop_version());
	EXPECT_STREQ("module", memprepop_backend_name(MEMPREPOP_BACKEND_MODULE));
	EXPECT_STREQ("fallback",
		     memprepop_backend_name(MEMPREPOP_BACKEND_FALLBACK));
}

/* The query says what the module supports, or that it is not there */
TEST(query)
{
	struct memprepop_info info;
	int ret = memprepop_query(&info);

	if (memprepop_backend() == MEMPREPOP_BACKEND_MODULE) {
		EXPECT_EQ(0, ret);
		EXPECT_EQ(MEMPREPOP_ABI_VERSION, info.abi_version);
		EXPECT_TRUE(info.flags & MEMPREPOP_F_LOCK);
	} else {
		EXPECT_EQ(-ENODEV, ret);
	}
}

TEST_HARNESS_MAIN
