// SPDX-License-Identifier: GPL-2.0
/* memprepop(1): the progress bar, the report, and why a call failed. */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double bar_start;
static bool bar_drawn;
void progress_bar_start(void)
{
	bar_start = now();
	bar_drawn = false;
}

/*
 * On a terminal, for runs over a second: percentage, rate and ETA. Cancels
 * the call after SIGINT, SIGTERM or SIGHUP (cancel.c).
 */
int progress_bar(uint64_t done, uint64_t total, void *arg)
{
	const struct run *run = arg;
	double elapsed = now() - bar_start, rate;
	int width = 30, fill;

	if (cancelled())
		return 1;
	if (!run->progress || elapsed < 1.0 || !total || done >= total)
		return 0;
	rate = done / elapsed;
	fill = (int)(width * (double)done / total);
	fprintf(stderr, "\r%3d%% [%.*s%*s] %6.2f GB/s  ETA %4.0f s ",
		(int)(100 * done / total), fill,
		"==============================", width - fill, "",
		rate / 1e9, rate > 0 ? (total - done) / rate : 0.0);
	bar_drawn = true;
	return 0;
}

void progress_bar_end(void)
{
	if (bar_drawn)
		fprintf(stderr, "\r%*s\r", 72, "");
	bar_drawn = false;
}

static const char *policy_name(int mode)
{
	switch (mode) {
	case MPOL_BIND:
		return "membind";
	case MPOL_INTERLEAVE:
		return "interleave";
	case MPOL_PREFERRED:
		return "preferred";
	default:
		return "default";
	}
}

void size_text(char *buf, size_t n, uint64_t bytes)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
	};
	double v = bytes;
	int u = 0;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, "%.2f %s", v, units[u]);
}

/* "16384 pages (64.00 MiB)": base pages, and their size */
static void pages_text(char *buf, size_t n, uint64_t pages)
{
	char size[32];

	size_text(size, sizeof(size), pages * sysconf(_SC_PAGESIZE));
	snprintf(buf, n, "%llu pages (%s)", (unsigned long long)pages, size);
}

/*
 * @s as a terminal may show it: control characters and backslashes as C
 * escapes ("\\033"), so that a file name cannot move the cursor or change
 * colours; a new string, NULL without memory
 */
char *printable(const char *s)
{
	char *out = malloc(4 * strlen(s) + 1), *o = out;

	for (; out && *s; s++) {
		unsigned char c = *s;

		if (c < 0x20 || c == 0x7f || c == '\\')
			o += c == '\\' ? sprintf(o, "\\\\") :
				sprintf(o, "\\%03o", c);
		else
			*o++ = c;
	}
	if (out)
		*o = 0;
	return out;
}

/* @s as a JSON string */
void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* " 0,1" as given, " all (0-1)" where that differs from the nodes named */
static const char *placement_text(const struct placement *pl)
{
	static char buf[160];

	if (!pl->text)
		return "";
	if (!strcmp(pl->text, pl->list))
		snprintf(buf, sizeof(buf), " %s", pl->text);
	else
		snprintf(buf, sizeof(buf), " %s (%s)", pl->text, pl->list);
	return buf;
}

/* "N": pages, for each node up to the highest and any other with pages */
static void json_nodes(const struct run *run)
{
	const char *sep = "";
	unsigned int node;

	printf("{");
	for (node = 0; node < run->nr_nodes; node++) {
		/* As the text: every node up to the highest, and any with pages */
		if (!run->node_pages[node] && (int)node > highest_node())
			continue;
		printf("%s\"%u\": %llu", sep, node,
		       (unsigned long long)run->node_pages[node]);
		sep = ", ";
	}
	printf("}");
}

/* The rate of what the call populated, not of what it was asked to */
static double gbps(const struct run *run, double secs)
{
	return secs > 0 ? run->res.populated / secs / 1e9 : 0.0;
}

static void report_json(const struct run *run, double secs)
{
	const struct placement *pl = run->placement;

	printf("{\"size\": %llu, \"memory\": \"%s\", \"page_size\": %zu, "
	       "\"policy\": \"%s\", \"policy_nodes\": \"%s\", "
	       "\"locked\": %s, \"seconds\": %.6f, \"gbps\": %.3f, "
	       "\"backend\": \"%s\", \"workers\": %u, \"pages\": %llu, "
	       "\"present_pages\": %llu, \"nodes\": ",
	       (unsigned long long)run->size, run->what, run->page_size,
	       policy_name(pl->mode), pl->text ? pl->list : "",
	       run->locked ? "true" : "false", secs, gbps(run, secs),
	       memprepop_backend_name(run->res.backend), run->res.workers,
	       (unsigned long long)(run->size / sysconf(_SC_PAGESIZE)),
	       (unsigned long long)run->present);
	json_nodes(run);
	printf(", \"populated\": %llu, \"thp_bytes\": %llu, \"error\": %d, "
	       "\"error_text\": ", (unsigned long long)run->res.populated,
	       (unsigned long long)run->thp_bytes, run->error);
	json_string(run->error ? strerror(-run->error) : "");
	printf("}\n");
}

