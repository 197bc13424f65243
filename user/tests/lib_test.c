// SPDX-License-Identifier: GPL-2.0
/*
 * libmemprepop: the same behaviour cases on both backends, the module and
 * the threaded MADV_POPULATE_WRITE fallback; the versioned structures; and
 * node counting, exact against /proc/self/numa_maps, NUMA balancing or not.
 * The module variant is skipped where /dev/memprepop does not open (on a
 * host without the module), placement cases where there are not two NUMA
 * nodes.
 *
 * Every case that populates more than a few MiB or starts threads has a
 * timeout of its own, for the slowest place it runs: a debug kernel (KASAN)
 * under TCG, ten to twenty times slower than a host.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <memprepop.h>
#include <numa.h>
#include <numaif.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
/* The library's tests run without the module too (the fallback) */
#define MEMPREPOP_TEST_NO_DEVICE
#include "memprepop_test.h"

/* Seconds for a case that populates hundreds of MiB or starts threads */
#define SLOW	600

/* The first version of the structures, as libmemprepop 1.0 has them */
#define OPTS_SIZE_VER0		sizeof(struct memprepop_opts)
#define RESULT_SIZE_VER0	sizeof(struct memprepop_result)

FIXTURE(lib)
{
	struct memprepop_opts opts;
};

FIXTURE_VARIANT(lib)
{
	int backend;
	unsigned int flags;
};

FIXTURE_VARIANT_ADD(lib, module)
{
	.backend = MEMPREPOP_BACKEND_MODULE,
};

FIXTURE_VARIANT_ADD(lib, fallback)
{
	.backend = MEMPREPOP_BACKEND_FALLBACK,
	.flags = MEMPREPOP_OPT_FALLBACK,
};

FIXTURE_SETUP(lib)
{
	self->opts = (struct memprepop_opts)MEMPREPOP_OPTS_INIT;
	self->opts.flags = variant->flags;
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

/* Entries of a node counter array that counts every node */
static unsigned int nr_nodes(void)
{
	int n = numa_num_possible_nodes();

	return n > 0 ? n : 1;
}

/* Pages of [p, p + len), whole VMAs, on @node as numa_maps has them */
static uint64_t pages_on(char *p, size_t len, int node)
{
	unsigned int nr = nr_nodes();
	uint64_t *counts = calloc(nr, sizeof(*counts)), n = 0;

	if (counts && !numa_maps_nodes(p, len, counts, nr))
		n = counts[node];
	free(counts);
	return n;
}

/*
 * memprepop_node_pages() of [p, p + len), whole VMAs, is numa_maps's count
 * on every node; its sum, @pages. Returns the number of mismatches.
 */
static int node_pages_exact(struct __test_metadata *_metadata, char *p,
			    size_t len, uint64_t pages)
{
	unsigned int nr = nr_nodes(), n;
	uint64_t *ours = calloc(nr, sizeof(*ours));
	uint64_t *theirs = calloc(nr, sizeof(*theirs));
	int wrong = 0;

	if (!ours || !theirs || memprepop_node_pages(p, len, ours, nr) ||
	    numa_maps_nodes(p, len, theirs, nr)) {
		TH_LOG("cannot count the nodes of %p", p);
		wrong = 1;
		goto out;
	}
	for (n = 0; n < nr; n++)
		if (ours[n] != theirs[n]) {
			TH_LOG("node %u: %llu pages, numa_maps says %llu", n,
			       (unsigned long long)ours[n],
			       (unsigned long long)theirs[n]);
			wrong++;
		}
	if (sum_counts(ours, nr) != pages) {
		TH_LOG("%llu pages counted of %llu",
		       (unsigned long long)sum_counts(ours, nr),
		       (unsigned long long)pages);
		wrong++;
	}
out:
	free(ours);
	free(theirs);
	return wrong;
}

TEST_F_TIMEOUT(lib, populate_anon, SLOW)
{
	size_t len = 192 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(len, res.populated);
	EXPECT_EQ(variant->backend, res.backend);
	EXPECT_LE(1, res.workers);
	EXPECT_LT(0, res.nsecs);
	EXPECT_EQ(0, res.flags);
	EXPECT_EQ(sizeof(res), res.size);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munmap(p, len);
}

/* Populating keeps what the pages hold */
TEST_F_TIMEOUT(lib, contents_kept, SLOW)
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

TEST_F_TIMEOUT(lib, opts_and_result_may_be_null, SLOW)
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

TEST_F_TIMEOUT(lib, threads_capped_by_request, SLOW)
{
	size_t len = 256 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
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
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	char *p = map_anon(page_size());
	uint64_t counts[2];

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	self->opts.flags |= 1u << 30;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      &res));
	self->opts.flags = variant->flags;
	EXPECT_EQ(-EINVAL, memprepop_populate(p + 1, page_size(), &self->opts,
					      &res));
	EXPECT_EQ(-EINVAL, memprepop_populate(p, -page_size(), &self->opts,
					      &res));
	/* node_pages and nr_nodes: both set, or both zero */
	self->opts.node_pages = counts;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      &res));
	self->opts.node_pages = NULL;
	self->opts.nr_nodes = 2;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      &res));
	EXPECT_EQ(0, res.populated);
	EXPECT_EQ(0, present_pages(p, page_size()));
	munmap(p, page_size());
}

/* A size below the first version's: -EINVAL, nothing done */
TEST_F(lib, opts_size_too_small_einval)
{
	char *p = map_anon(page_size());

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	self->opts.size = OPTS_SIZE_VER0 - 1;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      NULL));
	self->opts.size = 0;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      NULL));
	EXPECT_EQ(0, present_pages(p, page_size()));
	munmap(p, page_size());
}

/* A caller built against a newer header: its zero tail is fine */
TEST_F_TIMEOUT(lib, opts_size_larger_zero_tail_works, SLOW)
{
	struct {
		struct memprepop_opts opts;
		unsigned char tail[64];
	} newer;
	size_t len = 4 * MiB;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	memset(&newer, 0, sizeof(newer));
	newer.opts = self->opts;
	newer.opts.size = sizeof(newer);
	ASSERT_EQ(0, memprepop_populate(p, len, &newer.opts, NULL));
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munmap(p, len);
}

/* ... but a tail this library does not know that is not zero: -E2BIG */
TEST_F(lib, opts_size_larger_nonzero_tail_e2big)
{
	struct {
		struct memprepop_opts opts;
		unsigned char tail[64];
	} newer;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	char *p = map_anon(page_size());

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	memset(&newer, 0, sizeof(newer));
	newer.opts = self->opts;
	newer.opts.size = sizeof(newer);
	newer.tail[63] = 1;
	EXPECT_EQ(-E2BIG, memprepop_populate(p, page_size(), &newer.opts,
					     &res));
	EXPECT_EQ(0, res.populated);
	/* Past its size, the same byte is not looked at */
	newer.opts.size = sizeof(newer) - 1;
	EXPECT_EQ(0, memprepop_populate(p, page_size(), &newer.opts, &res));
	EXPECT_EQ(page_size(), res.populated);
	munmap(p, page_size());
}

#define CANARY	0xa5

/* The result is written up to its size, never past it */
TEST_F_TIMEOUT(lib, result_written_up_to_its_size, SLOW)
{
	union {
		struct memprepop_result res;
		unsigned char bytes[sizeof(struct memprepop_result) + 64];
	} buf;
	size_t len = 4 * MiB, i;
	bool intact = true, zero = true;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	/* The first version's size: nothing after it is touched */
	memset(&buf, CANARY, sizeof(buf));
	buf.res.size = RESULT_SIZE_VER0;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &buf.res));
	EXPECT_EQ(RESULT_SIZE_VER0, buf.res.size);
	EXPECT_EQ(len, buf.res.populated);
	EXPECT_EQ(variant->backend, buf.res.backend);
	for (i = RESULT_SIZE_VER0; i < sizeof(buf); i++)
		intact &= buf.bytes[i] == CANARY;
	EXPECT_TRUE(intact);

	/* A newer, longer one: what this library does not know is zeroed */
	memset(&buf, CANARY, sizeof(buf));
	buf.res.size = sizeof(buf) - 16;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &buf.res));
	EXPECT_EQ(sizeof(buf) - 16, buf.res.size);
	EXPECT_EQ(len, buf.res.populated);
	for (i = sizeof(buf.res); i < sizeof(buf) - 16; i++)
		zero &= !buf.bytes[i];
	for (i = sizeof(buf) - 16; i < sizeof(buf); i++)
		intact &= buf.bytes[i] == CANARY;
	EXPECT_TRUE(zero);
	EXPECT_TRUE(intact);
	munmap(p, len);
}

/* A result shorter than the first version: -EINVAL, nothing done */
TEST_F(lib, result_size_too_small_einval)
{
	union {
		struct memprepop_result res;
		unsigned char bytes[sizeof(struct memprepop_result)];
	} buf;
	char *p = map_anon(page_size());
	bool intact = true;
	size_t i;

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	memset(&buf, CANARY, sizeof(buf));
	buf.res.size = RESULT_SIZE_VER0 - 8;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &self->opts,
					      &buf.res));
	for (i = sizeof(buf.res.size); i < sizeof(buf); i++)
		intact &= buf.bytes[i] == CANARY;
	EXPECT_TRUE(intact);
	EXPECT_EQ(0, present_pages(p, page_size()));
	munmap(p, page_size());
}

