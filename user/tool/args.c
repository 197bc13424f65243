// SPDX-License-Identifier: GPL-2.0
/* memprepop(1): sizes, counts and node lists from the command line. */
#include <errno.h>
#include <getopt.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/*
 * "512M" -> 536870912 (K, M, G, T are powers of 1024, also as KiB or KB);
 * 0 if malformed, or 2^63 or more: no mapping is that large, and a size
 * near 2^64 would wrap when rounded up to pages
 */
uint64_t parse_size(const char *s)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	uint64_t v;
	int shift;

	if (!*s || *s == '-')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	if (*end) {
		u = strchr(units, *end & ~0x20);
		if (!u || !*u || (end[1] && strcmp(end + 1, "iB") &&
				  strcmp(end + 1, "B")))
			return 0;
		for (shift = (u - units + 1) * 10; shift; shift -= 10) {
			if (v > UINT64_MAX >> 10)
				return 0;
			v <<= 10;
		}
	}
	return v >> 63 ? 0 : v;
}

/* --size: NULL, or "" once the refusal is said, with what is taken */
const char *size_option(const char *arg, uint64_t *size)
{
	*size = parse_size(arg);
	if (*size)
		return NULL;
	fprintf(stderr, "%s: bad size: '%s' (bytes as a whole number, or with "
		"K, M, G or T, powers of 1024: 4096, 512M, 4G, 2TiB; below "
		"2^63)\n", prog, arg);
	return "";
}

bool parse_uint(const char *s, unsigned int *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 1u << 20)
		return false;
	*out = v;
	return true;
}

/*
 * libnuma's own messages ("node argument 7 is out of range") would come
 * before the tool's: the tool says what was wrong itself
 */
void numa_warn(int num __attribute__((unused)),
	       char *fmt __attribute__((unused)), ...)
{
}

void numa_error(char *where __attribute__((unused)))
{
}

/* The bits of @mask up to @highest as ranges, "0-2,4"; "none" when empty */
void ranges_text(struct bitmask *mask, int highest, char *buf, size_t len)
{
	int bit, first = -1;
	size_t used = 0;

	buf[0] = 0;
	for (bit = 0; bit <= highest + 1 && used < len; bit++) {
		bool set = bit <= highest && numa_bitmask_isbitset(mask, bit);

		if (set && first < 0)
			first = bit;
		if (set || first < 0)
			continue;
		used += snprintf(buf + used, len - used, "%s%d", used ? "," : "",
				 first);
		if (bit - 1 > first && used < len)
			used += snprintf(buf + used, len - used, "-%d",
					 bit - 1);
		first = -1;
	}
	if (!buf[0])
		snprintf(buf, len, "none");
}

/* @mask as a node list, "0-2,4"; "none" when empty */
void nodes_text(struct bitmask *mask, char *buf, size_t len)
{
	ranges_text(mask, numa_max_node(), buf, len);
}

/* "all", or node numbers and ranges N-M (N <= M), comma-separated */
static bool node_list_well_formed(const char *s)
{
	unsigned long lo, hi;
	char *end;

	if (!strcmp(s, "all"))
		return true;
	for (;;) {
		if (*s < '0' || *s > '9')
			return false;
		lo = hi = strtoul(s, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				return false;
			hi = strtoul(end + 1, &end, 10);
		}
		if (lo > hi || (*end && *end != ','))
			return false;
		if (!*end)
			return true;
		s = end + 1;
	}
}

/*
 * 0, -ENOSYS without NUMA, -EINVAL for a node list that is not one,
 * -E2BIG for more than one node to --preferred, -ENOENT for a node that is
 * not there (or has no memory)
 */
int parse_placement(struct placement *pl, int mode, const char *nodes)
{
	if (numa_available() < 0)
		return -ENOSYS;
	if (!node_list_well_formed(nodes))
		return -EINVAL;
	if (mode == MPOL_PREFERRED && strspn(nodes, "0123456789") !=
	    strlen(nodes))
		return -E2BIG;
	if (pl->nodes)
		numa_bitmask_free(pl->nodes);
	pl->nodes = numa_parse_nodestring(nodes);
	if (!pl->nodes)
		return -ENOENT;
	if (!numa_bitmask_weight(pl->nodes))
		return -EINVAL;
	pl->mode = mode;
	pl->text = nodes;
	nodes_text(pl->nodes, pl->list, sizeof(pl->list));
	return 0;
}

/*
 * The options of the whole call, wherever they stand: --lock, --threads,
 * --borrow-cpus, --fallback, --json, --overcommit. True when @c was one; *bad set if its
 * value was.
 */
