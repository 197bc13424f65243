#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo, small: it runs to its end, shows placement and locking for both
# backends, and claims a difference in speed only when the runs do not
# overlap (a ratio of medians from runs within each other's spread is the
# noise of a 2-vCPU guest). KTAP on stdout.
. "$(dirname "$0")/ktap_helpers.sh"
demo=${MEMPREPOP_DEMO:-/usr/share/memprepop/demo}
ktap_need_device
ktap_need_cmd memprepop memprepop-example-vmm
[ -x "$demo" ] || ktap_skip_all "no demo at $demo (the test VM installs it)"
echo "TAP version 13"
echo "1..4"

out=$("$demo" 64M 3 2>&1)
status=$?
echo "$out" | sed 's/^/# /'
ok $status "the demo runs to its end"

# 1.: "backend node0 node1 locked workers", a row for each backend
rows=$(echo "$out" | awk '$1 == "module" || $1 == "fallback"' |
	awk 'NF == 5 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $4 == "yes"')
[ "$(echo "$rows" | awk '$1 == "module"' | wc -l)" = 1 ] &&
	[ "$(echo "$rows" | awk '$1 == "fallback"' | wc -l)" = 1 ] &&
	[ "$(echo "$rows" | awk '$2 > 0 && $3 > 0' | wc -l)" = 2 ]
ok $? "placement: pages on both nodes and locked, for each backend"

# 2.: both files on their nodes, all pages present
[ "$(echo "$out" | grep -c 'demo-node[01]: .*present')" = 2 ]
ok $? "two tmpfs files populated in one call"

# 4.: "backend fastest median slowest", then the verdict
# shellcheck disable=SC2046 # the four numbers, split
set -- $(echo "$out" | awk '($1 == "module" || $1 == "fallback") &&
	NF == 4 && $2 ~ /s$/ { sub(/s$/, "", $2); sub(/s$/, "", $4);
	print $2, $4 }')
if [ $# = 4 ]; then
	overlap=$(awk -v ml="$1" -v mh="$2" -v fl="$3" -v fh="$4" \
		'BEGIN { print (ml <= fh && fl <= mh) ? 1 : 0 }')
	if [ "$overlap" = 1 ]; then
		echo "$out" | grep -q "runs overlap" &&
			! echo "$out" | grep -q "Medians:"
	else
		echo "$out" | grep -q "Medians: .* do not" &&
			! echo "$out" | grep -q "runs overlap"
	fi
	ok $? "speed: a ratio only where the runs do not overlap"
else
	echo "# no speed table of two rows"
	ok 1 "speed: a ratio only where the runs do not overlap"
fi

ktap_finish