/* A hole after 100 MiB: ENOMEM like madvise, populated exact */
TEST_F_TIMEOUT(lib, hole_enomem_exact, SLOW)
{
	size_t head = 100 * MiB, len = 200 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
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
TEST_F_TIMEOUT(lib, not_writable_einval_exact, SLOW)
{
	static const int prots[] = { PROT_READ, PROT_NONE };
	size_t head = 70 * MiB + 3 * page_size(), len = 160 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;

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
TEST_F_TIMEOUT(lib, hugetlb_exhausted_efault, SLOW)
{
	long free_pages = meminfo_field("HugePages_Free");
	size_t len = (free_pages + 2) * HPAGE;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
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

TEST_F_TIMEOUT(lib, lock_like_mlock, SLOW)
{
	size_t len = 4 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	char *p;

	RETURN_IF_SKIPPED();
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	self->opts.flags |= MEMPREPOP_OPT_LOCK;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(len, res.populated);
	EXPECT_EQ(len / KiB, smaps_field_kb(p, "Locked"));
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	ASSERT_EQ(0, munlock(p, len));
	EXPECT_EQ(0, smaps_field_kb(p, "Locked"));
	munmap(p, len);
}

/* Over RLIMIT_MEMLOCK, unprivileged: mlock's errno, nothing populated */
TEST_F_TIMEOUT(lib, lock_over_limit_like_mlock, SLOW)
{
	int status;
	pid_t pid;

	RETURN_IF_SKIPPED();
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rlimit rl = { 4 * MiB, 4 * MiB };
		struct memprepop_result res = MEMPREPOP_RESULT_INIT;
		char *p = map_anon(16 * MiB);

		if (!p || setrlimit(RLIMIT_MEMLOCK, &rl) ||
		    (!getuid() && (setgid(65534) || setuid(65534))))
			_exit(10);
		self->opts.flags |= MEMPREPOP_OPT_LOCK;
		if (mlock2(p, 16 * MiB, MLOCK_ONFAULT) != -1)
			_exit(11);
		_exit(memprepop_populate(p, 16 * MiB, &self->opts, &res) ==
		      -errno && res.populated == 0 ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* The call's node statistics: numa_maps's count, every page once */
TEST_F_TIMEOUT(lib, node_stats_exact, SLOW)
{
	size_t len = 96 * MiB;
	unsigned int nr = nr_nodes(), n;
	uint64_t *counts = calloc(nr, sizeof(*counts));
	uint64_t *theirs = calloc(nr, sizeof(*theirs));
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, counts);
	ASSERT_NE(NULL, theirs);
	memset(counts, 0xff, nr * sizeof(*counts));
	self->opts.node_pages = counts;
	self->opts.nr_nodes = nr;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, NULL));
	ASSERT_EQ(0, numa_maps_nodes(p, len, theirs, nr));
	for (n = 0; n < nr; n++)
		EXPECT_EQ(theirs[n], counts[n]);
	EXPECT_EQ(len / page_size(), sum_counts(counts, nr));
	EXPECT_EQ(0, node_pages_exact(_metadata, p, len, len / page_size()));

	/* Nothing to do: all zero */
	memset(counts, 0xff, nr * sizeof(*counts));
	ASSERT_EQ(0, memprepop_populate(p, 0, &self->opts, NULL));
	EXPECT_EQ(0, sum_counts(counts, nr));
	munmap(p, len);
	free(counts);
	free(theirs);
}

/* Fewer entries than nodes: the others are not counted, nor written */
TEST_F_TIMEOUT(lib, node_stats_first_node_only, SLOW)
{
	size_t len = 32 * MiB;
	uint64_t counts[2] = { 0, 12345 };
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	self->opts.node_pages = counts;
	self->opts.nr_nodes = 1;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, NULL));
	EXPECT_EQ(pages_on(p, len, 0), counts[0]);
	EXPECT_EQ(12345, counts[1]);
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
TEST_F_TIMEOUT(lib, progress_reported, SLOW)
{
	size_t len = 512 * MiB;
	struct progress_log log = { .monotonic = true };
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
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
TEST_F_TIMEOUT(lib, progress_cancels, SLOW)
{
	/* Long enough to outlast the first report (100 ms), one thread */
	size_t len = meminfo_field("MemAvailable") > 4 * 1024 * 1024 ?
		     2048 * MiB : 1024 * MiB;
	struct progress_log log = { .monotonic = true, .cancel_after = 1 };
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	char *p = map_anon(len);
	int ret;

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, no_thp(p, len));
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

struct first_report {
	struct timespec start;
	double at;	/* seconds from the call's start, -1 until then */
};

static int cancel_first(uint64_t done, uint64_t total, void *arg)
{
	struct first_report *first = arg;
	struct timespec now;

	if (first->at < 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		first->at = now.tv_sec - first->start.tv_sec +
			    (now.tv_nsec - first->start.tv_nsec) / 1e9;
	}
	return 1;
}

/*
 * The first report, the first chance to cancel, comes about 100 ms into
 * a call also when the call is of terabytes, whose planning alone takes
 * seconds (a policy read per 16 MiB): 4 TiB, never backed, cancelled there
 */
TEST_F_TIMEOUT(lib, progress_early_in_a_huge_call, SLOW)
{
	size_t len = 4ULL << 40;
	struct first_report first = { .at = -1 };
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	char *p;
	int ret;

	RETURN_IF_SKIPPED();
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		SKIP(return, "cannot map 4 TiB here: %s", strerror(errno));
	self->opts.progress = cancel_first;
	self->opts.progress_arg = &first;
	clock_gettime(CLOCK_MONOTONIC, &first.start);
	ret = memprepop_populate(p, len, &self->opts, &res);
	TH_LOG("first report after %.3f s; returned %d after %.3f s, %llu MiB "
	       "populated", first.at, ret, res.nsecs / 1e9,
	       (unsigned long long)res.populated >> 20);
	munmap(p, len);
	EXPECT_EQ(-ECANCELED, ret);
	EXPECT_LE(0, first.at);
	EXPECT_GT(0.5, first.at);
}

/* In this process from now on: @call refused with EPERM, as sandboxes do */
static int refuse(int call)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int ret = -1;

	if (ctx && !seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), call, 0))
		ret = seccomp_load(ctx);
	seccomp_release(ctx);
	return ret;
}

/*
 * In a container's default seccomp profile move_pages() is refused: a call
 * asking for node counts populates all the same, as madvise() by the
 * caller does under the same filter, and says the counts are unknown
 */
