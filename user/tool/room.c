// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop(1): how much memory the chosen nodes could give, so that a size
 * beyond it is refused before a page is touched, instead of faulting until
 * the OOM killer picks a process (a running VM, on a hypervisor).
 */
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

/* A "Field: N kB" of a meminfo file, in bytes; 0 where it is not there */
static uint64_t meminfo_field(const char *path, const char *field)
{
	size_t n = strlen(field);
	uint64_t kb = 0;
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* Node files start "Node 0 MemFree:" */
		char *p = strstr(line, field);

		if (p && p[n] == ':') {
			kb = strtoull(p + n + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb << 10;
}

/* Free and reclaimable memory of node @node, or of the system for -1 */
static uint64_t node_room(int node)
{
	static const char *const fields[] = {
		"MemFree", "Active(file)", "Inactive(file)", "SReclaimable",
	};
	char path[80];
	uint64_t sum = 0;

	if (node < 0)
		return meminfo_field("/proc/meminfo", "MemAvailable");
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 node);
	for (unsigned int i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		sum += meminfo_field(path, fields[i]);
	return sum;
}

/* Free hugetlb pages of @page_size on node @node, or in the system */
static uint64_t node_huge_room(int node, size_t page_size)
{
	char path[128];
	long nr = 0;
	FILE *f;

	if (node < 0)
		snprintf(path, sizeof(path),
			 "/sys/kernel/mm/hugepages/hugepages-%zukB/free_hugepages",
			 page_size >> 10);
	else
		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node%d/hugepages/hugepages-%zukB/free_hugepages",
			 node, page_size >> 10);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &nr) != 1 || nr < 0)
		nr = 0;
	fclose(f);
	return (uint64_t)nr * page_size;
}

/**
 * room_for() - the memory the nodes of @pl could give a mapping
 * @pl: its placement; with none (or --preferred, which falls back), every
 *	node the process may allocate on
 * @page_size: its page size: hugetlb pages count only free ones of that size
 * @swap: whether swap may take what memory cannot (not for locked memory)
 * @nodes: set to the nodes counted, for the message ("all" for every one)
 * @len: its size
 *
 * Free and reclaimable memory (file pages, reclaimable slab) of those nodes,
 * and free swap where it may be used. An estimate, on the generous side:
 * what it refuses cannot be had without the OOM killer.
 *
 * Return: bytes.
 */
uint64_t room_for(const struct placement *pl, size_t page_size, bool swap,
		  char *nodes, size_t len)
{
	bool huge = page_size > (size_t)sysconf(_SC_PAGESIZE);
	struct bitmask *mask = NULL;
	uint64_t room = 0;
	int node;

	snprintf(nodes, len, "all");
	if (numa_available() >= 0) {
		if (pl->mode == MPOL_BIND || pl->mode == MPOL_INTERLEAVE)
			mask = pl->nodes;
		else
			mask = numa_get_mems_allowed();
		/* Empty where get_mempolicy() is refused (a sandbox) */
		if (mask && mask != pl->nodes && !numa_bitmask_weight(mask)) {
			numa_bitmask_free(mask);
			mask = NULL;
		}
	}
	if (!mask) {
		room = huge ? node_huge_room(-1, page_size) : node_room(-1);
	} else {
		for (node = 0; node <= numa_max_node(); node++)
			if (numa_bitmask_isbitset(mask, node))
				room += huge ? node_huge_room(node, page_size) :
					       node_room(node);
		if (mask == pl->nodes)
			snprintf(nodes, len, "%s", pl->list);
		else
			numa_bitmask_free(mask);
	}
	if (swap && !huge)
		room += meminfo_field("/proc/meminfo", "SwapFree");
	return room;
}

/**
 * check_room() - refuse a size the nodes could not give
 * @run: what is to be populated: its placement, page size, whether locked
 *	and whether the operator asked to overcommit
 * @need: the bytes of it not yet present
 *
 * Return: 0 to go on, or 2 (bad arguments) after one line saying why.
 */
int check_room(const struct run *run, uint64_t need)
{
	bool huge = run->page_size > (size_t)sysconf(_SC_PAGESIZE);
	char nodes[64], want[32], have[32];
	uint64_t room;

	if (run->overcommit)
		return 0;
	room = room_for(run->placement, run->page_size, !run->lock, nodes,
			sizeof(nodes));
	if (need <= room)
		return 0;
	size_text(want, sizeof(want), need);
	size_text(have, sizeof(have), room);
	fprintf(stderr, "%s: %s%s%s is more than the %s that %s%s could give "
		"(%s): --overcommit to try anyway\n", prog,
		run->file ? run->name : "", run->file ? ": " : "", want, have,
		!strcmp(nodes, "all") ? "the allowed nodes" :
		strpbrk(nodes, ",-") ? "nodes " : "node ",
		strcmp(nodes, "all") ? nodes : "",
		huge ? "their free hugetlb pages of this size" :
		run->lock ? "free and reclaimable memory; locked: no swap" :
		"free and reclaimable memory, and free swap");
	return 2;
}