/* How the call went: the lines populate and file share */
static void report_call(const struct run *run)
{
	double secs = run->res.nsecs / 1e9;
	char buf[32];

	printf("locked    %s\n", run->locked ? "yes" :
	       run->lock ? "no (asked for: see the error)" : "no");
	printf("seconds   %.3f\n", secs);
	if (run->res.populated != run->size) {
		size_text(buf, sizeof(buf), run->res.populated);
		printf("populated %s\n", buf);
	}
	printf("GB/s      %.2f (GB: 10^9 bytes; KiB, MiB, GiB: 2^10, 2^20, "
	       "2^30)\n", gbps(run, secs));
	printf("backend   %s\n", memprepop_backend_name(run->res.backend));
	printf("workers   %u\n", run->res.workers);
	printf("verified  %llu of %llu pages present%s\n",
	       (unsigned long long)run->present,
	       (unsigned long long)(run->counted / sysconf(_SC_PAGESIZE)),
	       run->counted < run->size ? " (in the part populated)" : "");
}

void report(const struct run *run)
{
	const struct placement *pl = run->placement;
	double secs = run->res.nsecs / 1e9;
	int highest = highest_node();
	unsigned int node;
	char buf[64];

	if (run->json) {
		report_json(run, secs);
		return;
	}
	size_text(buf, sizeof(buf), run->size);
	printf("size      %s (%llu bytes)\n", buf,
	       (unsigned long long)run->size);
	size_text(buf, sizeof(buf), run->page_size);
	printf("memory    %s, %s pages", run->what, buf);
	if (run->thp || run->thp_bytes) {
		size_text(buf, sizeof(buf), run->thp_bytes);
		printf(", %s of it in transparent huge pages", buf);
	}
	printf("\n");
	printf("policy    %s%s\n", policy_name(pl->mode), placement_text(pl));
	report_call(run);
	for (node = 0; node < run->nr_nodes; node++)
		if (run->node_pages[node] || (int)node <= highest) {
			pages_text(buf, sizeof(buf), run->node_pages[node]);
			printf("node %-4u %s\n", node, buf);
		}
}

static void report_files_json(const struct run *const *files, unsigned int n,
			      const struct run *all, double secs)
{
	long psz = sysconf(_SC_PAGESIZE);
	unsigned int i;

	printf("{\"size\": %llu, \"files\": %u, \"locked\": %s, "
	       "\"seconds\": %.6f, \"gbps\": %.3f, \"backend\": \"%s\", "
	       "\"workers\": %u, \"pages\": %llu, \"present_pages\": %llu, "
	       "\"nodes\": ", (unsigned long long)all->size, n,
	       all->locked ? "true" : "false", secs, gbps(all, secs),
	       memprepop_backend_name(all->res.backend), all->res.workers,
	       (unsigned long long)(all->size / psz),
	       (unsigned long long)all->present);
	json_nodes(all);
	printf(", \"ranges\": [");
	for (i = 0; i < n; i++) {
		const struct run *run = files[i];
		const struct placement *pl = run->placement;

		printf("%s{\"path\": ", i ? ", " : "");
		json_string(run->what);
		printf(", \"size\": %llu, \"page_size\": %zu, "
		       "\"policy\": \"%s\", \"policy_nodes\": ",
		       (unsigned long long)run->size, run->page_size,
		       policy_name(pl->mode));
		json_string(pl->text ? pl->list : "");
		printf(", \"populated\": %llu, \"error\": %d, "
		       "\"error_text\": ", (unsigned long long)run->populated,
		       run->error);
		json_string(run->error ? strerror(-run->error) : "");
		printf(", \"pages\": %llu, \"present_pages\": %llu, "
		       "\"nodes\": ", (unsigned long long)(run->size / psz),
		       (unsigned long long)run->present);
		json_nodes(run);
		printf("}");
	}
	printf("]}\n");
}