TEST_F_TIMEOUT(lib, node_counts_refused_populates_and_says_so, SLOW)
{
	int status;
	pid_t pid;

	RETURN_IF_SKIPPED();
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t len = 64 * MiB;
		char *a = map_anon(len), *b = map_anon(len);
		uint64_t counts[64] = { 0 };
		struct memprepop_result res = MEMPREPOP_RESULT_INIT;
		int ret;

		if (!a || !b || refuse(SCMP_SYS(move_pages)))
			_exit(2);
		if (madvise(a, len, MADV_POPULATE_WRITE) ||
		    present_pages(a, len) != len / page_size())
			_exit(3);
		self->opts.node_pages = counts;
		self->opts.nr_nodes = 64;
		ret = memprepop_populate(b, len, &self->opts, &res);
		printf("# populate: %d, flags %#x, %zu of %zu pages\n",
		       ret, res.flags, present_pages(b, len),
		       len / page_size());
		fflush(stdout);
		if (ret)
			_exit(4);
		if (present_pages(b, len) != len / page_size())
			_exit(5);
		/* The module counts in the kernel: it knows */
		if (res.backend == MEMPREPOP_BACKEND_FALLBACK &&
		    !(res.flags & MEMPREPOP_RESULT_NODES_UNKNOWN))
			_exit(6);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * memprepop_opt_flags() says what a call takes: each flag it names alone
 * is not refused for being unknown, the first it does not name is
 */
TEST(opt_flags_are_what_a_call_takes)
{
	uint32_t flags = memprepop_opt_flags(), unknown;
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	char *p = map_anon(page_size());

	ASSERT_NE(NULL, p);
	EXPECT_EQ(MEMPREPOP_OPT_LOCK | MEMPREPOP_OPT_FALLBACK |
		  MEMPREPOP_OPT_BORROW_CPUS, flags);
	for (uint32_t bit = 1; bit; bit <<= 1) {
		if (!(flags & bit))
			continue;
		opts.flags = bit;
		EXPECT_EQ(0, memprepop_populate(p, page_size(), &opts, NULL))
			TH_LOG("flag %#x", bit);
	}
	unknown = ~flags & -~flags;
	opts.flags = unknown;
	EXPECT_EQ(-EINVAL, memprepop_populate(p, page_size(), &opts, NULL));
	munmap(p, page_size());
}

/* Placement as the caller's own faults: VMA bind to each node */
TEST_F_TIMEOUT(lib, placement_bind_each_node, SLOW)
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
TEST_F_TIMEOUT(lib, placement_bind_both_spreads, SLOW)
{
	size_t len = 256 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
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
	EXPECT_EQ(0, node_pages_exact(_metadata, p, len, len / page_size()));
	munmap(p, len);
}

/*
 * Bound to one node with fewer CPUs than the threads asked for: with
 * MEMPREPOP_OPT_BORROW_CPUS the other node's CPU helps (both backends), the
 * pages all still go to the bound node; without it, only that node's CPU
 * works.
 */
TEST_F_TIMEOUT(lib, placement_bind_one_node_helped, SLOW)
{
	size_t len = 128 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	unsigned long m1 = 2;
	char *p;

	RETURN_IF_SKIPPED();
	if (!two_nodes() || numa_num_configured_cpus() != 2)
		SKIP(return, "needs two NUMA nodes of one CPU each");
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, no_thp(p, len));
	ASSERT_EQ(0, mbind(p, len, MPOL_BIND, &m1, 64, 0));
	self->opts.max_threads = 2;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(1, res.workers);
	EXPECT_EQ(len / page_size(), pages_on(p, len, 1));
	ASSERT_EQ(0, madvise(p, len, MADV_DONTNEED));

	self->opts.flags |= MEMPREPOP_OPT_BORROW_CPUS;
	ASSERT_EQ(0, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(2, res.workers);
	EXPECT_EQ(len, res.populated);
	EXPECT_EQ(len / page_size(), pages_on(p, len, 1));
	munmap(p, len);
}

/* No policy: the caller's node; a task policy: the caller's */
TEST_F_TIMEOUT(lib, placement_default_and_task_policy, SLOW)
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
TEST_F_TIMEOUT(lib, concurrent_calls, SLOW)
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
TEST_F_TIMEOUT(lib, after_fork, SLOW)
{
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
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

/*
 * Many ranges: each range populated and reported as it would be alone.
 * The layout, in one mapping of LAYOUT_LEN, and out of it:
 *   A [0, 40M)          plain: 0
 *   B [40M, 100M)       a hole at 70M: -ENOMEM, populated 30M
 *   C [100M, 160M)      read-only from 133M + 3 pages: -EINVAL
 *   D [160M, +0)        empty: 0
 *   E A's start + 1     unaligned: -EINVAL, populated 0
 *   F [160M, 170M)      PROT_NONE: -EINVAL, populated 0
 *   G [170M, 200M)      plain: 0
 *   H 1 << 47, a page   beyond the user address space: -ENOMEM
 * Every range is compared with madvise(MADV_POPULATE_WRITE) of that range
 * alone on an identical mapping: its errno, and its populated with the
 * pages present from its start.
 */
#define LAYOUT_LEN	(200 * MiB)
#define LAYOUT_RANGES	8

static char *layout_map(void)
{
	char *p = map_anon(LAYOUT_LEN);

	if (!p)
		return NULL;
	if (munmap(p + 70 * MiB, 4 * MiB) ||
	    mprotect(p + 133 * MiB + 3 * page_size(),
		     27 * MiB - 3 * page_size(), PROT_READ) ||
	    mprotect(p + 160 * MiB, 10 * MiB, PROT_NONE)) {
		munmap(p, LAYOUT_LEN);
		return NULL;
	}
	return p;
}

static void layout_ranges(char *p, struct memprepop_range *r)
{
	static const struct { size_t off, len; } l[LAYOUT_RANGES] = {
		{ 0, 40 * MiB }, { 40 * MiB, 60 * MiB },
		{ 100 * MiB, 60 * MiB }, { 160 * MiB, 0 }, { 1, 4096 },
		{ 160 * MiB, 10 * MiB }, { 170 * MiB, 30 * MiB },
	};
	unsigned int i;

	memset(r, 0, LAYOUT_RANGES * sizeof(*r));
	for (i = 0; i < LAYOUT_RANGES - 1; i++) {
		r[i].addr = (uintptr_t)p + l[i].off;
		r[i].len = l[i].len;
		/* Outputs the call must overwrite */
		r[i].populated = 12345;
		r[i].error = 777;
	}
	r[i].addr = 1ULL << 47;
	r[i].len = page_size();
}

/* Bytes present from @addr up to the first page that is not */
static uint64_t range_prefix(uint64_t addr, uint64_t len)
{
	if (addr % page_size())
		return 0;
	return present_prefix((const char *)(uintptr_t)addr, len);
}

static struct memprepop_range range_of(const char *p, size_t len)
{
	struct memprepop_range r = { .addr = (uintptr_t)p, .len = len };

	return r;
}

enum how { ONE_SHOT, CTX_SYNC, CTX_BACKGROUND };

/* The ranges through one of the three ways; the call's return */
static int populate_how(enum how how, struct memprepop_ctx *ctx,
			struct memprepop_range *r, unsigned int nr,
			struct memprepop_opts *opts,
			struct memprepop_result *res)
{
	int ret;

	switch (how) {
	case ONE_SHOT:
		return memprepop_populate_ranges(r, nr, opts, res);
	case CTX_SYNC:
		return memprepop_ctx_populate(ctx, r, nr, opts, res);
	default:
		ret = memprepop_ctx_start(ctx, r, nr, opts);
		return ret ? ret : memprepop_ctx_wait(ctx, 0, res);
	}
}

/* Returns the number of ranges unlike madvise's */
static int layout_check(struct __test_metadata *_metadata, enum how how,
			struct memprepop_opts *opts, int backend)
{
	struct memprepop_range ours[LAYOUT_RANGES], ref[LAYOUT_RANGES];
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct memprepop_ctx *ctx = NULL;
	char *p = layout_map(), *q = layout_map();
	uint64_t sum = 0;
	int wrong = 0, ret, first = 0;
	unsigned int i;

	if (!p || !q || (how != ONE_SHOT &&
			 memprepop_ctx_new(&ctx, opts->flags &
					   MEMPREPOP_OPT_FALLBACK))) {
		TH_LOG("cannot map the layout or make a context");
		return 1;
	}
	layout_ranges(p, ours);
	layout_ranges(q, ref);
	ret = populate_how(how, ctx, ours, LAYOUT_RANGES, opts, &res);
	for (i = 0; i < LAYOUT_RANGES; i++) {
		int err = madvise_populate_write((void *)(uintptr_t)ref[i].addr,
						 ref[i].len);
		uint64_t want = range_prefix(ref[i].addr, ref[i].len);
		uint64_t have = range_prefix(ours[i].addr, ours[i].len);

		if (ours[i].error != err || ours[i].populated != want ||
		    (ours[i].addr % page_size() == 0 &&
		     have != ours[i].populated)) {
			TH_LOG("range %u: error %d populated %llu (present "
			       "%llu), madvise: %d, %llu", i, ours[i].error,
			       (unsigned long long)ours[i].populated,
			       (unsigned long long)have, err,
			       (unsigned long long)want);
			wrong++;
		}
		if (!first)
			first = err;
		sum += ours[i].populated;
	}
	if (ret != first || res.populated != sum ||
	    res.backend != (uint32_t)backend) {
		TH_LOG("returned %d, populated %llu, backend %u; expected %d, "
		       "%llu, %d", ret, (unsigned long long)res.populated,
		       res.backend, first, (unsigned long long)sum, backend);
		wrong++;
	}
	memprepop_ctx_free(ctx);
	munmap(p, LAYOUT_LEN);
	munmap(q, LAYOUT_LEN);
	return wrong;
}

TEST_F_TIMEOUT(lib, ranges_each_like_madvise, SLOW)
{
	RETURN_IF_SKIPPED();
	EXPECT_EQ(0, layout_check(_metadata, ONE_SHOT, &self->opts,
				  variant->backend));
	/* A thread per range at most: they share */
	self->opts.max_threads = 1;
	EXPECT_EQ(0, layout_check(_metadata, ONE_SHOT, &self->opts,
				  variant->backend));
}

TEST_F_TIMEOUT(lib, ctx_populate_each_like_madvise, SLOW)
{
	RETURN_IF_SKIPPED();
	EXPECT_EQ(0, layout_check(_metadata, CTX_SYNC, &self->opts,
				  variant->backend));
}

TEST_F_TIMEOUT(lib, ctx_background_each_like_madvise, SLOW)
{
	RETURN_IF_SKIPPED();
	EXPECT_EQ(0, layout_check(_metadata, CTX_BACKGROUND, &self->opts,
				  variant->backend));
}

/* The call fails with the first failing range by index, whatever order */
TEST_F_TIMEOUT(lib, ranges_first_failure_by_index, SLOW)
{
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct memprepop_range r[3];
	char *p = map_anon(96 * MiB);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, munmap(p + 80 * MiB, 2 * MiB));
	ASSERT_EQ(0, mprotect(p + 40 * MiB, 2 * MiB, PROT_READ));
	memset(r, 0, sizeof(r));
	r[0] = range_of(p, 32 * MiB);
	r[1] = range_of(p + 64 * MiB, 32 * MiB);
	r[2] = range_of(p + 32 * MiB, 16 * MiB);
	EXPECT_EQ(-ENOMEM, memprepop_populate_ranges(r, 3, &self->opts,
						     &res));
	EXPECT_EQ(0, r[0].error);
	EXPECT_EQ(-ENOMEM, r[1].error);
	EXPECT_EQ(-EINVAL, r[2].error);
	EXPECT_EQ(32 * MiB, r[0].populated);
	EXPECT_EQ(16 * MiB, r[1].populated);
	EXPECT_EQ(8 * MiB, r[2].populated);
	EXPECT_EQ(56 * MiB, res.populated);
	/* The other way round */
	r[0].addr = (uintptr_t)p + 32 * MiB;
	r[0].len = 16 * MiB;
	r[2].addr = (uintptr_t)p;
	r[2].len = 32 * MiB;
	EXPECT_EQ(-EINVAL, memprepop_populate_ranges(r, 3, &self->opts,
						     &res));
	EXPECT_EQ(-EINVAL, r[0].error);
	EXPECT_EQ(0, r[2].error);
	munmap(p, 96 * MiB);
}

/* What fails the whole call fails it before anything is populated */
TEST_F(lib, ranges_call_errors)
{
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct memprepop_range r[2];
	char *p = map_anon(2 * page_size());

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	memset(r, 0, sizeof(r));
	r[0] = range_of(p, page_size());
	r[1] = range_of(p + page_size(), page_size());
	EXPECT_EQ(-EINVAL, memprepop_populate_ranges(NULL, 2, &self->opts,
						     &res));
	r[1].__reserved = 1;
	EXPECT_EQ(-EINVAL, memprepop_populate_ranges(r, 2, &self->opts,
						     &res));
	r[1].__reserved = 0;
	self->opts.flags |= 1u << 30;
	EXPECT_EQ(-EINVAL, memprepop_populate_ranges(r, 2, &self->opts,
						     &res));
	self->opts.flags = variant->flags;
	EXPECT_EQ(0, present_pages(p, 2 * page_size()));
	EXPECT_EQ(0, res.populated);
	/* None: nothing to do */
	EXPECT_EQ(0, memprepop_populate_ranges(NULL, 0, &self->opts, &res));
	EXPECT_EQ(0, memprepop_populate_ranges(r, 0, &self->opts, &res));
	EXPECT_EQ(0, present_pages(p, 2 * page_size()));
	EXPECT_EQ(0, memprepop_populate_ranges(r, 2, &self->opts, &res));
	EXPECT_EQ(2 * page_size(), res.populated);
	munmap(p, 2 * page_size());
}

/*
 * Many small ranges, every other page of 16 MiB: more than a module takes
 * in one call, so it goes in batches; each range exact, the counts summed.
 */
TEST_F_TIMEOUT(lib, ranges_many_small, SLOW)
{
	size_t len = 16 * MiB, n = len / page_size() / 2, i;
	struct memprepop_range *r = calloc(n, sizeof(*r));
	unsigned int nr = nr_nodes();
	uint64_t *counts = calloc(nr, sizeof(*counts));
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	char *p = map_anon(len);
	size_t bad = 0;

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, counts);
	ASSERT_EQ(0, no_thp(p, len));
	for (i = 0; i < n; i++) {
		r[i].addr = (uintptr_t)p + 2 * i * page_size();
		r[i].len = page_size();
	}
	self->opts.node_pages = counts;
	self->opts.nr_nodes = nr;
	ASSERT_EQ(0, memprepop_populate_ranges(r, n, &self->opts, &res));
	EXPECT_EQ(n * page_size(), res.populated);
	for (i = 0; i < n; i++)
		bad += r[i].populated != page_size() || r[i].error ||
		       !present_pages(p + 2 * i * page_size(), page_size()) ||
		       present_pages(p + (2 * i + 1) * page_size(),
				     page_size());
	EXPECT_EQ(0, bad);
	EXPECT_EQ(n, sum_counts(counts, nr));
	munmap(p, len);
	free(r);
	free(counts);
}

