// SPDX-License-Identifier: GPL-2.0
/*
 * The documented limits of one populate call (uapi/linux/memprepop.h):
 * every size and count the caller gives is bounded before it sizes an
 * allocation or a loop, whatever the ranges overlap, and a call past a
 * limit fails at once, having done nothing. Within the limits the same
 * arrays do what madvise() of each range does. The test VM fails the run
 * on any WARN (an allocation warning included) or stall.
 */
#define _GNU_SOURCE
#include <numaif.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

#define SLOW	3600

FIXTURE(limits)
{
	int fd;
};

FIXTURE_SETUP(limits)
{
	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(limits)
{
	close(self->fd);
}

/* A call of @nr ranges of @size bytes each at @ranges: 0 or -errno */
static int populate_ranges(int fd, void *ranges, unsigned int nr,
			   unsigned int size, struct memprepop_populate *req)
{
	memset(req, 0, sizeof(*req));
	req->ranges = (uintptr_t)ranges;
	req->nr_ranges = nr;
	req->range_size = size;
	return ioctl(fd, MEMPREPOP_IOC_POPULATE, req) ? -errno : 0;
}

/*
 * @range_size up to MEMPREPOP_RANGE_SIZE_MAX, its tail zero, is taken;
 * above it E2BIG at once, before any entry is read: not 4 GiB of "tail"
 * checked per entry.
 */
TEST_F_TIMEOUT(limits, range_size_bounded, SLOW)
{
	size_t len = 2 * MiB, size = MEMPREPOP_RANGE_SIZE_MAX;
	struct memprepop_populate req;
	struct memprepop_range *r;
	unsigned char *buf;
	char *p = map_anon(len);
	double t0;

	ASSERT_NE(NULL, p);
	buf = calloc(16, size);
	ASSERT_NE(NULL, buf);
	r = (struct memprepop_range *)buf;
	r->addr = (uintptr_t)p;
	r->len = len;
	ASSERT_EQ(0, populate_ranges(self->fd, buf, 1, size, &req));
	EXPECT_EQ(len, req.populated);
	EXPECT_EQ(len / page_size(), present_pages(p, len));

	EXPECT_EQ(-E2BIG, populate_ranges(self->fd, buf, 1, size + 1, &req));
	t0 = now();
	EXPECT_EQ(-E2BIG, populate_ranges(self->fd, buf, 16, 0xffffffe0,
					  &req));
	EXPECT_EQ(-E2BIG, populate_ranges(self->fd, buf, 65536, 0xffffffe0,
					  &req));
	TH_LOG("two calls of 4 GiB entries refused in %.4f s", now() - t0);
	EXPECT_GT(1.0, now() - t0);
	EXPECT_EQ(0, req.populated);
	free(buf);
	munmap(p, len);
}

/*
 * @nr_node_pages up to MEMPREPOP_NODE_PAGES_MAX; above it EINVAL with the
 * caller's array untouched, not gigabytes of it cleared.
 */
TEST_F_TIMEOUT(limits, node_pages_bounded, SLOW)
{
	size_t n = MEMPREPOP_NODE_PAGES_MAX + 1, len = 2 * MiB;
	struct memprepop_populate req;
	uint64_t *counts;
	char *p = map_anon(len);
	double t0;

	ASSERT_NE(NULL, p);
	counts = malloc(n * sizeof(*counts));
	ASSERT_NE(NULL, counts);
	memset(counts, 0xff, n * sizeof(*counts));
	ASSERT_EQ(0, ioc_populate_stats(self->fd, p, len, 0, counts, n - 1,
					&req));
	EXPECT_EQ(len / page_size(), sum_counts(counts, n - 1));
	EXPECT_EQ(~0ULL, counts[n - 1]);

	memset(counts, 0xff, n * sizeof(*counts));
	t0 = now();
	EXPECT_EQ(-EINVAL, ioc_populate_stats(self->fd, p, len, 0, counts, n,
					      &req));
	EXPECT_EQ(-EINVAL, ioc_populate_stats(self->fd, p, len, 0, counts,
					      1U << 30, &req));
	EXPECT_EQ(-EINVAL, ioc_populate_stats(self->fd, p, len, 0, counts,
					      ~0U, &req));
	EXPECT_GT(1.0, now() - t0);
	EXPECT_EQ(~0ULL, counts[0]);
	free(counts);
	munmap(p, len);
}

/*
 * Ranges that all cover one huge mapping: each one would be fine alone,
 * together they plan more than MEMPREPOP_PLAN_LEN_MAX, so E2BIG at once,
 * with nothing populated and no allocation the size of their sum. A few
 * overlapping small ranges are populated, each as madvise() would.
 */
TEST_F_TIMEOUT(limits, overlapping_ranges_bounded, SLOW)
{
	size_t huge = 4ULL << 40, small = 4 * MiB;
	unsigned int nr = 65536, over = MEMPREPOP_PLAN_LEN_MAX / huge + 1;
	struct memprepop_populate req;
	struct memprepop_range *r;
	long vmalloc0;
	char *big, *p;
	double t0;

	big = mmap(NULL, huge, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, big);
	p = map_anon(small);
	ASSERT_NE(NULL, p);
	r = calloc(nr, sizeof(*r));
	ASSERT_NE(NULL, r);
	for (unsigned int i = 0; i < nr; i++) {
		r[i].addr = (uintptr_t)big;
		r[i].len = huge;
	}
	vmalloc0 = meminfo_field("VmallocUsed");
	t0 = now();
	/* Unbounded, these would populate TiBs: stop at the first */
	ASSERT_EQ(-E2BIG, populate_ranges(self->fd, r, nr, sizeof(*r), &req));
	ASSERT_EQ(-E2BIG, populate_ranges(self->fd, r, over, sizeof(*r),
					  &req));
	TH_LOG("%u and %u ranges of 4 TiB, one mapping: refused in %.3f s",
	       nr, over, now() - t0);
	EXPECT_GT(5.0, now() - t0);
	EXPECT_EQ(0, req.populated);
	EXPECT_EQ(0, r[0].populated);
	EXPECT_EQ(0, present_pages(big, 64 * MiB));
	/* Nothing kept of it: the plan was bounded and freed */
	EXPECT_GT(vmalloc0 + 16 * 1024, meminfo_field("VmallocUsed"));

	/* Overlapping, within the limits: each range as madvise() of it */
	for (unsigned int i = 0; i < 4; i++) {
		r[i].addr = (uintptr_t)p + i * MiB;
		r[i].len = small - i * MiB;
	}
	ASSERT_EQ(0, populate_ranges(self->fd, r, 4, sizeof(*r), &req));
	for (unsigned int i = 0; i < 4; i++) {
		EXPECT_EQ(small - i * MiB, r[i].populated);
		EXPECT_EQ(0, r[i].error);
	}
	EXPECT_EQ(small / page_size(), present_pages(p, small));
	free(r);
	munmap(p, small);
	munmap(big, huge);
}

/*
 * Pages whose policies alternate between the nodes: a run each. One range
 * over them is populated whole, as madvise() would; the same range given
 * four times cuts into more runs than
 * MEMPREPOP_PLAN_RUNS_MAX: E2BIG, nothing done.
 */
TEST_F_TIMEOUT(limits, runs_bounded, SLOW)
{
	unsigned int pages = MEMPREPOP_PLAN_RUNS_MAX / 4 + 64;
	size_t len = (size_t)pages * page_size();
	struct memprepop_populate req;
	struct memprepop_range r[4] = { 0 };
	char *p = map_anon(len);

	ASSERT_NE(NULL, p);
	for (unsigned int i = 0; i < pages; i++) {
		unsigned long mask = 1UL << (i % 2);

		ASSERT_EQ(0, mbind(p + (size_t)i * page_size(), page_size(),
				   MPOL_BIND, &mask, 8 * sizeof(mask), 0));
	}
	for (unsigned int i = 0; i < 4; i++) {
		r[i].addr = (uintptr_t)p;
		r[i].len = len;
	}
	EXPECT_EQ(-E2BIG, populate_ranges(self->fd, r, 4, sizeof(*r), &req));
	EXPECT_EQ(0, present_pages(p, len));

	ASSERT_EQ(0, populate_ranges(self->fd, r, 1, sizeof(*r), &req));
	EXPECT_EQ(len, r[0].populated);
	EXPECT_EQ(pages, present_pages(p, len));
	munmap(p, len);
}

TEST_HARNESS_MAIN