/* The call's totals, then a line per file */
void report_files(const struct run *const *files, unsigned int n,
		  const struct run *all)
{
	double secs = all->res.nsecs / 1e9;
	long psz = sysconf(_SC_PAGESIZE);
	int highest = highest_node();
	unsigned int i, node;
	char buf[64];

	if (all->json) {
		report_files_json(files, n, all, secs);
		return;
	}
	size_text(buf, sizeof(buf), all->size);
	printf("size      %s (%llu bytes) in %u file%s\n", buf,
	       (unsigned long long)all->size, n, n == 1 ? "" : "s");
	report_call(all);
	for (i = 0; i < n; i++) {
		const struct run *run = files[i];
		const struct placement *pl = run->placement;

		size_text(buf, sizeof(buf), run->size);
		printf("file      %s: %s, %s%s, %llu of %llu pages present%s",
		       run->name, buf, policy_name(pl->mode),
		       placement_text(pl),
		       (unsigned long long)run->present,
		       (unsigned long long)(run->counted / psz),
		       run->counted < run->size ? " (in the part populated)" :
		       "");
		for (node = 0; node < run->nr_nodes; node++)
			if (run->node_pages[node] || (int)node <= highest) {
				pages_text(buf, sizeof(buf),
					   run->node_pages[node]);
				printf(", node %u: %s", node, buf);
			}
		if (run->error)
			printf(", %s", strerror(-run->error));
		printf("\n");
	}
}

static long read_long(const char *fmt, int node, size_t kb, const char *what)
{
	char path[160];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), fmt, node, kb, what);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* The highest node number in the system, 0 without NUMA */
int highest_node(void)
{
	return numa_available() >= 0 ? numa_max_node() : 0;
}

/* Hugetlb pages of @page_size on @node: false where it has no pool */
bool hugetlb_pool(int node, size_t page_size, long *free_pages, long *nr)
{
	static const char fmt[] =
		"/sys/devices/system/node/node%d/hugepages/hugepages-%zukB/%s";

	*nr = read_long(fmt, node, page_size >> 10, "nr_hugepages");
	*free_pages = read_long(fmt, node, page_size >> 10, "free_hugepages");
	return *nr >= 0;
}

/* "node 0: 120 of 512 free, node 1: ..." for hugetlb pages of @page_size */
void hugetlb_pools(FILE *f, size_t page_size, const char *sep)
{
	int highest = highest_node(), node;
	const char *s = "";
	long nr, free_pages;

	for (node = 0; node <= highest; node++) {
		if (!hugetlb_pool(node, page_size, &free_pages, &nr))
			continue;
		fprintf(f, "%snode %d: %ld of %ld free", s, node, free_pages,
			nr);
		s = sep;
	}
	if (!*s)
		fprintf(f, "none");
}

/* One line: what failed, why, and how far it got */
void explain_failure(const struct run *run, int err)
{
	char buf[32];

	if (run->file) {
		fprintf(stderr, "%s: cannot populate %s: %s (", prog, run->name,
			strerror(-err));
	} else {
		size_text(buf, sizeof(buf), run->size);
		fprintf(stderr, "%s: cannot populate %s of %s memory: %s (",
			prog, buf, run->what, strerror(-err));
	}
	if (err == -EFAULT && run->page_size > (size_t)sysconf(_SC_PAGESIZE)) {
		size_text(buf, sizeof(buf), run->page_size);
		fprintf(stderr, "hugetlb %s pool exhausted, an access beyond "
			"would raise SIGBUS: ", buf);
		hugetlb_pools(stderr, run->page_size, ", ");
	} else if (err == -EFAULT && run->file) {
		fprintf(stderr, "its file system is full, an access beyond "
			"would raise SIGBUS");
	} else if (run->lock && (err == -ENOMEM || err == -EAGAIN ||
				 err == -EPERM)) {
		struct rlimit rl;

		getrlimit(RLIMIT_MEMLOCK, &rl);
		if (rl.rlim_cur == RLIM_INFINITY)
			fprintf(stderr, "locking failed, RLIMIT_MEMLOCK is "
				"unlimited");
		else
			fprintf(stderr, "locking needs RLIMIT_MEMLOCK of %llu "
				"bytes or CAP_IPC_LOCK; it is %llu",
				(unsigned long long)run->size,
				(unsigned long long)rl.rlim_cur);
	} else if (err == -ENOMEM) {
		fprintf(stderr, "out of memory on the nodes allowed, or a "
			"memory cgroup's memory.max");
	} else if (err == -EOPNOTSUPP) {
		fprintf(stderr, "no %s and no MADV_POPULATE_WRITE (Linux "
			"5.14): load the module", MEMPREPOP_DEVICE);
	} else if (err == -EINVAL) {
		fprintf(stderr, "a mapping in the range cannot be written");
	} else {
		fprintf(stderr, "backend %s",
			memprepop_backend_name(run->res.backend));
	}
	size_text(buf, sizeof(buf), run->res.populated);
	fprintf(stderr, "; %s of the range populated)\n", buf);
}