/* Locking each range; one mlock2() refuses (a hole): that range alone */
TEST_F_TIMEOUT(lib, ranges_lock_each, SLOW)
{
	struct memprepop_range r[3];
	char *p = map_anon(12 * MiB);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, munmap(p + 9 * MiB, MiB));
	memset(r, 0, sizeof(r));
	r[0] = range_of(p, 4 * MiB);
	r[1] = range_of(p + 8 * MiB, 4 * MiB);
	r[2] = range_of(p + 5 * MiB, 2 * MiB);
	self->opts.flags |= MEMPREPOP_OPT_LOCK;
	EXPECT_EQ(-ENOMEM, memprepop_populate_ranges(r, 3, &self->opts,
						     NULL));
	EXPECT_EQ(0, r[0].error);
	EXPECT_EQ(-ENOMEM, r[1].error);
	EXPECT_EQ(0, r[2].error);
	EXPECT_EQ(0, r[1].populated);
	EXPECT_EQ(0, present_pages(p + 8 * MiB, MiB));
	EXPECT_EQ(4 * MiB / KiB, smaps_field_kb(p, "Locked"));
	EXPECT_EQ(0, smaps_field_kb(p + 4 * MiB, "Locked"));
	EXPECT_EQ(2 * MiB / KiB, smaps_field_kb(p + 5 * MiB, "Locked"));
	EXPECT_EQ(4 * MiB / page_size(), present_pages(p, 4 * MiB));
	EXPECT_EQ(0, present_pages(p + 4 * MiB, MiB));
	EXPECT_EQ(2 * MiB / page_size(), present_pages(p + 5 * MiB, 2 * MiB));
	munlock(p, 7 * MiB);
	munmap(p, 12 * MiB);
}

/* memprepop_bitmap_ranges(): runs of set bits, snprintf style */
TEST(bitmap_ranges_edges)
{
	size_t psz = page_size(), lb = 8 * sizeof(unsigned long);
	struct memprepop_range r[8];
	unsigned long bm[4] = { 0 };
	char *base = (char *)(64 * MiB);
	unsigned int i;

	/* Empty: no bits, or no bit set */
	EXPECT_EQ(0, memprepop_bitmap_ranges(base, psz, bm, 0, NULL, 0));
	EXPECT_EQ(0, memprepop_bitmap_ranges(base, psz, bm, 4 * lb, r, 8));
	/* All set; bits past nbits are not looked at */
	memset(bm, 0xff, sizeof(bm));
	ASSERT_EQ(1, memprepop_bitmap_ranges(base, psz, bm, 2 * lb + 5, r,
					     8));
	EXPECT_EQ((uintptr_t)base, r[0].addr);
	EXPECT_EQ((2 * lb + 5) * psz, r[0].len);
	EXPECT_EQ(0, r[0].populated);
	EXPECT_EQ(0, r[0].error);
	EXPECT_EQ(0, r[0].__reserved);
	/* Single bits at both ends */
	memset(bm, 0, sizeof(bm));
	bm[0] = 1;
	bm[2] = 1UL << (lb - 1);
	ASSERT_EQ(2, memprepop_bitmap_ranges(base, 2 * psz, bm, 3 * lb, r,
					     8));
	EXPECT_EQ((uintptr_t)base, r[0].addr);
	EXPECT_EQ(2 * psz, r[0].len);
	EXPECT_EQ((uintptr_t)base + (3 * lb - 1) * 2 * psz, r[1].addr);
	EXPECT_EQ(2 * psz, r[1].len);
	/* Runs across word boundaries */
	memset(bm, 0, sizeof(bm));
	for (i = lb - 4; i < 2 * lb + 3; i++)
		bm[i / lb] |= 1UL << (i % lb);
	bm[3] = 1UL << 7;
	ASSERT_EQ(2, memprepop_bitmap_ranges(base, psz, bm, 4 * lb, r, 8));
	EXPECT_EQ((uintptr_t)base + (lb - 4) * psz, r[0].addr);
	EXPECT_EQ((lb + 7) * psz, r[0].len);
	EXPECT_EQ((uintptr_t)base + (3 * lb + 7) * psz, r[1].addr);
	EXPECT_EQ(psz, r[1].len);
	/* Counts all, fills what fits, nothing past it */
	memset(r, 0xa5, sizeof(r));
	EXPECT_EQ(2, memprepop_bitmap_ranges(base, psz, bm, 4 * lb, r, 1));
	EXPECT_EQ((uintptr_t)base + (lb - 4) * psz, r[0].addr);
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5ULL, r[1].addr);
	/* Bad bases and page sizes, a wrap */
	EXPECT_EQ(-EINVAL, memprepop_bitmap_ranges(base + 1, psz, bm, 8, r, 8));
	EXPECT_EQ(-EINVAL, memprepop_bitmap_ranges(base, psz + 512, bm, 8, r,
						   8));
	EXPECT_EQ(-EINVAL, memprepop_bitmap_ranges(base, psz / 2, bm, 8, r, 8));
	EXPECT_EQ(-EINVAL, memprepop_bitmap_ranges(base, 0, bm, 8, r, 8));
	EXPECT_EQ(-EINVAL, memprepop_bitmap_ranges((void *)-(8 * psz), psz,
						   bm, 9, r, 8));
}

