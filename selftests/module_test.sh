#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The module as an operator meets it: the device node, the counters in
# sysfs, the tracepoints, placement under numactl, and rmmod refused while
# the device is open and clean after. KTAP on stdout.
ko=${MEMPREPOP_KO:-/lib/modules/memprepop.ko}
stats=/sys/class/misc/memprepop/stats
tracing=/sys/kernel/tracing
. "$(dirname "$0")/ktap_helpers.sh"
ktap_need_device
ktap_need_cmd memprepop numactl

# "node N   P pages" from the tool's output
pages_on() { awk -v n="$1" '$1 == "node" && $2 == n { print $3 }'; }

echo "TAP version 13"
echo "1..8"

mode=$(stat -c %a /dev/memprepop 2>/dev/null)
[ "$mode" = 660 ]
ok $? "device node /dev/memprepop is mode 0660 (is $mode)"

calls0=$(cat $stats/calls)
bytes0=$(cat $stats/bytes_populated)
memprepop populate --size 64M > /dev/null
[ $(($(cat $stats/calls) - calls0)) -eq 1 ] &&
	[ $(($(cat $stats/bytes_populated) - bytes0)) -eq 67108864 ]
ok $? "sysfs counters count the call and its bytes"

if [ -d $tracing/events/memprepop ]; then
	echo > $tracing/trace
	echo 1 > $tracing/events/memprepop/enable
	memprepop populate --size 64M > /dev/null
	echo 0 > $tracing/events/memprepop/enable
	grep -q memprepop_populate_start $tracing/trace &&
		grep -q memprepop_chunk $tracing/trace &&
		grep -q 'memprepop_populate_end.*ret=0' $tracing/trace
	ok $? "tracepoints at call start, per chunk and at call end"
else
	ok 1 "tracepoints at call start, per chunk and at call end (no tracefs)"
fi

out=$(numactl --membind=1 memprepop populate --size 64M)
[ "$(echo "$out" | pages_on 1)" = 16384 ] &&
	[ "$(echo "$out" | pages_on 0)" = 0 ]
ok $? "numactl --membind=1: every page on node 1"

out=$(numactl --cpunodebind=1 --preferred=0 memprepop populate --size 64M)
[ "$(echo "$out" | pages_on 0)" = 16384 ]
ok $? "numactl --cpunodebind=1 --preferred=0: every page on node 0"

out=$(numactl --interleave=0,1 memprepop populate --size 64M)
p0=$(echo "$out" | pages_on 0)
p1=$(echo "$out" | pages_on 1)
# within a transparent huge page of half each
[ $((p0 + p1)) -eq 16384 ] && [ $((p0 - p1)) -le 512 ] &&
	[ $((p1 - p0)) -le 512 ]
ok $? "numactl --interleave=0,1: half on each node ($p0, $p1)"

exec 3< /dev/memprepop
rmmod memprepop 2> /dev/null
held=$?
exec 3<&-
[ $held != 0 ] && [ -e /dev/memprepop ]
ok $? "rmmod refused while /dev/memprepop is open"

rmmod memprepop && [ ! -e /dev/memprepop ] && insmod "$ko" &&
	[ -e /dev/memprepop ]
ok $? "rmmod clean once closed, insmod again"

ktap_finish
