// SPDX-License-Identifier: GPL-2.0
/* memprepop info: the backend, the module, nodes and hugepage pools. */
#include <errno.h>
#include <numa.h>
#include <string.h>

#include "tool.h"

static const size_t huge_sizes[] = { 2ul << 20, 1ul << 30 };
static const char *const huge_names[] = { "2M", "1G" };

/* The CPUs of @node as ranges, "0-3,8"; "none", or "?" when unknown */
static void cpus_text(int node, char *buf, size_t len)
{
	struct bitmask *cpus = numa_allocate_cpumask();

	if (cpus && !numa_node_to_cpus(node, cpus))
		ranges_text(cpus, cpus->size - 1, buf, len);
	else
		snprintf(buf, len, "?");
	numa_bitmask_free(cpus);
}

/* The nodes and their pools, as one JSON object's last fields */
static void info_nodes_json(void)
{
	const char *sep = "";
	long free_pages, nr;
	char cpus[256];
	int node;

	printf(", \"nodes\": {");
	for (node = 0; numa_available() >= 0 && node <= numa_max_node();
	     node++) {
		long long free_bytes, total;

		if (!numa_bitmask_isbitset(numa_nodes_ptr, node))
			continue;
		total = numa_node_size64(node, &free_bytes);
		cpus_text(node, cpus, sizeof(cpus));
		printf("%s\"%d\": {\"cpus\": \"%s\", \"free_bytes\": %lld, "
		       "\"total_bytes\": %lld, \"hugetlb\": {", sep, node, cpus,
		       free_bytes, total);
		sep = "";
		for (unsigned int i = 0; i < 2; i++) {
			if (!hugetlb_pool(node, huge_sizes[i], &free_pages,
					  &nr))
				continue;
			printf("%s\"%s\": {\"free\": %ld, \"total\": %ld}", sep,
			       huge_names[i], free_pages, nr);
			sep = ", ";
		}
		printf("}}");
		sep = ", ";
	}
	printf("}}\n");
}

static void info_nodes_text(void)
{
	char cpus[256];
	int node;

	if (numa_available() < 0) {
		printf("numa      not available\n");
		return;
	}
	for (node = 0; node <= numa_max_node(); node++) {
		long long free_bytes, total;

		if (!numa_bitmask_isbitset(numa_nodes_ptr, node))
			continue;
		total = numa_node_size64(node, &free_bytes);
		cpus_text(node, cpus, sizeof(cpus));
		printf("node %-4d cpus %s, %lld of %lld MiB free\n", node, cpus,
		       free_bytes >> 20, total >> 20);
	}
	for (unsigned int i = 0; i < 2; i++) {
		printf("hugetlb %s: ", huge_names[i]);
		hugetlb_pools(stdout, huge_sizes[i], ", ");
		printf("\n");
	}
}

int cmd_info(int argc, char **argv)
{
	struct memprepop_info info;
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	int ret;

	if (argc > 1 && !json) {
		bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");

		if (!help)
			fprintf(stderr, "%s info: unknown argument '%s'\n",
				prog, argv[1]);
		fprintf(help ? stdout : stderr,
			"usage: %s info [--json]\n\n"
			"Shows the library and the backend it uses, what the "
			"module supports,\nand per NUMA node its CPUs, free "
			"memory and hugetlb pools.\n\n"
			"      --json            one JSON object on stdout\n",
			prog);
		return help ? 0 : 2;
	}
	ret = memprepop_query(&info, sizeof(info));
	if (ret && ret != -ENODEV) {
		fprintf(stderr, "%s: cannot query %s: %s\n", prog,
			MEMPREPOP_DEVICE, strerror(-ret));
		return 1;
	}
	if (json) {
		printf("{\"library\": ");
		json_string(memprepop_version());
		printf(", \"option_flags\": %u, \"backend\": \"%s\", "
		       "\"module\": ", memprepop_opt_flags(),
		       memprepop_backend_name(memprepop_backend()));
		if (ret)
			printf("null");
		else
			printf("{\"flags\": %llu, \"max_workers\": %u, "
			       "\"max_ranges\": %u, \"populate_size\": %u, "
			       "\"info_size\": %u}",
			       (unsigned long long)info.flags,
			       info.max_workers,
			       info.max_ranges ? info.max_ranges : 1,
			       info.populate_size, info.info_size);
		info_nodes_json();
		return 0;
	}
	printf("library   %s, option flags 0x%x\n", memprepop_version(),
	       memprepop_opt_flags());
	printf("backend   %s\n", memprepop_backend_name(memprepop_backend()));
	if (ret)
		printf("module    not loaded\n");
	else
		printf("module    flags 0x%llx, up to %u workers and %u "
		       "ranges a call, populate size %u, info size %u\n",
		       (unsigned long long)info.flags, info.max_workers,
		       info.max_ranges ? info.max_ranges : 1,
		       info.populate_size, info.info_size);
	info_nodes_text();
	return 0;
}