/* Exactly the pages the bitmap marks are populated */
TEST_F_TIMEOUT(lib, populate_bitmap, SLOW)
{
	size_t len = 96 * MiB, n = len / page_size(), i, bad = 0;
	size_t lb = 8 * sizeof(unsigned long);
	unsigned long *bm = calloc(n / lb, sizeof(*bm));
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	uint64_t set = 0;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, bm);
	ASSERT_EQ(0, no_thp(p, len));
	/* Empty: nothing at all */
	EXPECT_EQ(0, memprepop_populate_bitmap(p, page_size(), bm, n,
					       &self->opts, &res));
	EXPECT_EQ(0, res.populated);
	EXPECT_EQ(0, present_pages(p, len));
	/* Runs of 1 to 97 pages, gaps of 1 to 13, from bit 0 */
	for (i = 0; i < n;) {
		size_t run = 1 + i % 97, j;

		for (j = i; j < i + run && j < n; j++)
			bm[j / lb] |= 1UL << (j % lb);
		i = j + 1 + i % 13;
	}
	bm[(n - 1) / lb] |= 1UL << ((n - 1) % lb);
	ASSERT_EQ(0, memprepop_populate_bitmap(p, page_size(), bm, n,
					       &self->opts, &res));
	for (i = 0, set = 0; i < n; i++) {
		bool want = bm[i / lb] & (1UL << (i % lb));

		set += want;
		bad += want != !!present_pages(p + i * page_size(),
					       page_size());
	}
	EXPECT_EQ(0, bad);
	EXPECT_EQ(set * page_size(), res.populated);
	EXPECT_EQ(-EINVAL, memprepop_populate_bitmap(p + 1, page_size(), bm,
						     n, &self->opts, &res));
	munmap(p, len);
	free(bm);
}

/* The entries of /proc/self/task, sorted, into @tids; their number */
static int task_ids(int *tids, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0, i, j;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && n < max)
			tids[n++] = atoi(e->d_name);
	closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && tids[j - 1] > tids[j]; j--) {
			int t = tids[j];

			tids[j] = tids[j - 1];
			tids[j - 1] = t;
		}
	return n;
}

/*
 * This process's task count once it is back to @want, or what it is after
 * @secs: a thread joined with pthread_join() is still listed for a moment
 * (the kernel wakes the joiner before it takes the thread off the list).
 */
static int task_count_settled(int want, double secs)
{
	int tids[256], n;
	double t0 = now();

	while ((n = task_ids(tids, 256)) != want && now() - t0 < secs)
		usleep(1000);
	return n;
}

FIXTURE(ctx)
{
	struct memprepop_opts opts;
	struct memprepop_ctx *ctx;
};

FIXTURE_VARIANT(ctx)
{
	int backend;
	unsigned int flags;
};

FIXTURE_VARIANT_ADD(ctx, module)
{
	.backend = MEMPREPOP_BACKEND_MODULE,
};

FIXTURE_VARIANT_ADD(ctx, fallback)
{
	.backend = MEMPREPOP_BACKEND_FALLBACK,
	.flags = MEMPREPOP_OPT_FALLBACK,
};

FIXTURE_SETUP(ctx)
{
	self->opts = (struct memprepop_opts)MEMPREPOP_OPTS_INIT;
	self->opts.flags = variant->flags;
	if (variant->backend == MEMPREPOP_BACKEND_MODULE &&
	    memprepop_backend() != MEMPREPOP_BACKEND_MODULE)
		SKIP(return, "%s does not open here", MEMPREPOP_DEVICE);
	ASSERT_EQ(0, memprepop_ctx_new(&self->ctx, variant->flags));
}

FIXTURE_TEARDOWN(ctx)
{
	memprepop_ctx_free(self->ctx);
}

/* Long enough to outlast a few 100 ms steps on one thread */
static size_t long_len(void)
{
	return meminfo_field("MemAvailable") > 6 * 1024 * 1024 ?
	       1536 * MiB : 768 * MiB;
}

/* A mapping of @len (a multiple of 3 pages), base pages, in thirds */
static char *map_three(size_t len, struct memprepop_range *r)
{
	char *p = map_anon(len);
	unsigned int i;

	if (!p || no_thp(p, len))
		return NULL;
	memset(r, 0, 3 * sizeof(*r));
	for (i = 0; i < 3; i++) {
		r[i].addr = (uintptr_t)p + i * (len / 3);
		r[i].len = len / 3;
	}
	return p;
}

TEST_F_TIMEOUT(ctx, start_wait, SLOW)
{
	size_t len = 192 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct timespec t0, t1;
	struct memprepop_range r[3];
	unsigned int nr = nr_nodes();
	uint64_t *counts = calloc(nr, sizeof(*counts));
	char *p;

	RETURN_IF_SKIPPED();
	p = map_three(len, r);
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, counts);
	self->opts.node_pages = counts;
	self->opts.nr_nodes = nr;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3, &self->opts));
	ASSERT_EQ(0, memprepop_ctx_wait(self->ctx, 0, &res));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_EQ(len, res.populated);
	EXPECT_EQ(variant->backend, res.backend);
	EXPECT_LE(1, res.workers);
	/* The request's own time: within what the caller saw */
	EXPECT_LT(0, res.nsecs);
	EXPECT_GE((t1.tv_sec - t0.tv_sec) * 1000000000ull +
		  t1.tv_nsec - t0.tv_nsec, res.nsecs);
	EXPECT_EQ(len / 3, r[2].populated);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	EXPECT_EQ(len / page_size(), sum_counts(counts, nr));
	/* Reaped: nothing left */
	EXPECT_EQ(-ENOENT, memprepop_ctx_wait(self->ctx, 0, &res));
	munmap(p, len);
	free(counts);
}

/* This process's threads named @prefix: read from /proc/self/task */
static unsigned int threads_named(const char *prefix)
{
	DIR *dir = opendir("/proc/self/task");
	unsigned int n = 0;
	struct dirent *d;
	char path[300], comm[32];

	while (dir && (d = readdir(dir))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, prefix, strlen(prefix)))
			n++;
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return n;
}

/*
 * The fallback's threads, kept by the context, are named as the module's
 * workers are (memprepop/<node>:<index>), not after the program
 */
TEST_F_TIMEOUT(ctx, threads_named, SLOW)
{
	size_t len = 192 * MiB;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct memprepop_range r[3];
	char *p;

	RETURN_IF_SKIPPED();
	if (variant->backend != MEMPREPOP_BACKEND_FALLBACK)
		SKIP(return, "the module names its own workers");
	p = map_three(len, r);
	ASSERT_NE(NULL, p);
	self->opts.max_threads = 2;
	ASSERT_EQ(0, memprepop_ctx_populate(self->ctx, r, 3, &self->opts,
					    &res));
	TH_LOG("%u workers, %u threads named memprepop/", res.workers,
	       threads_named("memprepop/"));
	EXPECT_LE(1, res.workers);
	/* At least: the module's workers may be the process's threads too */
	EXPECT_LE(res.workers, threads_named("memprepop/"));
	munmap(p, len);
}

/* Nothing started: -ENOENT everywhere; bad arguments leave it idle */
TEST_F(ctx, nothing_started)
{
	struct memprepop_range r = { 0 };
	uint64_t done, total;

	RETURN_IF_SKIPPED();
	EXPECT_EQ(-ENOENT, memprepop_ctx_wait(self->ctx, 0, NULL));
	EXPECT_EQ(-ENOENT, memprepop_ctx_wait(self->ctx,
					      MEMPREPOP_WAIT_NOHANG, NULL));
	EXPECT_EQ(-ENOENT, memprepop_ctx_cancel(self->ctx));
	EXPECT_EQ(-ENOENT, memprepop_ctx_progress(self->ctx, &done, &total));
	EXPECT_EQ(-EINVAL, memprepop_ctx_wait(self->ctx, 1u << 5, NULL));
	self->opts.progress = (memprepop_progress_fn)1;
	EXPECT_EQ(-EINVAL, memprepop_ctx_start(self->ctx, &r, 1,
					       &self->opts));
	self->opts.progress = NULL;
	self->opts.flags |= 1u << 30;
	EXPECT_EQ(-EINVAL, memprepop_ctx_start(self->ctx, &r, 1,
					       &self->opts));
	EXPECT_EQ(-ENOENT, memprepop_ctx_wait(self->ctx, 0, NULL));
	EXPECT_EQ(-EINVAL, memprepop_ctx_new(&self->ctx, 1u << 7));
}

/* One request at a time */
TEST_F_TIMEOUT(ctx, second_start_ebusy, SLOW)
{
	size_t len = 96 * MiB;
	struct memprepop_range r[3], r2[3];
	char *p, *q;

	RETURN_IF_SKIPPED();
	p = map_three(len, r);
	q = map_three(len, r2);
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3, &self->opts));
	EXPECT_EQ(-EBUSY, memprepop_ctx_start(self->ctx, r2, 3,
					      &self->opts));
	EXPECT_EQ(-EBUSY, memprepop_ctx_populate(self->ctx, r2, 3,
						 &self->opts, NULL));
	EXPECT_EQ(0, memprepop_ctx_wait(self->ctx, 0, NULL));
	EXPECT_EQ(0, present_pages(q, len));
	EXPECT_EQ(0, memprepop_ctx_start(self->ctx, r2, 3, &self->opts));
	EXPECT_EQ(0, memprepop_ctx_wait(self->ctx, 0, NULL));
	EXPECT_EQ(len / page_size(), present_pages(q, len));
	munmap(p, len);
	munmap(q, len);
}

