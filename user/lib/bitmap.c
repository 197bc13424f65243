// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libmemprepop: bitmaps of pages (a balloon's deflate, virtio-mem's plug, a
 * migration destination's dirty map) as ranges: each run of set bits one
 * range, all of them one call.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define MPL_LONG_BITS	(CHAR_BIT * sizeof(unsigned long))

/* The first bit from @at that equals @set, or @nbits */
static size_t mpl_find_bit(const unsigned long *bitmap, size_t nbits,
			   size_t at, bool set)
{
	while (at < nbits) {
		unsigned long word = bitmap[at / MPL_LONG_BITS];

		if (!set)
			word = ~word;
		word &= ~0UL << (at % MPL_LONG_BITS);
		if (word) {
			at = at / MPL_LONG_BITS * MPL_LONG_BITS +
			     __builtin_ctzl(word);
			return at < nbits ? at : nbits;
		}
		at = (at / MPL_LONG_BITS + 1) * MPL_LONG_BITS;
	}
	return nbits;
}

ssize_t memprepop_bitmap_ranges(const void *base, size_t page_size,
				const unsigned long *bitmap, size_t nbits,
				struct memprepop_range *ranges, size_t max)
{
	size_t sys_page = sysconf(_SC_PAGESIZE), at = 0;
	uintptr_t addr = (uintptr_t)base;
	ssize_t runs = 0;

	if (addr % sys_page || !page_size || page_size % sys_page)
		return -EINVAL;
	/* The last bit's page must end within the address space */
	if (nbits && (nbits > (UINTPTR_MAX - addr) / page_size))
		return -EINVAL;
	for (;;) {
		size_t first = mpl_find_bit(bitmap, nbits, at, true), end;

		if (first == nbits)
			return runs;
		end = mpl_find_bit(bitmap, nbits, first, false);
		if ((size_t)runs < max)
			ranges[runs] = (struct memprepop_range){
				.addr = addr + first * page_size,
				.len = (end - first) * page_size,
			};
		runs++;
		at = end;
	}
}

int memprepop_populate_bitmap(void *base, size_t page_size,
			      const unsigned long *bitmap, size_t nbits,
			      const struct memprepop_opts *opts,
			      struct memprepop_result *res)
{
	struct memprepop_range *ranges;
	ssize_t n;
	int ret;

	n = memprepop_bitmap_ranges(base, page_size, bitmap, nbits, NULL, 0);
	if (n < 0)
		return n;
	if (n > UINT_MAX)
		return -E2BIG;
	ranges = calloc(n ? n : 1, sizeof(*ranges));
	if (!ranges)
		return -ENOMEM;
	memprepop_bitmap_ranges(base, page_size, bitmap, nbits, ranges, n);
	ret = memprepop_populate_ranges(ranges, n, opts, res);
	free(ranges);
	return ret;
}