/**
 * mapping_state() - what the kernel says of @run's mapping at @addr
 * @run: its thp_bytes and locked are set: how much of it is in transparent
 *	huge pages (AnonHugePages, or ShmemPmdMapped for shmem) and whether
 *	it is locked, as /proc/self/smaps has them (nothing when it cannot
 *	be read)
 * @addr: the mapping
 *
 * Locked is the outcome, not the request: mlock2() refused leaves the
 * mapping without VM_LOCKED ("lo"). mlock(2) leaves hugetlb mappings alone
 * (their pages never swap): those count as locked when it was asked for
 * and the call did not fail with the lock's errno before populating.
 */
void mapping_state(struct run *run, const void *addr)
{
	unsigned long start = (unsigned long)addr, from, to, v;
	bool in = false, refused;
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "r");

	run->thp_bytes = 0;
	run->locked = false;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &from, &to) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = from == start;
			continue;
		}
		if (in && (sscanf(line, "AnonHugePages: %lu kB", &v) == 1 ||
			   sscanf(line, "ShmemPmdMapped: %lu kB", &v) == 1))
			run->thp_bytes += (uint64_t)v << 10;
		if (in && !strncmp(line, "VmFlags:", 8))
			run->locked = strstr(line, " lo ") ||
				      strstr(line, " lo\n");
	}
	fclose(f);
	refused = !run->res.populated && (run->error == -ENOMEM ||
		  run->error == -EPERM || run->error == -EAGAIN);
	if (run->lock && run->page_size > (size_t)sysconf(_SC_PAGESIZE))
		run->locked = !refused;
	run->locked &= run->lock;
}

/* Pages of [@addr, @addr + @len) in memory, by mincore(2); -errno */
static int64_t resident_pages(const void *addr, size_t len)
{
	size_t psz = sysconf(_SC_PAGESIZE), chunk = 1 << 16, i, n;
	unsigned char *vec = malloc(chunk);
	int64_t nr = 0;

	if (!vec)
		return -ENOMEM;
	for (size_t off = 0; off < len; off += n * psz) {
		n = (len - off) / psz < chunk ? (len - off) / psz : chunk;
		if (mincore((char *)addr + off, n * psz, vec)) {
			nr = -errno;
			break;
		}
		for (i = 0; i < n; i++)
			nr += vec[i] & 1;
	}
	free(vec);
	return nr;
}

/**
 * count_present() - where the pages of @run's mapping at @addr are
 * @run: its node_pages (allocated here, every possible node), nr_nodes,
 *	present and counted are set
 * @addr: the mapping
 * @len: the bytes of it to count: all of it after a call that succeeded,
 *	what the call populated after one that failed or was cancelled, so
 *	that counting never costs more than populating did
 *
 * By memprepop_node_pages(3); where the NUMA system calls are refused (a
 * container's seccomp profile, say), by mincore(2) alone, with one line
 * saying so and no pages per node (nr_nodes 0).
 *
 * Return: 0, or -ENOMEM.
 */
int count_present(struct run *run, const void *addr, uint64_t len)
{
	unsigned int node;
	int64_t nr;
	int ret;

	run->nr_nodes = numa_num_possible_nodes() > 0 ?
			numa_num_possible_nodes() : 1;
	run->node_pages = calloc(run->nr_nodes, sizeof(uint64_t));
	if (!run->node_pages)
		return -ENOMEM;
	run->counted = len;
	ret = memprepop_node_pages((void *)addr, len, run->node_pages,
				   run->nr_nodes);
	if (!ret) {
		for (node = 0; node < run->nr_nodes; node++)
			run->present += run->node_pages[node];
		return 0;
	}
	if (ret == -ENOMEM)
		return ret;
	nr = resident_pages(addr, len);
	fprintf(stderr, "%s: %s%spage placement cannot be read here (%s): "
		"pages counted by mincore(2), not per node\n", prog,
		run->file ? run->name : "", run->file ? ": " : "",
		strerror(-ret));
	run->nr_nodes = 0;
	run->present = nr > 0 ? nr : 0;
	return 0;
}