/*
 * NOHANG while it runs, then poll() on the descriptor, then the wait that
 * does not block; the descriptor is quiet again afterwards.
 */
TEST_F_TIMEOUT(ctx, nohang_poll_wait, SLOW)
{
	size_t len = long_len();
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct pollfd pfd = { .events = POLLIN };
	struct memprepop_range r[3];
	uint64_t done = 0, total = 0;
	double t0;
	char *p;

	RETURN_IF_SKIPPED();
	p = map_three(len, r);
	ASSERT_NE(NULL, p);
	self->opts.max_threads = 1;
	pfd.fd = memprepop_ctx_fd(self->ctx);
	ASSERT_LE(0, pfd.fd);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3, &self->opts));
	EXPECT_EQ(-EAGAIN, memprepop_ctx_wait(self->ctx,
					      MEMPREPOP_WAIT_NOHANG, &res));
	EXPECT_EQ(0, memprepop_ctx_progress(self->ctx, &done, &total));
	EXPECT_EQ(len, total);
	EXPECT_GE(total, done);
	EXPECT_EQ(pfd.fd, memprepop_ctx_fd(self->ctx));
	t0 = now();
	for (;;) {
		int ret;

		ASSERT_EQ(1, poll(&pfd, 1, 120000));
		EXPECT_TRUE(pfd.revents & POLLIN);
		ret = memprepop_ctx_wait(self->ctx, MEMPREPOP_WAIT_NOHANG,
					 &res);
		if (ret != -EAGAIN) {	/* -EAGAIN: another batch */
			EXPECT_EQ(0, ret);
			break;
		}
	}
	TH_LOG("done %.3f s after the start returned", now() - t0);
	EXPECT_EQ(len, res.populated);
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	munmap(p, len);
}

/* Nothing to do in the background is still reaped through the fd */
TEST_F_TIMEOUT(ctx, empty_request_pollable, SLOW)
{
	struct pollfd pfd = { .events = POLLIN };
	struct memprepop_range r[2];

	RETURN_IF_SKIPPED();
	pfd.fd = memprepop_ctx_fd(self->ctx);
	ASSERT_EQ(0, memprepop_ctx_start(self->ctx, NULL, 0, &self->opts));
	EXPECT_EQ(1, poll(&pfd, 1, 10000));
	EXPECT_EQ(0, memprepop_ctx_wait(self->ctx, MEMPREPOP_WAIT_NOHANG,
					NULL));
	/* Only ranges that fail before the backend: their errors */
	memset(r, 0, sizeof(r));
	r[0].addr = 4097;
	r[0].len = 4096;
	ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 2, &self->opts));
	EXPECT_EQ(1, poll(&pfd, 1, 10000));
	EXPECT_EQ(-EINVAL, memprepop_ctx_wait(self->ctx, 0, NULL));
	EXPECT_EQ(-EINVAL, r[0].error);
	EXPECT_EQ(0, r[1].error);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
}

/*
 * Cancelled at random moments: -ECANCELED with every range's populated
 * exact (the pages below it present, the one at it not), or 0 when it
 * finished first.
 */
TEST_F_TIMEOUT(ctx, cancel_at_random, SLOW)
{
	size_t len = 768 * MiB;
	unsigned int round, cancelled = 0, i;
	struct memprepop_range r[3];

	RETURN_IF_SKIPPED();
	srand(getpid());
	for (round = 0; round < 8; round++) {
		struct memprepop_result res = MEMPREPOP_RESULT_INIT;
		char *p = map_three(len, r);
		uint64_t sum = 0;
		int ret;

		ASSERT_NE(NULL, p);
		self->opts.max_threads = 1 + round % 2;
		ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3,
						 &self->opts));
		usleep(rand() % 200000);
		EXPECT_EQ(0, memprepop_ctx_cancel(self->ctx));
		ret = memprepop_ctx_wait(self->ctx, 0, &res);
		EXPECT_TRUE(ret == 0 || ret == -ECANCELED);
		cancelled += ret == -ECANCELED;
		for (i = 0; i < 3; i++) {
			char *at = (char *)(uintptr_t)r[i].addr;

			sum += r[i].populated;
			EXPECT_EQ(r[i].populated / page_size(),
				  present_pages(at, r[i].populated));
			if (r[i].populated < r[i].len) {
				EXPECT_EQ(-ECANCELED, r[i].error);
				EXPECT_EQ(0, present_pages(at + r[i].populated,
							   page_size()));
			} else {
				EXPECT_EQ(0, r[i].error);
			}
		}
		EXPECT_EQ(sum, res.populated);
		EXPECT_EQ(ret ? true : false, sum < len);
		munmap(p, len);
	}
	TH_LOG("%u of 8 cancelled before the end", cancelled);
	EXPECT_LT(0, cancelled);
}

/* Freed while it runs: cancelled, waited for, threads gone */
TEST_F_TIMEOUT(ctx, free_while_running, SLOW)
{
	size_t len = long_len();
	struct memprepop_range r[3];
	int tids[256], before;
	double t0;
	char *p;

	RETURN_IF_SKIPPED();
	memprepop_ctx_free(self->ctx);
	self->ctx = NULL;
	before = task_ids(tids, 256);
	p = map_three(len, r);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, memprepop_ctx_new(&self->ctx, variant->flags));
	self->opts.max_threads = 1;
	ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3, &self->opts));
	usleep(50000);
	t0 = now();
	memprepop_ctx_free(self->ctx);
	self->ctx = NULL;
	TH_LOG("freed in %.3f s", now() - t0);
	/* Its outcome is dropped, not written */
	EXPECT_EQ(0, r[0].populated);
	EXPECT_GT(len / page_size(), present_pages(p, len));
	EXPECT_EQ(before, task_count_settled(before, 5));
	munmap(p, len);
}

/* The fallback's threads are the same ones from call to call */
TEST_F_TIMEOUT(ctx, threads_reused, SLOW)
{
	size_t len = 192 * MiB;
	int first[256], tids[256], n, i, call, differ = 0;
	struct memprepop_range r[3];
	char *p;

	RETURN_IF_SKIPPED();
	if (variant->backend != MEMPREPOP_BACKEND_FALLBACK)
		SKIP(return, "the fallback's threads (the module's: pool_test)");
	n = 0;
	for (call = 0; call < 12; call++) {
		p = map_three(len, r);
		ASSERT_NE(NULL, p);
		if (call % 2) {
			ASSERT_EQ(0, memprepop_ctx_populate(self->ctx, r, 3,
							    &self->opts,
							    NULL));
		} else {
			ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3,
							 &self->opts));
			ASSERT_EQ(0, memprepop_ctx_wait(self->ctx, 0, NULL));
		}
		EXPECT_EQ(len / page_size(), present_pages(p, len));
		munmap(p, len);
		if (!call) {
			n = task_ids(first, 256);
			continue;
		}
		ASSERT_EQ(n, task_ids(tids, 256));
		for (i = 0; i < n; i++)
			differ += tids[i] != first[i];
	}
	TH_LOG("%d tasks, threads kept", n);
	EXPECT_LT(1, n);
	EXPECT_EQ(0, differ);
}

/* The CPUs a thread of ours may run on, as a mask of the first 64 */
static uint64_t task_cpus(int tid)
{
	cpu_set_t set;
	uint64_t mask = 0;
	int cpu;

	if (sched_getaffinity(tid, sizeof(set), &set))
		return ~0ull;
	for (cpu = 0; cpu < 64; cpu++)
		if (CPU_ISSET(cpu, &set))
			mask |= 1ull << cpu;
	return mask;
}

/*
 * The threads are pinned again at each call, within the caller's CPUs at
 * that call: CPU 0 only, then CPU 1 only.
 */
TEST_F_TIMEOUT(ctx, threads_within_callers_cpus, SLOW)
{
	size_t len = 192 * MiB;
	int tids[256], n, i, cpu, self_tid = gettid();
	struct memprepop_range r[3];
	cpu_set_t saved, one;
	char *p;

	RETURN_IF_SKIPPED();
	if (variant->backend != MEMPREPOP_BACKEND_FALLBACK)
		SKIP(return, "the fallback's threads (the module's: placement_test)");
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(saved), &saved));
	if (CPU_COUNT(&saved) < 2 || !CPU_ISSET(0, &saved) ||
	    !CPU_ISSET(1, &saved))
		SKIP(return, "needs CPUs 0 and 1");
	/* The threads made on all CPUs first */
	p = map_three(len, r);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, memprepop_ctx_populate(self->ctx, r, 3, &self->opts,
					    NULL));
	munmap(p, len);
	for (cpu = 0; cpu < 2; cpu++) {
		int outside = 0;

		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
		p = map_three(len, r);
		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3,
						 &self->opts));
		n = task_ids(tids, 256);
		for (i = 0; i < n; i++)
			if (tids[i] != self_tid &&
			    task_cpus(tids[i]) != 1ull << cpu) {
				TH_LOG("thread %d on CPUs 0x%llx", tids[i],
				       (unsigned long long)task_cpus(tids[i]));
				outside++;
			}
		EXPECT_EQ(0, memprepop_ctx_wait(self->ctx, 0, NULL));
		EXPECT_EQ(0, outside);
		EXPECT_LT(1, n);
		munmap(p, len);
	}
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(saved), &saved));
}

