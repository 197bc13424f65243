// SPDX-License-Identifier: GPL-2.0
/*
 * __folio_batch_release(), exported, in place of __pagevec_release() (6.5,
 * when the pagevec became a folio batch), from linux/pagevec.h; a kernel
 * whose folio batch has a header of its own (folio_batch_h.c) has it there
 */
#include <linux/pagevec.h>

void (*mpp_probe)(struct folio_batch *fbatch) = __folio_batch_release;
