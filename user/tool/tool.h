/* SPDX-License-Identifier: GPL-2.0 */
/* memprepop(1): what the subcommands share. */
#ifndef MEMPREPOP_TOOL_H
#define MEMPREPOP_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <memprepop.h>

extern const char *prog;
/* The subcommand's arguments, for messages about them */
extern char **cmd_argv;

/* args.c */
uint64_t parse_size(const char *s);
const char *size_option(const char *arg, uint64_t *size);
bool parse_uint(const char *s, unsigned int *out);

/* How the memory is to be placed: --membind, --interleave, --preferred */
struct placement {
	int mode;		/* MPOL_*, MPOL_DEFAULT for none */
	struct bitmask *nodes;
	const char *text;	/* as given, for the report */
	char list[64];		/* the nodes it names, as "0-2,4" */
	bool given;		/* by an option of this scope (a file's own) */
};

struct run;

/* Long options without a short one, shared by populate and file */
enum {
	OPT_MEMBIND = 256, OPT_INTERLEAVE, OPT_PREFERRED, OPT_JSON,
	OPT_HUGETLB, OPT_SHARED, OPT_BORROW_CPUS, OPT_OVERCOMMIT, OPT_THP,
};

int parse_placement(struct placement *pl, int mode, const char *nodes);
const char *placement_option(struct placement *pl, int opt,
			     const char *nodes);
int apply_placement(const struct placement *pl, void *addr, size_t len);
void ranges_text(struct bitmask *mask, int highest, char *buf, size_t len);
void nodes_text(struct bitmask *mask, char *buf, size_t len);

/* args.c: the call's options that populate and file share */
bool call_option(int c, const char *arg, struct memprepop_opts *opts,
		 struct run *run, const char **bad);
int option_done(int c, bool ours, const char *bad,
		struct memprepop_opts *opts, struct run *run,
		void (*usage)(FILE *f));
int no_operand(int argc, char **argv);

/* populate.c: the help text of the options populate and file share */
extern const char placement_help[];

/*
 * A run: what one command populates (the memory of populate, a file of
 * file, or the totals of all files) and, afterwards, what happened to it
 */
struct run {
	const char *what;	/* "anonymous", "shared", a file's path */
	const char *name;	/* @what as printed: control bytes escaped */
	bool file;		/* @what is a path */
	uint64_t size;
	size_t page_size;	/* of the mapping: 4 KiB, 2 MiB, 1 GiB */
	bool lock, json, progress, overcommit, thp;
	bool locked;		/* the outcome of lock, afterwards */
	uint64_t thp_bytes;	/* in transparent huge pages, afterwards */
	const struct placement *placement;
	struct memprepop_result res;
	uint64_t *node_pages;	/* base pages on each node, afterwards */
	unsigned int nr_nodes;	/* its entries: every possible node */
	uint64_t present;	/* base pages found present afterwards */
	uint64_t counted;	/* in these bytes from its start */
	uint64_t populated;	/* bytes, as its range reported them */
	int error;		/* its range's: 0 or -errno */
};

/* report.c */
void progress_bar_start(void);
int progress_bar(uint64_t done, uint64_t total, void *arg);
void progress_bar_end(void);
int highest_node(void);
bool hugetlb_pool(int node, size_t page_size, long *free_pages, long *nr);
void hugetlb_pools(FILE *f, size_t page_size, const char *sep);
void json_string(const char *s);
char *printable(const char *s);
void report(const struct run *run);
void report_files(const struct run *const *files, unsigned int n,
		  const struct run *all);
void explain_failure(const struct run *run, int err);
void size_text(char *buf, size_t n, uint64_t bytes);
void mapping_state(struct run *run, const void *addr);
int count_present(struct run *run, const void *addr, uint64_t len);

/* cancel.c: SIGINT, SIGTERM and SIGHUP cancel the command */
void catch_signals(void (*undo)(void));
int cancelled(void);
int cancelled_status(void);
void cancelled_line(uint64_t populated, uint64_t size);

/* room.c */
uint64_t room_for(const struct placement *pl, size_t page_size, bool swap,
		  char *nodes, size_t len);
int check_room(const struct run *run, uint64_t need);

/* subcommands */
int cmd_populate(int argc, char **argv);
int cmd_populate_pid(int argc, char **argv);
int cmd_file(int argc, char **argv);
int cmd_info(int argc, char **argv);

#endif /* MEMPREPOP_TOOL_H */
