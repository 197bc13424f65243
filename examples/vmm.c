// SPDX-License-Identifier: GPL-2.0
/*
 * A VMM's guest RAM, prepared the way a VMM does it: one region per guest
 * NUMA node, each a memfd (hugetlb 2 MiB pages when the pool has them),
 * bound with mbind() to a host node before anything is touched, then
 * populated and locked through libmemprepop with a progress line, and the
 * placement of every page checked.
 *
 * usage: memprepop-example-vmm [SIZE_MIB [GUEST_NODES]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <memprepop.h>
#include <numa.h>
#include <numaif.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_2M	(2UL << 20)

struct region {
	int host_node;
	size_t len;
	bool huge;
	char *mem;
};

static int show_progress(uint64_t done, uint64_t total, void *arg)
{
	fprintf(stderr, "\r  %s: %3d%%", (const char *)arg,
		(int)(100 * done / total));
	return 0;
}

/* A shared mapping of a new memfd of @len, or NULL */
static char *map_memfd(size_t len, unsigned int flags)
{
	int fd = memfd_create("guest-ram", MFD_CLOEXEC | flags);
	char *mem = MAP_FAILED;

	if (fd < 0)
		return NULL;
	/* A hugetlb mmap fails here when the pool cannot cover it */
	if (!ftruncate(fd, len))
		mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			   0);
	close(fd);
	return mem == MAP_FAILED ? NULL : mem;
}

/* Guest RAM: hugetlb pages when the pool has enough, else shmem */
static char *map_guest_ram(struct region *r)
{
	char *mem = map_memfd(r->len, MFD_HUGETLB);

	r->huge = mem != NULL;
	return mem ? mem : map_memfd(r->len, 0);
}

static int prepare(struct region *r, unsigned int guest_node)
{
	struct memprepop_opts opts = MEMPREPOP_OPTS_INIT;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	unsigned int nr_nodes = numa_num_possible_nodes();
	unsigned long mask = 1UL << r->host_node;
	uint64_t *counts, on_node;
	char name[32];
	int err;

	r->mem = map_guest_ram(r);
	if (!r->mem)
		return -errno;
	/* Where the pages went, by node: one entry for every possible node */
	counts = calloc(nr_nodes, sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	opts.flags = MEMPREPOP_OPT_LOCK;
	opts.node_pages = counts;
	opts.nr_nodes = nr_nodes;
	opts.progress = show_progress;
	/* The policy first: every page is placed once, and never moved */
	if (mbind(r->mem, r->len, MPOL_BIND, &mask, sizeof(mask) * 8, 0)) {
		free(counts);
		return -errno;
	}
	snprintf(name, sizeof(name), "guest node %u", guest_node);
	opts.progress_arg = name;
	err = memprepop_populate(r->mem, r->len, &opts, &res);
	fprintf(stderr, "\r");
	on_node = counts[r->host_node];
	free(counts);
	if (err) {
		fprintf(stderr, "%s: %s after %llu bytes\n", name,
			strerror(-err), (unsigned long long)res.populated);
		return err;
	}
	printf("%s: %zu MiB %s, host node %d, %.3f s, %s with %u workers, "
	       "%.1f%% of pages on node %d, locked\n", name, r->len >> 20,
	       r->huge ? "hugetlb" : "shmem", r->host_node, res.nsecs / 1e9,
	       memprepop_backend_name(res.backend), res.workers,
	       100.0 * on_node / (r->len / sysconf(_SC_PAGESIZE)),
	       r->host_node);
	return on_node == r->len / sysconf(_SC_PAGESIZE) ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	size_t size = (argc > 1 ? strtoull(argv[1], NULL, 10) : 256) << 20;
	int host_nodes = numa_available() < 0 ? 1 : numa_max_node() + 1;
	unsigned int guest_nodes = argc > 2 ? atoi(argv[2]) : host_nodes;
	struct region *regions;
	unsigned int i;
	int ret = 0;

	if (!size || !guest_nodes) {
		fprintf(stderr, "usage: %s [SIZE_MIB [GUEST_NODES]]\n",
			argv[0]);
		return 2;
	}
	regions = calloc(guest_nodes, sizeof(*regions));
	if (!regions)
		return 1;
	printf("guest RAM: %zu MiB over %u guest nodes, backend %s\n",
	       size >> 20, guest_nodes,
	       memprepop_backend_name(memprepop_backend()));
	for (i = 0; i < guest_nodes && !ret; i++) {
		regions[i].host_node = i % host_nodes;
		regions[i].len = (size / guest_nodes + HUGE_2M - 1) &
				 ~(HUGE_2M - 1);
		ret = prepare(&regions[i], i);
		if (ret == -EFAULT && regions[i].huge)
			fprintf(stderr, "(hugetlb pool too small: reserve "
				"more in /proc/sys/vm/nr_hugepages)\n");
	}
	return ret ? 1 : 0;
}
