// SPDX-License-Identifier: GPL-2.0
/*
 * A program built against the installed library through pkg-config, as a
 * VMM would be: populates 64 MiB in one call and 64 MiB more as two ranges
 * (a LIBMEMPREPOP_1.1 symbol) and checks the results.
 */
#include <memprepop.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void)
{
	size_t len = 64 << 20;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	struct memprepop_range r[2];
	char *p = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err;

	if (p == MAP_FAILED)
		return 1;
	err = memprepop_populate(p, len, NULL, &res);
	printf("memprepop %s: %s, %s, %llu bytes\n", memprepop_version(),
	       err ? strerror(-err) : "ok", memprepop_backend_name(res.backend),
	       (unsigned long long)res.populated);
	if (err || res.populated != len)
		return 1;
	memset(r, 0, sizeof(r));
	r[0].addr = (uintptr_t)p + len;
	r[0].len = len / 2;
	r[1].addr = (uintptr_t)p + len + len / 2;
	r[1].len = len / 2;
	err = memprepop_populate_ranges(r, 2, NULL, &res);
	printf("two ranges: %s, %llu bytes\n", err ? strerror(-err) : "ok",
	       (unsigned long long)res.populated);
	return err || res.populated != len;
}
