// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop(1): populate memory through libmemprepop, as an operator or a
 * benchmark would, and tell what happened and where the pages went.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tool.h"

const char *prog = "memprepop";
char **cmd_argv;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s <command> [options]\n"
		"\n"
		"commands:\n"
		"  populate  map memory, populate it, verify and report\n"
		"  file      pre-fault a hugetlbfs or tmpfs file for a VMM\n"
		"  info      the backend, the module, nodes and hugepage pools\n"
		"\n"
		"'%s <command> --help' describes a command; '%s --version' "
		"prints the\nlibrary's version.\n", prog, prog, prog);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "populate", cmd_populate },
		{ "file", cmd_file },
		{ "info", cmd_info },
	};

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	/* The subcommands say what was wrong with an option themselves */
	opterr = 0;
	for (unsigned int i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (!strcmp(argv[1], cmds[i].name)) {
			cmd_argv = argv + 1;
			return cmds[i].fn(argc - 1, argv + 1);
		}
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("%s %s\n", prog, memprepop_version());
		return 0;
	}
	fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[1]);
	usage(stderr);
	return 2;
}
