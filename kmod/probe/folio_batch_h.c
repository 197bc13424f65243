// SPDX-License-Identifier: GPL-2.0
/* The folio batch in a header of its own (linux/pagevec.h is gone by 7.3) */
#include <linux/folio_batch.h>
