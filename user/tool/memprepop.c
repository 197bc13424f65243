// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop: the command-line tool. Maps memory, populates it through
 * libmemprepop, verifies where the pages went and reports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <numa.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <memprepop.h>

static const char *prog = "memprepop";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s <command> [options]\n"
		"\n"
		"commands:\n"
		"  populate  map anonymous memory, populate it, report\n"
		"  info      show the backend and what the kernel side supports\n"
		"\n"
		"'%s <command> --help' describes a command.\n", prog, prog);
}

static void usage_populate(FILE *f)
{
	fprintf(f,
		"usage: %s populate --size SIZE [options]\n"
		"\n"
		"Maps SIZE bytes of private anonymous memory, populates it and\n"
		"prints size, seconds, GB/s, backend and pages per NUMA node.\n"
		"\n"
		"  -s, --size SIZE    bytes, with K, M, G or T (1024-based)\n"
		"  -l, --lock         lock the memory (mlock2 MLOCK_ONFAULT)\n"
		"  -t, --threads N    at most N threads or kernel workers\n"
		"  -f, --fallback     do not use the kernel module\n"
		"  -h, --help         this text\n", prog);
}

/* "512M" -> 536870912; 0 on a malformed or overflowing size */
static uint64_t parse_size(const char *s)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	if (*end) {
		u = strchr(units, *end & ~0x20);
		if (!u || !*u || (end[1] && strcmp(end + 1, "iB") &&
				  strcmp(end + 1, "B")))
			return 0;
		for (int shift = (u - units + 1) * 10; shift; shift -= 10) {
			if (v > UINT64_MAX >> 10)
				return 0;
			v <<= 10;
		}
	}
	return v;
}

static int cmd_populate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "lock", no_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "fallback", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t counts[MEMPREPOP_MAX_NODES];
	struct memprepop_opts opts = { 0 };
	struct memprepop_result res;
	uint64_t size = 0;
	double secs;
	void *mem;
	int c, ret, node;

	while ((c = getopt_long(argc, argv, "s:lt:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			size = parse_size(optarg);
			if (!size) {
				fprintf(stderr, "%s: bad size '%s'\n", prog,
					optarg);
				return 2;
			}
			break;
		case 'l':
			opts.flags |= MEMPREPOP_F_LOCK;
			break;
		case 't':
			opts.max_threads = strtoul(optarg, NULL, 10);
			if (!opts.max_threads) {
				fprintf(stderr, "%s: bad thread count '%s'\n",
					prog, optarg);
				return 2;
			}
			break;
		case 'f':
			opts.lib_flags |= MEMPREPOP_OPT_FALLBACK;
			break;
		case 'h':
			usage_populate(stdout);
			return 0;
		default:
			usage_populate(stderr);
			return 2;
		}
	}
	if (!size || optind != argc) {
		usage_populate(stderr);
		return 2;
	}

	mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "%s: cannot map %" PRIu64 " bytes: %s\n", prog,
			size, strerror(errno));
		return 1;
	}

	ret = memprepop_populate(mem, size, &opts, &res);
	if (ret) {
		fprintf(stderr,
			"%s: cannot populate %p: %s (%" PRIu64 " of %" PRIu64
			" bytes populated, backend %s)\n", prog, mem,
			strerror(-ret), res.populated, size,
			memprepop_backend_name(res.backend));
		return 1;
	}

	secs = res.nsecs / 1e9;
	printf("size      %" PRIu64 " bytes (%.2f GiB)\n", size,
	       size / (double)(1ull << 30));
	printf("seconds   %.3f\n", secs);
	printf("GB/s      %.2f\n", secs > 0 ? size / secs / 1e9 : 0.0);
	printf("backend   %s\n", memprepop_backend_name(res.backend));
	printf("workers   %u\n", res.workers);
	printf("locked    %s\n", opts.flags & MEMPREPOP_F_LOCK ? "yes" : "no");

	ret = memprepop_node_pages(mem, size, counts, MEMPREPOP_MAX_NODES);
	if (ret) {
		fprintf(stderr, "%s: cannot read page placement: %s\n", prog,
			strerror(-ret));
		return 1;
	}
	for (node = 0; node < MEMPREPOP_MAX_NODES; node++)
		if (counts[node] || (numa_available() >= 0 &&
				     node <= numa_max_node()))
			printf("node %-4d %" PRIu64 " pages\n", node,
			       counts[node]);
	munmap(mem, size);
	return 0;
}

static int cmd_info(int argc, char **argv)
{
	struct memprepop_info info;
	int ret;

	if (argc > 1) {
		bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");

		fprintf(help ? stdout : stderr,
			"usage: %s info\n\nShows the backend in use and, "
			"with the module, what it supports.\n", prog);
		return help ? 0 : 2;
	}
	printf("library   %s\n", memprepop_version());
	printf("backend   %s\n", memprepop_backend_name(memprepop_backend()));
	ret = memprepop_query(&info);
	if (ret == -ENODEV) {
		printf("module    not loaded\n");
		return 0;
	}
	if (ret) {
		fprintf(stderr, "%s: cannot query %s: %s\n", prog,
			MEMPREPOP_DEVICE, strerror(-ret));
		return 1;
	}
	printf("abi       %u\n", info.abi_version);
	printf("flags     0x%" PRIx64 "\n", (uint64_t)info.flags);
	printf("nodes     %u online (mask 0x%" PRIx64 ")\n",
	       info.nr_online_nodes, (uint64_t)info.online_nodes);
	printf("workers   %u\n", info.max_workers);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "populate"))
		return cmd_populate(argc - 1, argv + 1);
	if (!strcmp(argv[1], "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[1]);
	usage(stderr);
	return 2;
}