/* Several contexts at once, their descriptors polled together */
TEST_F_TIMEOUT(ctx, many_at_once, SLOW)
{
	enum { N = 4 };
	struct memprepop_ctx *ctxs[N];
	struct memprepop_range r[N][3];
	struct pollfd pfd[N];
	size_t len = 96 * MiB;
	char *p[N];
	int i, left = N;

	RETURN_IF_SKIPPED();
	for (i = 0; i < N; i++) {
		ASSERT_EQ(0, memprepop_ctx_new(&ctxs[i], variant->flags));
		p[i] = map_three(len, r[i]);
		ASSERT_NE(NULL, p[i]);
		ASSERT_EQ(0, memprepop_ctx_start(ctxs[i], r[i], 3,
						 &self->opts));
		pfd[i].fd = memprepop_ctx_fd(ctxs[i]);
		pfd[i].events = POLLIN;
	}
	while (left) {
		ASSERT_LT(0, poll(pfd, N, 120000));
		for (i = 0; i < N; i++) {
			int ret;

			if (pfd[i].fd < 0 || !(pfd[i].revents & POLLIN))
				continue;
			ret = memprepop_ctx_wait(ctxs[i],
						 MEMPREPOP_WAIT_NOHANG, NULL);
			if (ret == -EAGAIN)
				continue;
			EXPECT_EQ(0, ret);
			EXPECT_EQ(len / page_size(),
				  present_pages(p[i], len));
			pfd[i].fd = -1;
			left--;
		}
	}
	for (i = 0; i < N; i++) {
		memprepop_ctx_free(ctxs[i]);
		munmap(p[i], len);
	}
}

/*
 * After fork(), the child may not touch the parent's request (-EPERM) and
 * its memprepop_ctx_free() only lets go; the parent's request goes on.
 */
TEST_F_TIMEOUT(ctx, fork_child_hands_off, SLOW)
{
	size_t len = 384 * MiB;
	struct memprepop_range r[3];
	int status;
	pid_t pid;
	char *p;

	RETURN_IF_SKIPPED();
	p = map_three(len, r);
	ASSERT_NE(NULL, p);
	self->opts.max_threads = 1;
	ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3, &self->opts));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		uint64_t done, total;
		int bad = 0;

		bad |= memprepop_ctx_wait(self->ctx, 0, NULL) != -EPERM;
		bad |= memprepop_ctx_cancel(self->ctx) != -EPERM;
		bad |= memprepop_ctx_progress(self->ctx, &done, &total) !=
		       -EPERM;
		bad |= memprepop_ctx_start(self->ctx, r, 3, &self->opts) !=
		       -EPERM;
		memprepop_ctx_free(self->ctx);
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, memprepop_ctx_wait(self->ctx, 0, NULL));
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munmap(p, len);
}

/*
 * A context is told it is in a forked child without a getpid() each call
 * (a page that fork() zeroes, MADV_WIPEONFORK); where that advice is
 * refused (a kernel before 4.14, a sandbox), by its pid. Either way the
 * child's calls on it are -EPERM, the parent's go on.
 */
static int fork_seen(bool refuse_wipeonfork)
{
	scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
	struct memprepop_ctx *ctx;
	int status, ret;
	pid_t pid;

	if (!filter)
		return 10;
	if (refuse_wipeonfork &&
	    (seccomp_rule_add(filter, SCMP_ACT_ERRNO(EINVAL),
			      SCMP_SYS(madvise), 1,
			      SCMP_A2(SCMP_CMP_EQ, MADV_WIPEONFORK)) ||
	     seccomp_load(filter)))
		return 11;
	seccomp_release(filter);
	if (memprepop_ctx_new(&ctx, MEMPREPOP_OPT_FALLBACK))
		return 12;
	if (memprepop_ctx_cancel(ctx) != -ENOENT)
		return 13;
	pid = fork();
	if (pid < 0)
		return 14;
	if (!pid) {
		ret = memprepop_ctx_cancel(ctx);
		memprepop_ctx_free(ctx);
		_exit(ret == -EPERM ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 15;
	ret = memprepop_ctx_cancel(ctx) != -ENOENT ? 16 : 0;
	memprepop_ctx_free(ctx);
	return ret;
}

TEST(ctx_fork_seen_with_and_without_wipeonfork)
{
	int i, status;
	pid_t pid;

	for (i = 0; i < 2; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(fork_seen(i));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) {
			TH_LOG("MADV_WIPEONFORK %s", i ? "refused" : "allowed");
		}
	}
}

/* Locked and counted in the background too */
TEST_F_TIMEOUT(ctx, background_lock, SLOW)
{
	size_t len = 12 * MiB;
	struct memprepop_range r[3];
	char *p;

	RETURN_IF_SKIPPED();
	p = map_three(len, r);
	ASSERT_NE(NULL, p);
	self->opts.flags |= MEMPREPOP_OPT_LOCK;
	ASSERT_EQ(0, memprepop_ctx_start(self->ctx, r, 3, &self->opts));
	ASSERT_EQ(0, memprepop_ctx_wait(self->ctx, 0, NULL));
	EXPECT_EQ(len / KiB, smaps_field_kb(p, "Locked"));
	EXPECT_EQ(len / page_size(), present_pages(p, len));
	munlock(p, len);
	munmap(p, len);
}

/* Progress while it runs, and the sync call reachable from elsewhere */
struct canceller {
	struct memprepop_ctx *ctx;
	uint64_t seen_done, seen_total;
	int progress_ret;
};

static void *cancel_later(void *arg)
{
	struct canceller *c = arg;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		usleep(20000);
		c->progress_ret = memprepop_ctx_progress(c->ctx, &c->seen_done,
							 &c->seen_total);
		if (!c->progress_ret && c->seen_done)
			break;
	}
	memprepop_ctx_cancel(c->ctx);
	return NULL;
}

TEST_F_TIMEOUT(ctx, sync_cancelled_from_another_thread, SLOW)
{
	size_t len = long_len();
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct canceller c = { 0 };
	struct memprepop_range r[3];
	pthread_t tid;
	char *p;
	int ret;

	RETURN_IF_SKIPPED();
	p = map_three(len, r);
	ASSERT_NE(NULL, p);
	c.ctx = self->ctx;
	self->opts.max_threads = 1;
	ASSERT_EQ(0, pthread_create(&tid, NULL, cancel_later, &c));
	ret = memprepop_ctx_populate(self->ctx, r, 3, &self->opts, &res);
	pthread_join(tid, NULL);
	EXPECT_EQ(0, c.progress_ret);
	EXPECT_EQ(len, c.seen_total);
	EXPECT_LT(0, c.seen_done);
	if (!ret) {
		munmap(p, len);
		SKIP(return, "done before the cancel");
	}
	EXPECT_EQ(-ECANCELED, ret);
	EXPECT_GT(len, res.populated);
	EXPECT_LE(c.seen_done, res.populated);
	munmap(p, len);
}

TEST(version_and_names)
{
	char v[32];

	EXPECT_STREQ(MEMPREPOP_VERSION, memprepop_version());
	snprintf(v, sizeof(v), "%d.%d.%d", MEMPREPOP_VERSION_MAJOR,
		 MEMPREPOP_VERSION_MINOR, MEMPREPOP_VERSION_PATCH);
	EXPECT_STREQ(MEMPREPOP_VERSION, v);
	EXPECT_TRUE(MEMPREPOP_CHECK_VERSION(1, 0, 0));
	EXPECT_TRUE(MEMPREPOP_CHECK_VERSION(MEMPREPOP_VERSION_MAJOR,
					    MEMPREPOP_VERSION_MINOR,
					    MEMPREPOP_VERSION_PATCH));
	EXPECT_FALSE(MEMPREPOP_CHECK_VERSION(MEMPREPOP_VERSION_MAJOR,
					     MEMPREPOP_VERSION_MINOR,
					     MEMPREPOP_VERSION_PATCH + 1));
	EXPECT_FALSE(MEMPREPOP_CHECK_VERSION(MEMPREPOP_VERSION_MAJOR + 1,
					     0, 0));
	EXPECT_STREQ("module", memprepop_backend_name(MEMPREPOP_BACKEND_MODULE));
	EXPECT_STREQ("fallback",
		     memprepop_backend_name(MEMPREPOP_BACKEND_FALLBACK));
	EXPECT_STREQ("none", memprepop_backend_name(0));
}

/*
 * The query takes the caller's size: below the first version, or too large
 * for an ioctl command, -EINVAL; a longer structure is zero-filled past what
 * the module knows. Without the module: -ENODEV.
 */
