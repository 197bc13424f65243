// SPDX-License-Identifier: GPL-2.0
/* memprepop populate: map memory, populate it, verify and report. */
#include <errno.h>
#include <getopt.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tool.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT	26
#endif

static const struct option populate_opts[] = {
	{ "size", required_argument, NULL, 's' },
	{ "lock", no_argument, NULL, 'l' },
	{ "threads", required_argument, NULL, 't' },
	{ "fallback", no_argument, NULL, 'f' },
	{ "borrow-cpus", no_argument, NULL, OPT_BORROW_CPUS },
	{ "hugetlb", required_argument, NULL, OPT_HUGETLB },
	{ "shared", no_argument, NULL, OPT_SHARED },
	{ "membind", required_argument, NULL, OPT_MEMBIND },
	{ "node", required_argument, NULL, OPT_MEMBIND },
	{ "interleave", required_argument, NULL, OPT_INTERLEAVE },
	{ "preferred", required_argument, NULL, OPT_PREFERRED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "thp", no_argument, NULL, OPT_THP },
	{ "overcommit", no_argument, NULL, OPT_OVERCOMMIT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const char placement_help[] =
	"      --membind N,M     only on these nodes\n"
	"      --interleave N,M  interleaved over these nodes ('all': all)\n"
	"      --preferred N     on node N while it has memory\n"
	"  -t, --threads N       at most N threads or kernel workers\n"
	"      --borrow-cpus     reach N with idle CPUs of other nodes "
	"too (placement\n"
	"                        unchanged)\n"
	"  -f, --fallback        do not use the kernel module\n"
	"      --overcommit      go on with a size the nodes cannot give "
	"(refused\n"
	"                        otherwise)\n"
	"      --json            one JSON object on stdout, no progress bar\n"
	"  -h, --help            this text\n";

static void usage_populate(FILE *f)
{
	fprintf(f,
		"usage: %s populate --size SIZE [options]\n"
		"       %s populate --pid PID [options] (--pid --help)\n"
		"\n"
		"Maps SIZE bytes of anonymous memory, populates it, checks "
		"that every page\nis present and prints size, seconds, GB/s, "
		"backend, workers and pages\nper NUMA node.\n"
		"\n"
		"  -s, --size SIZE       bytes, or with K, M, G, T (powers of "
		"1024)\n"
		"      --hugetlb 2M|1G   hugetlb pages of that size\n"
		"      --shared          a shared mapping (shmem)\n"
		"      --thp             transparent huge pages "
		"(MADV_HUGEPAGE)\n"
		"  -l, --lock            lock it (mlock2 MLOCK_ONFAULT: each "
		"page locked\n"
		"                        where its policy placed it)\n"
		"%s", prog, prog, placement_help);
}

struct args {
	struct run run;
	struct placement placement;
	struct memprepop_opts opts;
	int map_flags;
};

/* 0 to go on, 1 for --help, 2 for bad arguments */
static int parse_args(int argc, char **argv, struct args *a)
{
	const char *bad = NULL;
	int c;

	memset(a, 0, sizeof(*a));
	a->opts = (struct memprepop_opts)MEMPREPOP_OPTS_INIT;
	a->run.res = (struct memprepop_result)MEMPREPOP_RESULT_INIT;
	a->run.placement = &a->placement;
	a->run.page_size = sysconf(_SC_PAGESIZE);
	a->map_flags = MAP_PRIVATE | MAP_ANONYMOUS;
	a->opts.progress = progress_bar;
	a->opts.progress_arg = &a->run;

	while ((c = getopt_long(argc, argv, ":s:lt:fh", populate_opts,
				NULL)) != -1) {
		bool ours = true;
		int ret;

		switch (c) {
		case 's':
			bad = size_option(optarg, &a->run.size);
			break;
		case OPT_HUGETLB:
			if (!strcmp(optarg, "2M")) {
				a->run.page_size = 2 << 20;
				a->map_flags |= MAP_HUGETLB |
						(21 << MAP_HUGE_SHIFT);
			} else if (!strcmp(optarg, "1G")) {
				a->run.page_size = 1 << 30;
				a->map_flags |= MAP_HUGETLB |
						(30 << MAP_HUGE_SHIFT);
			} else {
				bad = "hugetlb size (2M or 1G)";
			}
			break;
		case OPT_SHARED:
			a->map_flags = (a->map_flags & ~MAP_PRIVATE) |
				       MAP_SHARED;
			break;
		case OPT_THP:
			a->run.thp = true;
			break;
		case OPT_MEMBIND:
		case OPT_INTERLEAVE:
		case OPT_PREFERRED:
			bad = placement_option(&a->placement, c, optarg);
			break;
		default:
			ours = false;
			break;
		}
		ret = option_done(c, ours, bad, &a->opts, &a->run,
				  usage_populate);
		if (ret)
			return ret;
	}
	if (no_operand(argc, argv))
		return 2;
	if (!a->run.size) {
		fprintf(stderr, "%s: populate needs --size\n", prog);
		return 2;
	}
	if (a->run.thp && (a->map_flags & MAP_HUGETLB)) {
		fprintf(stderr, "%s: --thp and --hugetlb exclude each other\n",
			prog);
		return 2;
	}
	a->run.progress = !a->run.json && isatty(STDERR_FILENO);
	return 0;
}

/* Populates the mapping, verifies it and reports; the exit status */
static int populate_and_report(struct args *a, void *mem)
{
	uint64_t pages = a->run.size / sysconf(_SC_PAGESIZE);
	int ret;

	ret = apply_placement(&a->placement, mem, a->run.size);
	if (ret) {
		fprintf(stderr, "%s: cannot set the memory policy: %s\n", prog,
			strerror(-ret));
		return 1;
	}
	if (a->run.thp && madvise(mem, a->run.size, MADV_HUGEPAGE)) {
		fprintf(stderr, "%s: cannot use transparent huge pages: %s\n",
			prog, strerror(errno));
		return 1;
	}
	catch_signals(NULL);
	progress_bar_start();
	a->run.error = memprepop_populate(mem, a->run.size, &a->opts,
					  &a->run.res);
	progress_bar_end();
	mapping_state(&a->run, mem);
	if (count_present(&a->run, mem, a->run.error ? a->run.res.populated :
			  a->run.size)) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	/* What is there, also after a failure (JSON with its error) */
	report(&a->run);
	if (cancelled()) {
		cancelled_line(a->run.res.populated, a->run.size);
		fprintf(stderr, "\n");
		return cancelled_status();
	}
	if (a->run.error) {
		explain_failure(&a->run, a->run.error);
		return 1;
	}
	if (a->run.present != pages) {
		fprintf(stderr, "%s: only %llu of %llu pages are present\n",
			prog, (unsigned long long)a->run.present,
			(unsigned long long)pages);
		return 1;
	}
	return 0;
}

int cmd_populate(int argc, char **argv)
{
	struct args a;
	void *mem;
	int ret;
	int i;

	/* Another process's memory: a command of its own (remote.c) */
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--pid") || !strncmp(argv[i], "--pid=", 6))
			return cmd_populate_pid(argc, argv);

	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret == 1 ? 0 : ret;
	/* Whole pages of the mapping's size */
	a.run.size = (a.run.size + a.run.page_size - 1) & ~(a.run.page_size - 1);
	a.run.name = a.run.what = a.map_flags & MAP_SHARED ? "shared" :
		     a.map_flags & MAP_HUGETLB ? "hugetlb" : "anonymous";
	ret = check_room(&a.run, a.run.size);
	if (ret)
		return ret;

	mem = mmap(NULL, a.run.size, PROT_READ | PROT_WRITE,
		   a.map_flags | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "%s: cannot map %llu bytes: %s\n", prog,
			(unsigned long long)a.run.size, strerror(errno));
		return 1;
	}
	ret = populate_and_report(&a, mem);
	munmap(mem, a.run.size);
	free(a.run.node_pages);
	return ret;
}
