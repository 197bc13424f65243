// SPDX-License-Identifier: GPL-2.0
/*
 * libmemprepop: the same behaviour cases on both backends. The module
 * variant is skipped where /dev/memprepop does not open (on a host without
 * the module); the fallback variant runs everywhere.
 */
#define _GNU_SOURCE
#include <memprepop.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

FIXTURE(lib)
{
	struct memprepop_opts opts;
};

FIXTURE_VARIANT(lib)
{
	int backend;
};

FIXTURE_VARIANT_ADD(lib, module)
{
	.backend = MEMPREPOP_BACKEND_MODULE,
};

FIXTURE_VARIANT_ADD(lib, fallback)
{
	.backend = MEMPREPOP_BACKEND_FALLBACK,
};

FIXTURE_SETUP(lib)
{
	memset(&self->opts, 0, sizeof(self->opts));
	if (variant->backend == MEMPREPOP_BACKEND_FALLBACK)
		self->opts.lib_flags = MEMPREPOP_OPT_FALLBACK;
	else if (memprepop_backend() != MEMPREPOP_BACKEND_MODULE)
		SKIP(return, "%s does not open here", MEMPREPOP_DEVICE);
}

FIXTURE_TEARDOWN(lib)
{
}

/* This harness runs a test's body even when its setup skipped it */
#define RETURN_IF_SKIPPED() do { if (_metadata->skip) return; } while (0)

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
	EXPECT_EQ(-EINVAL, memprepop_populate(p + 1, page_size(), &self->opts,
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

/* Read-only tail: EINVAL like madvise, populated stops at it exactly */
TEST_F(lib, readonly_einval_exact)
{
	size_t head = 70 * MiB + 3 * page_size(), len = 160 * MiB;
	struct memprepop_result res;
	char *p = map_anon(len);

	RETURN_IF_SKIPPED();
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, mprotect(p + head, len - head, PROT_READ));
	EXPECT_EQ(-EINVAL, memprepop_populate(p, len, &self->opts, &res));
	EXPECT_EQ(head, res.populated);
	EXPECT_EQ(-EINVAL, madvise_populate_write(p, len));
	munmap(p, len);
}

TEST_F(lib, lock_like_mlock)
{
	size_t len = 4 * MiB;
	struct memprepop_result res;
	struct rlimit rl;
	char *p;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 2 * len) {
		rl.rlim_cur = rl.rlim_max = 2 * len;
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			SKIP(return, "RLIMIT_MEMLOCK is below %zu", 2 * len);
	}
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

TEST(version_and_names)
{
	EXPECT_STREQ(MEMPREPOP_VERSION, memprepop_version());
	EXPECT_STREQ("module", memprepop_backend_name(MEMPREPOP_BACKEND_MODULE));
	EXPECT_STREQ("fallback",
		     memprepop_backend_name(MEMPREPOP_BACKEND_FALLBACK));
}

TEST_HARNESS_MAIN