bool call_option(int c, const char *arg, struct memprepop_opts *opts,
		 struct run *run, const char **bad)
{
	switch (c) {
	case 'l':
		run->lock = true;
		opts->flags |= MEMPREPOP_OPT_LOCK;
		return true;
	case 't':
		if (!parse_uint(arg, &opts->max_threads) || !opts->max_threads)
			*bad = "thread count";
		return true;
	case 'f':
		opts->flags |= MEMPREPOP_OPT_FALLBACK;
		return true;
	case OPT_BORROW_CPUS:
		opts->flags |= MEMPREPOP_OPT_BORROW_CPUS;
		return true;
	case OPT_JSON:
		run->json = true;
		return true;
	case OPT_OVERCOMMIT:
		run->overcommit = true;
		return true;
	default:
		return false;
	}
}

/**
 * option_done() - the end of one option of populate or file
 * @c: the option, from getopt_long()
 * @ours: the subcommand's own switch took it
 * @bad: what was wrong with its value, or NULL
 * @opts: the call's options
 * @run: the report's
 * @usage: the subcommand's usage
 *
 * An option the subcommand did not take is the call's (call_option()),
 * --help, or unknown; a bad value is named in one line.
 *
 * Return: 0 to go on, 1 for --help, 2 for bad arguments.
 */
int option_done(int c, bool ours, const char *bad,
		struct memprepop_opts *opts, struct run *run,
		void (*usage)(FILE *f))
{
	if (!ours && c == 'h') {
		usage(stdout);
		return 1;
	}
	if (!ours && (c == '?' || c == ':')) {
		/* getopt_long() moved past it, with its value if glued to it */
		const char *opt = cmd_argv[optind - 1];

		if (c == ':')
			fprintf(stderr, "%s %s: option '%s' needs a value", prog,
				cmd_argv[0], opt);
		else if (optopt)
			fprintf(stderr, "%s %s: unknown option '-%c'", prog,
				cmd_argv[0], optopt);
		else
			fprintf(stderr, "%s %s: unknown option '%s'", prog,
				cmd_argv[0], opt);
		fprintf(stderr, " ('%s %s --help' lists them)\n", prog,
			cmd_argv[0]);
		return 2;
	}
	if (!ours && !call_option(c, optarg, opts, run, &bad)) {
		usage(stderr);
		return 2;
	}
	if (bad) {
		if (*bad)
			fprintf(stderr, "%s: bad %s: '%s'\n", prog, bad, optarg);
		return 2;
	}
	return 0;
}

/**
 * no_operand() - populate takes options only
 * @argc: the command's argument count
 * @argv: its arguments, getopt_long() done with them
 *
 * Return: 0, or 2 (bad arguments) after one line naming the first operand.
 */
int no_operand(int argc, char **argv)
{
	if (optind == argc)
		return 0;
	fprintf(stderr, "%s: %s takes no operand: '%s'\n", prog, cmd_argv[0],
		argv[optind]);
	return 2;
}

/* --membind, --interleave or --preferred: NULL, or what was wrong */
const char *placement_option(struct placement *pl, int opt,
			     const char *nodes)
{
	struct bitmask *mems;
	char have[64];
	int ret;

	if (pl->given)
		return "placement (one of --membind, --interleave, --preferred)";
	ret = parse_placement(pl, opt == OPT_MEMBIND ? MPOL_BIND :
			      opt == OPT_INTERLEAVE ? MPOL_INTERLEAVE :
			      MPOL_PREFERRED, nodes);
	pl->given = true;
	if (!ret)
		return NULL;
	if (ret == -ENOSYS)
		return "node list (no NUMA)";
	if (ret == -E2BIG) {
		fprintf(stderr, "%s: --preferred takes one node: '%s'\n", prog,
			nodes);
		return "";
	}
	if (ret == -EINVAL) {
		fprintf(stderr, "%s: bad node list: '%s' (node numbers and "
			"ranges, comma-separated: 0,2-3; or all)\n", prog,
			nodes);
		return "";
	}
	mems = numa_get_mems_allowed();
	if (mems && numa_bitmask_weight(mems))
		nodes_text(mems, have, sizeof(have));
	else
		snprintf(have, sizeof(have), "unknown");
	if (mems)
		numa_bitmask_free(mems);
	fprintf(stderr, "%s: no node %s here that this process may use: "
		"nodes with memory are %s\n", prog, nodes, have);
	/* Said: option_done() adds nothing */
	return "";
}

/* mbind() the mapping: before any page is touched, so nothing moves */
int apply_placement(const struct placement *pl, void *addr, size_t len)
{
	if (pl->mode == MPOL_DEFAULT)
		return 0;
	if (mbind(addr, len, pl->mode, pl->nodes->maskp, pl->nodes->size + 1,
		  0))
		return -errno;
	return 0;
}
