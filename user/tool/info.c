// SPDX-License-Identifier: GPL-2.0
/* memprepop info: the backend, the module, nodes and hugepage pools. */
#include <errno.h>
#include <numa.h>
#include <string.h>

#include "tool.h"

static void print_cpus(int node)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int cpu, first = -1, printed = 0;

	if (!cpus || numa_node_to_cpus(node, cpus)) {
		printf("?");
		numa_bitmask_free(cpus);
		return;
	}
	/* As ranges: 0-3,8 */
	for (cpu = 0; cpu <= (int)cpus->size; cpu++) {
		bool set = cpu < (int)cpus->size &&
			   numa_bitmask_isbitset(cpus, cpu);

		if (set && first < 0)
			first = cpu;
		if (!set && first >= 0) {
			printf("%s%d", printed++ ? "," : "", first);
			if (cpu - 1 > first)
				printf("-%d", cpu - 1);
			first = -1;
		}
	}
	if (!printed)
		printf("none");
	numa_bitmask_free(cpus);
}

int cmd_info(int argc, char **argv)
{
	static const size_t huge_sizes[] = { 2ul << 20, 1ul << 30 };
	struct memprepop_info info;
	int ret, node;

	if (argc > 1) {
		bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");

		fprintf(help ? stdout : stderr,
			"usage: %s info\n\n"
			"Shows the library and the backend it uses, what the "
			"module supports,\nand per NUMA node its CPUs, free "
			"memory and hugetlb pools.\n", prog);
		return help ? 0 : 2;
	}
	printf("library   %s, option flags 0x%x\n", memprepop_version(),
	       memprepop_opt_flags());
	printf("backend   %s\n", memprepop_backend_name(memprepop_backend()));
	ret = memprepop_query(&info, sizeof(info));
	if (ret == -ENODEV) {
		printf("module    not loaded\n");
	} else if (ret) {
		fprintf(stderr, "%s: cannot query %s: %s\n", prog,
			MEMPREPOP_DEVICE, strerror(-ret));
		return 1;
	} else {
		printf("module    flags 0x%llx, up to %u workers and %u "
		       "ranges a call, populate size %u, info size %u\n",
		       (unsigned long long)info.flags, info.max_workers,
		       info.max_ranges ? info.max_ranges : 1,
		       info.populate_size, info.info_size);
	}
	if (numa_available() < 0) {
		printf("numa      not available\n");
		return 0;
	}
	for (node = 0; node <= numa_max_node(); node++) {
		long long free_bytes, total;

		if (!numa_bitmask_isbitset(numa_nodes_ptr, node))
			continue;
		total = numa_node_size64(node, &free_bytes);
		printf("node %-4d cpus ", node);
		print_cpus(node);
		printf(", %lld of %lld MiB free\n", free_bytes >> 20,
		       total >> 20);
	}
	for (unsigned int i = 0; i < 2; i++) {
		printf("hugetlb %s: ", i ? "1G" : "2M");
		hugetlb_pools(stdout, huge_sizes[i], ", ");
		printf("\n");
	}
	return 0;
}
