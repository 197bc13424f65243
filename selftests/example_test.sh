#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The VMM-style example: guest RAM per guest node, bound, populated and
# locked, every page on its host node. KTAP on stdout.
. "$(dirname "$0")/ktap_helpers.sh"
ktap_need_device
ktap_need_cmd memprepop-example-vmm
echo "TAP version 13"
echo "1..3"

out=$(memprepop-example-vmm 96 2 2>/dev/null)
status=$?
echo "$out" | sed 's/^/# /'
[ $status = 0 ] && [ "$(echo "$out" |
	grep -c '100.0% of pages on node [01], \(locked\|never swapped\)$')" = 2 ]
ok $? "two guest nodes of hugetlb memory, each wholly on its host node, locked"

out=$(memprepop-example-vmm 1024 2 2>/dev/null)
status=$?
echo "$out" | sed 's/^/# /'
[ $status = 0 ] && echo "$out" | grep -q "shmem.*, locked$"
ok $? "more than the hugetlb pool: shmem, still placed and locked"

out=$(memprepop-example-vmm 96 2 fallback 2>/dev/null)
status=$?
echo "$out" | sed 's/^/# /'
[ $status = 0 ] && [ "$(echo "$out" |
	grep -c '100.0% of pages on node [01], \(locked\|never swapped\)$')" = 2 ]
ok $? "the same through the library's fallback, in the background too"

ktap_finish
