// SPDX-License-Identifier: GPL-2.0
/*
 * A program built against the installed library through pkg-config, as a
 * VMM would be: populates 64 MiB and checks the result.
 */
#include <memprepop.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void)
{
	size_t len = 64 << 20;
	struct memprepop_result res = MEMPREPOP_RESULT_INIT;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err;

	if (p == MAP_FAILED)
		return 1;
	err = memprepop_populate(p, len, NULL, &res);
	printf("memprepop %s: %s, %s, %llu bytes\n", memprepop_version(),
	       err ? strerror(-err) : "ok", memprepop_backend_name(res.backend),
	       (unsigned long long)res.populated);
	return err || res.populated != len;
}