TEST(query_sizes)
{
	union {
		struct memprepop_info info;
		unsigned char bytes[sizeof(struct memprepop_info) + 32];
	} buf;
	bool module = memprepop_backend() == MEMPREPOP_BACKEND_MODULE;
	bool zero = true, intact = true;
	size_t i;

	EXPECT_EQ(-EINVAL, memprepop_query(&buf.info,
					   MEMPREPOP_INFO_SIZE_VER0 - 1));
	EXPECT_EQ(-EINVAL, memprepop_query(&buf.info, 0));
	EXPECT_EQ(-EINVAL, memprepop_query(&buf.info, 1 << 14));

	memset(&buf, CANARY, sizeof(buf));
	if (!module) {
		EXPECT_EQ(-ENODEV, memprepop_query(&buf.info,
						   sizeof(buf.info)));
		return;
	}
	ASSERT_EQ(0, memprepop_query(&buf.info, sizeof(buf.info)));
	EXPECT_TRUE(buf.info.flags & MEMPREPOP_F_REQUIRE_MLOCKED);
	EXPECT_LE(MEMPREPOP_POPULATE_SIZE_VER0, buf.info.populate_size);
	EXPECT_LE(MEMPREPOP_INFO_SIZE_VER0, buf.info.info_size);
	EXPECT_LE(1, buf.info.max_workers);
	EXPECT_EQ(0, buf.info.__reserved);

	/* The first version's size: nothing after it is written */
	memset(&buf, CANARY, sizeof(buf));
	ASSERT_EQ(0, memprepop_query(&buf.info, MEMPREPOP_INFO_SIZE_VER0));
	for (i = MEMPREPOP_INFO_SIZE_VER0; i < sizeof(buf); i++)
		intact &= buf.bytes[i] == CANARY;
	EXPECT_TRUE(intact);

	/* Longer: zero past what the module knows, nothing past the size */
	memset(&buf, CANARY, sizeof(buf));
	ASSERT_EQ(0, memprepop_query(&buf.info, sizeof(buf) - 8));
	for (i = buf.info.info_size; i < sizeof(buf) - 8; i++)
		zero &= !buf.bytes[i];
	for (i = sizeof(buf) - 8; i < sizeof(buf); i++)
		intact &= buf.bytes[i] == CANARY;
	EXPECT_TRUE(zero);
	EXPECT_TRUE(intact);
}

/* memprepop_node_pages() alone: a fixture for its timeout */
FIXTURE(nodes)
{
	int unused;
};

FIXTURE_SETUP(nodes)
{
}

FIXTURE_TEARDOWN(nodes)
{
}

/*
 * Pages of [p, p + len) that pagemap shows present and mapped by this
 * process alone: pages of its own, not the shared zero page (which is
 * never exclusive, and which neither numa_maps nor move_pages(2) counts)
 */
static size_t own_pages(const char *p, size_t len)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	size_t i, own = 0;
	uint64_t ent;

	for (i = 0; fd >= 0 && i < len / page_size(); i++)
		if (pread(fd, &ent, sizeof(ent), ((uintptr_t)p / page_size() +
						  i) * sizeof(ent)) ==
		    sizeof(ent) && (ent >> 63 & 1) && (ent >> 56 & 1))
			own++;
	if (fd >= 0)
		close(fd);
	return own;
}

/*
 * memprepop_node_pages() counts what is there and faults nothing in: in
 * the first half every third page written, the others only read; in the
 * second half only read, then PROT_NONE. What a read maps is the kernel's
 * choice: the shared zero page (not counted) on most, a page of its own on
 * others (counted): the sum is what pagemap shows, at least the pages
 * written, and nothing is faulted in by counting.
 */
TEST_F_TIMEOUT(nodes, partial_range, SLOW)
{
	size_t len = 16 * MiB, pages = len / page_size(), i;
	size_t written = (pages / 2 + 2) / 3, own;
	char *p = map_anon(len);
	uint64_t sum = 0;
	size_t present;

	ASSERT_NE(NULL, p);
	/* Base pages: a write faults in one page, not 2 MiB */
	ASSERT_EQ(0, no_thp(p, len));
	for (i = 0; i < pages / 2; i += 3)
		p[i * page_size()] = 1;
	for (i = 0; i < pages; i++)
		if (i >= pages / 2 || i % 3 == 1)
			sum += *(volatile char *)(p + i * page_size());
	EXPECT_EQ(0, sum);
	ASSERT_EQ(0, mprotect(p + len / 2, len / 2, PROT_NONE));
	present = present_pages(p, len);
	own = own_pages(p, len);
	TH_LOG("%zu pages written, %zu of the kernel's own after reads",
	       written, own);
	EXPECT_LE(written, own);
	EXPECT_EQ(0, node_pages_exact(_metadata, p, len, own));
	EXPECT_EQ(present, present_pages(p, len));
	munmap(p, len);
}

TEST_F(nodes, arguments)
{
	uint64_t counts[2] = { 7, 7 };
	char *p = map_anon(page_size());

	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EINVAL, memprepop_node_pages(p + 1, page_size(), counts,
						2));
	EXPECT_EQ(-EINVAL, memprepop_node_pages(p, -page_size(), counts, 2));
	/* No counters: nothing to do */
	EXPECT_EQ(0, memprepop_node_pages(p, page_size(), NULL, 0));
	/* Not populated: zero everywhere, and still not populated */
	EXPECT_EQ(0, memprepop_node_pages(p, page_size(), counts, 2));
	EXPECT_EQ(0, counts[0]);
	EXPECT_EQ(0, counts[1]);
	EXPECT_EQ(0, present_pages(p, page_size()));
	munmap(p, page_size());
}

/*
 * NUMA balancing, driven fast: the scanner makes the PTEs of a populated
 * range PROT_NONE for hinting faults while memprepop_node_pages() counts it,
 * and the count stays numa_maps's. The sysctl and the scanner's debugfs
 * knobs are put back as they were.
 */
static const char *const balancing_knobs[][2] = {
	{ "/proc/sys/kernel/numa_balancing", "1" },
	{ "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms", "0" },
	{ "/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms", "10" },
	{ "/sys/kernel/debug/sched/numa_balancing/scan_size_mb", "1024" },
};

#define NR_KNOBS	(sizeof(balancing_knobs) / sizeof(balancing_knobs[0]))

FIXTURE(balancing)
{
	char saved[NR_KNOBS][32];
	bool changed[NR_KNOBS];
	pthread_t spinner;
	bool spinning;
	int stop;
};

FIXTURE_SETUP(balancing)
{
	unsigned int i;

	if (getuid())
		SKIP(return, "needs root to drive NUMA balancing");
	if (access(balancing_knobs[0][0], W_OK))
		SKIP(return, "no NUMA balancing in this kernel");
	if (proc_field("/proc/vmstat", "numa_pte_updates") < 0)
		SKIP(return, "no numa_pte_updates in /proc/vmstat");
	for (i = 0; i < NR_KNOBS; i++) {
		if (read_file(balancing_knobs[i][0], self->saved[i],
			      sizeof(self->saved[i])) <= 0)
			continue;
		self->changed[i] = !write_file(balancing_knobs[i][0],
					       balancing_knobs[i][1]);
	}
	if (!self->changed[0])
		SKIP(return, "cannot enable NUMA balancing");
}

FIXTURE_TEARDOWN(balancing)
{
	unsigned int i = NR_KNOBS;

	if (self->spinning) {
		__atomic_store_n(&self->stop, 1, __ATOMIC_RELAXED);
		pthread_join(self->spinner, NULL);
	}
	while (i--)
		if (self->changed[i])
			write_file(balancing_knobs[i][0], self->saved[i]);
}

/*
 * The scanner runs on the task's CPU time, and leaves alone the pages of a
 * single-threaded process on its own node: a second thread, busy, does both.
 */
static void *spin(void *arg)
{
	int *stop = arg;

	while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* Pages of [p, p + n pages) that move_pages(2) alone does not report */
static size_t unreported(char *p, size_t n)
{
	void **pages = malloc(n * sizeof(*pages));
	int *status = malloc(n * sizeof(*status));
	size_t i, missing = 0;

	if (pages && status) {
		for (i = 0; i < n; i++)
			pages[i] = p + i * page_size();
		if (!move_pages(0, n, pages, NULL, status, 0))
			for (i = 0; i < n; i++)
				missing += status[i] < 0;
	}
	free(pages);
	free(status);
	return missing;
}

TEST_F_TIMEOUT(balancing, node_pages_exact_while_marked, SLOW)
{
	size_t len = 256 * MiB, pages = len / page_size();
	long before, marked = 0;
	double t0;
	char *p;

	RETURN_IF_SKIPPED();
	p = map_anon(len);
	ASSERT_NE(NULL, p);
	/* Base pages: each its own PTE to mark and its own hinting fault */
	ASSERT_EQ(0, no_thp(p, len));
	ASSERT_EQ(0, memprepop_populate(p, len, NULL, NULL));

	before = proc_field("/proc/vmstat", "numa_pte_updates");
	ASSERT_EQ(0, pthread_create(&self->spinner, NULL, spin, &self->stop));
	self->spinning = true;
	for (t0 = now(); now() - t0 < 10 && marked < (long)pages / 2;) {
		usleep(50000);
		marked = proc_field("/proc/vmstat", "numa_pte_updates") -
			 before;
	}
	if (marked < (long)pages / 2) {
		munmap(p, len);
		SKIP(return, "NUMA balancing marked %ld PTEs in 10 s, not %zu",
		     marked, pages / 2);
	}
	TH_LOG("%ld PTEs marked in %.1f s; move_pages() alone misses %zu "
	       "of %zu pages", marked, now() - t0, unreported(p, pages),
	       pages);
	EXPECT_EQ(0, node_pages_exact(_metadata, p, len, pages));
	munmap(p, len);
}

TEST_HARNESS_MAIN
