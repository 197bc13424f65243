// SPDX-License-Identifier: GPL-2.0
/*
 * A node with memory and no CPU (node 2 of a three-node guest): its pages
 * are placed there by policy and faulted by the nearest node's workers.
 */
#define _GNU_SOURCE
#include <numa.h>
#include <numaif.h>

#include "kselftest_harness.h"
#include "memprepop_test.h"

#define LEN	(64 * MiB)
#define MEMONLY	2

/* Pages of [p, p + len) on node @nid, from numa_maps */
static size_t pages_on(char *p, size_t len, int nid)
{
	uint64_t counts[TEST_NODES];

	if (numa_maps_nodes(p, len, counts, TEST_NODES))
		return 0;
	return counts[nid];
}

static bool have_memory_only_node(void)
{
	struct bitmask *cpus;
	bool ret;

	if (numa_available() < 0 || numa_max_node() < MEMONLY)
		return false;
	cpus = numa_allocate_cpumask();
	ret = !numa_node_to_cpus(MEMONLY, cpus) &&
	      numa_bitmask_weight(cpus) == 0 &&
	      numa_node_size(MEMONLY, NULL) > 0;
	numa_bitmask_free(cpus);
	return ret;
}

FIXTURE(memonly)
{
	int fd;
	char *p;
};

FIXTURE_SETUP(memonly)
{
	if (!have_memory_only_node())
		SKIP(return, "no node %d with memory and no CPU", MEMONLY);
	self->fd = open(MEMPREPOP_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->p = map_anon(LEN);
	ASSERT_NE(NULL, self->p);
	ASSERT_EQ(0, no_thp(self->p, LEN));
}

FIXTURE_TEARDOWN(memonly)
{
	if (_metadata->skip)
		return;
	munmap(self->p, LEN);
	close(self->fd);
}

#define RETURN_IF_SKIPPED() do { if (_metadata->skip) return; } while (0)

TEST_F(memonly, vma_bind_served_by_nearest)
{
	unsigned long mask = 1 << MEMONLY;
	struct memprepop_populate req;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, mbind(self->p, LEN, MPOL_BIND, &mask, 8 * sizeof(mask), 0));
	ASSERT_EQ(0, ioc_populate(self->fd, self->p, LEN, 0, &req));
	EXPECT_EQ(LEN, req.populated);
	/* One CPU per node near it: one worker, from the nearest node */
	EXPECT_EQ(1, req.workers);
	EXPECT_EQ(LEN / page_size(), pages_on(self->p, LEN, MEMONLY));
}

TEST_F(memonly, task_preferred)
{
	unsigned long mask = 1 << MEMONLY;
	struct memprepop_populate req;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, set_mempolicy(MPOL_PREFERRED, &mask, 8 * sizeof(mask)));
	ASSERT_EQ(0, ioc_populate(self->fd, self->p, LEN, 0, &req));
	ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
	EXPECT_EQ(LEN / page_size(), pages_on(self->p, LEN, MEMONLY));
}

/* Interleave over all three: the per-page formula, node 2 included */
TEST_F(memonly, vma_interleave_three_nodes)
{
	unsigned long mask = 7;
	size_t n = LEN / page_size();
	struct memprepop_populate req;

	RETURN_IF_SKIPPED();
	ASSERT_EQ(0, mbind(self->p, LEN, MPOL_INTERLEAVE, &mask,
			   8 * sizeof(mask), 0));
	ASSERT_EQ(0, ioc_populate(self->fd, self->p, LEN, 0, &req));
	EXPECT_EQ(2, req.workers);
	for (int nid = 0; nid <= MEMONLY; nid++) {
		size_t got = pages_on(self->p, LEN, nid);

		EXPECT_GE(1, labs((long)got - (long)(n / 3)));
	}
}

TEST_HARNESS_MAIN
