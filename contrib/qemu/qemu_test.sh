#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# QEMU with contrib/qemu's series against Debian's stock QEMU of the same
# version, both run the same way: `-machine none` with one memory backend
# per NUMA node (bound to it, or all to node 0 on a host with one node),
# preallocated, locked (-overcommit mem-lock=on). Everything is read from
# outside the QEMU process, as an operator would: /proc/PID/numa_maps for
# the pages per node, VmLck, the maps for libmemprepop, the module's
# counters, the workers' allowed CPUs, the exit status and messages.
# KTAP on stdout.
#
# usage: qemu_test.sh PATCHED_QEMU [STOCK_QEMU]
#
# Tests 19-22 are for QEMU 10.0 and later (libvirt's thread contexts with
# asynchronous preallocation, mem-lock=on-fault), skipped for older ones;
# 23 for a series given MEMPREPOP_QEMU_METHOD (the machine's default
# method, which libvirt can pass on); 24-25 need a free 1 GiB hugetlb page
# (the test VM allocates one at boot).
#
# MEMPREPOP_QEMU_WITHOUT=1: PATCHED_QEMU is the series built without
# libmemprepop, which must behave as stock QEMU does: the same results, no
# libmemprepop mapped, the module never called.
# MEMPREPOP_QEMU_MIB: MiB per backend (default 256). TCG's code buffer is
# kept at 16 MiB: without KVM it would be 1 GiB, which mem-lock=on locks too.
# MEMPREPOP_QEMU_SANDBOX: the -sandbox every QEMU runs under; default
# libvirt's (seccomp refuses sched_setaffinity and the scheduler calls once
# the machine is set up, spawning, and setuid), "off" for none.
# MEMPREPOP_QEMU_METHOD: what the patched QEMU's memory backends are given
# to preallocate through libmemprepop, for a series that asks
# (prealloc-method=memprepop for 10.x); the machine's own RAM (-m) takes
# no backend option, so -mem-prealloc stays QEMU's own there (but for 23).
#
# The backends' arguments are split into words on purpose:
# shellcheck disable=SC2046
patched=$1
stock=${2:-qemu-system-x86_64}
mib=${MEMPREPOP_QEMU_MIB:-256}
sandbox=${MEMPREPOP_QEMU_SANDBOX:-on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny}
[ "$sandbox" != off ] || sandbox=
method=${MEMPREPOP_QEMU_METHOD:+,$MEMPREPOP_QEMU_METHOD}
here=$(cd "$(dirname "$0")" && pwd)
for h in "$here/ktap_helpers.sh" "$here/../../selftests/ktap_helpers.sh"; do
	# shellcheck source=../../selftests/ktap_helpers.sh
	[ -e "$h" ] && . "$h" && break
done
stats=/sys/class/misc/memprepop/stats
# What the QEMU under test is called, and the module calls it makes per
# preallocation (none without libmemprepop)
name=patched mpp_calls=1
if [ -n "${MEMPREPOP_QEMU_WITHOUT:-}" ]; then
	name="series without libmemprepop" mpp_calls=0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# "quit" to a QEMU that already exited must not kill the test
trap '' PIPE

# Nodes with memory, as QEMU's host-nodes takes them
nodes=$(cd /sys/devices/system/node && for n in node[0-9]*; do
	grep -q 'MemTotal: *[1-9]' "$n/meminfo" && echo "${n#node}"
done)
nr_nodes=$(echo "$nodes" | wc -l)
# Two backends, as a 2-node guest has them: on nodes 0 and 1 where there are
# two, both on the first node otherwise
node_of() {
	if [ "$nr_nodes" -ge 2 ]; then
		echo "$nodes" | sed -n "$(($1 + 1))p"
	else
		echo "$nodes" | head -n 1
	fi
}
backends() {	# PRE ('on'/'off') THREADS [EXTRA]: the -object arguments
		# for $bin (as), an @ in EXTRA the backend's index
	for i in 0 1; do
		printf -- '-object memory-backend-ram,id=m%s,size=%sM,' "$i" "$mib"
		printf 'host-nodes=%s,policy=bind,prealloc=%s,' "$(node_of $i)" "$1"
		printf 'prealloc-threads=%s%s%s ' "$2" "$(echo "${3:-}" |
			sed "s/@/$i/g")" "$opt"
	done
}

# start BIN ARGS...: QEMU with its monitor on a pipe, until the monitor
# answers "info status" (every backend created and preallocated by then);
# $pid is the process, fd 3 its monitor. Fails if QEMU exits first.
start() {
	bin=$1
	shift
	rm -f "$tmp/in"
	mkfifo "$tmp/in"
	: > "$tmp/out"
	# shellcheck disable=SC2086 # the arguments are split on purpose
	"$bin" -machine none -nodefaults -display none -monitor stdio \
		-accel tcg,tb-size=16 ${sandbox:+-sandbox "$sandbox"} "$@" \
		< "$tmp/in" > "$tmp/out" 2> "$tmp/err" &
	pid=$!
	exec 3> "$tmp/in"
	echo "info status" >&3
	i=0
	while ! grep -q "VM status" "$tmp/out"; do
		kill -0 "$pid" 2> /dev/null || { stop; return 1; }
		i=$((i + 1))
		[ $i -lt 6000 ] || { stop; return 1; }
		sleep 0.1
	done
}
# stop: quit QEMU; $status is its exit status
stop() {
	echo quit >&3 2> /dev/null
	exec 3>&-
	wait "$pid"
	status=$?
}
# hmp COMMAND: a monitor command, answered before the next prompt's reply
hmp() {
	n=$(grep -c "VM status" "$tmp/out")
	echo "$1" >&3
	echo "info status" >&3
	i=0
	while [ "$(grep -c "VM status" "$tmp/out")" -le "$n" ] && [ $i -lt 6000 ]; do
		i=$((i + 1))
		sleep 0.1
	done
}

# Pages (of 4 KiB) of the bound mappings on node N: "bind:NODE N<N>=..."
bound_pages() {	# BIND_NODE ON_NODE
	awk -v b="bind:$1" -v n="N$2" '$2 == b {
		k = 4; for (i = 3; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) {
			split($i, a, "="); k = a[2] }
		for (i = 3; i <= NF; i++) { split($i, a, "=");
			if (a[1] == n) s += a[2] * k / 4 } }
		END { print s + 0 }' "/proc/$pid/numa_maps"
}
# as Q ("patched" or "stock"): $bin is that QEMU, $label what it is called,
# $opt what its memory backends are given
as() {
	if [ "$1" = patched ]; then
		bin=$patched label=$name opt=$method
	else
		bin=$stock label=stock opt=
	fi
}
vmlck_kb() { awk '/^VmLck:/ { print $2 }' "/proc/$pid/status"; }
stat_of() { cat "$stats/$1" 2> /dev/null || echo 0; }

# placed WHAT: each backend's pages all on its own node, none elsewhere
placed() {
	want=$((2 * mib * 256))
	if [ "$nr_nodes" -ge 2 ]; then
		want=$((mib * 256))
	fi
	good=0
	for i in 0 1; do
		nd=$(node_of $i)
		got=$(bound_pages "$nd" "$nd")
		[ "$got" = "$want" ] || good=1
		for o in $nodes; do
			[ "$o" = "$nd" ] && continue
			[ "$(bound_pages "$nd" "$o")" = 0 ] || good=1
		done
		echo "# $1: backend $i bound to node $nd: $got of $want pages there"
	done
	return $good
}

echo "TAP version 13"
if [ ! -x "$patched" ]; then
	echo "1..0 # SKIP no patched QEMU at '$patched'"
	exit 4
fi
command -v "$stock" > /dev/null || { echo "1..0 # SKIP no $stock"; exit 4; }
echo "1..25"
has_module=0
[ -e /dev/memprepop ] && [ -d "$stats" ] && has_module=1
echo "# nodes with memory: $(echo "$nodes" | tr '\n' ' ')module: $has_module; $mib MiB per backend; numa_balancing: $(cat /proc/sys/kernel/numa_balancing 2> /dev/null || echo -)"
given=${method#,}
qversion() { "$1" --version | sed -n 's/.*version \([^ ]*\).*/\1/p' | head -n 1; }
echo "# $name: QEMU $(qversion "$patched"); stock: QEMU $(qversion "$stock") ($stock)"
echo "# -sandbox ${sandbox:-off}; the patched QEMU's backends: ${given:-no option (as stock)}"

# 1-3: the series' QEMU, preallocated and locked
calls0=$(stat_of calls) bytes0=$(stat_of bytes_populated)
as patched
if start "$bin" $(backends on 2) -overcommit mem-lock=on; then
	mapped=1
	grep -q libmemprepop "/proc/$pid/maps" && mapped=0
	[ $mpp_calls = 0 ] && mapped=$((1 - mapped))
	placed "$name"
	ok $? "$name: every page of each backend on its bound node"
	lck=$(vmlck_kb)
	echo "# $name: VmLck $lck kB"
	[ "$lck" -ge $((2 * mib * 1024)) ]
	ok $? "$name: both backends locked (VmLck >= $((2 * mib)) MiB)"
	stop
	[ $mapped = 0 ] && [ "$status" = 0 ]
	ok $? "$name: ran with libmemprepop mapped ($mpp_calls), quit with status 0"
else
	cat "$tmp/err"
	for t in "placement" "locked" "runs"; do ok 1 "$name: $t"; done
fi
calls1=$(stat_of calls) bytes1=$(stat_of bytes_populated)

# 4: through the module, both backends in one call; with a series that
# keeps upstream's rule (no asynchronous preallocation without a thread
# context: 10.x, which take MEMPREPOP_QEMU_METHOD), one call each
cmdline_calls=$mpp_calls
[ -z "$method" ] || cmdline_calls=$((2 * mpp_calls))
if [ $has_module = 1 ]; then
	echo "# module: $((calls1 - calls0)) calls, $((bytes1 - bytes0)) bytes"
	[ $((calls1 - calls0)) = $cmdline_calls ] &&
		[ $((bytes1 - bytes0)) = $((mpp_calls * 2 * mib * 1048576)) ]
	ok $? "$name: both backends in $cmdline_calls call(s) of the module"
else
	ok 0 "$name: both backends through the module # SKIP no module"
fi

# 5-6: stock QEMU, the same way: what the patched one is held to
as stock
if start "$bin" $(backends on 2) -overcommit mem-lock=on; then
	placed stock
	ok $? "stock: every page of each backend on its bound node"
	lck=$(vmlck_kb)
	[ "$lck" -ge $((2 * mib * 1024)) ]
	ok $? "stock: both backends locked (VmLck $lck kB)"
	stop
else
	cat "$tmp/err"
	ok 1 "stock: placement"
	ok 1 "stock: locked"
fi

# 7: a backend added at run time is preallocated at once (not queued)
calls0=$(stat_of calls)
as patched
if start "$bin" $(backends off 1); then
	hmp "object_add memory-backend-ram,id=hot,size=64M,prealloc=on,prealloc-threads=2$opt"
	present=$(awk '$2 == "default" && / anon=16384 / { f = 1 } END { print f + 0 }' \
		"/proc/$pid/numa_maps")
	calls1=$(stat_of calls)
	echo "# object_add: 64 MiB mapping fully present: $present; module calls: $((calls1 - calls0))"
	[ "$present" = 1 ] &&
		{ [ $has_module = 0 ] || [ $((calls1 - calls0)) = $mpp_calls ]; }
	ok $? "$name: object_add with prealloc=on populates at once"
	stop
else
	cat "$tmp/err"
	ok 1 "$name: object_add with prealloc=on populates at once"
fi

# 8-9: -mem-prealloc preallocates the machine's own RAM (-m), the same way
for q in patched stock; do
	as $q
	calls0=$(stat_of calls)
	if start "$bin" -m "${mib}M" -mem-prealloc; then
		present=$(awk -v want=" anon=$((mib * 256)) " \
			'$2 == "default" && index($0, want) { f = 1 }
			 END { print f + 0 }' "/proc/$pid/numa_maps")
		calls=$(($(stat_of calls) - calls0))
		stop
		echo "# $label: -m ${mib}M -mem-prealloc: RAM fully present: $present; module calls $calls"
		[ "$present" = 1 ] &&
			{ [ $q = stock ] || [ $has_module = 0 ] ||
			  { [ -n "$method" ] && [ "$calls" = 0 ]; } ||
			  { [ -z "$method" ] && [ "$calls" = $mpp_calls ]; }; }
		ok $? "$label: -mem-prealloc preallocates the machine's RAM"
	else
		cat "$tmp/err"
		ok 1 "$label: -mem-prealloc preallocates the machine's RAM"
	fi
done

# The allowed CPUs of every memprepop worker (a thread of QEMU, a
# vhost_task), one line each, while $tmp/done does not exist
sample_workers() {
	: > "$tmp/cpus"
	while [ ! -e "$tmp/done" ]; do
		for t in /proc/[0-9]*/task/[0-9]*; do
			comm=$(cat "$t/comm" 2> /dev/null) || continue
			case $comm in memprepop/*)
				awk '/^Cpus_allowed_list:/ { print $2 }' \
					"$t/status" >> "$tmp/cpus" ;;
			esac
		done
	done
}
# 10: a thread context's CPUs are the workers' CPUs
if [ $has_module = 1 ] && [ "$(nproc)" -ge 2 ]; then
	rm -f "$tmp/done"
	sample_workers &
	sampler=$!
	as patched
	if start "$bin" -object thread-context,id=tc,cpu-affinity=0 \
		$(backends on 2 ,prealloc-context=tc); then
		stop
	fi
	touch "$tmp/done"
	wait $sampler
	seen=$(sort -u "$tmp/cpus" | tr '\n' ' ')
	echo "# workers' allowed CPUs with a context on CPU 0: ${seen:-none seen}"
	if [ $mpp_calls = 1 ]; then
		[ -n "$seen" ] && [ "$seen" = "0 " ]
	else
		[ -z "$seen" ]
	fi
	ok $? "$name: workers keep to the thread context's CPUs (or none)"
else
	ok 0 "$name: workers keep to the thread context's CPUs # SKIP needs the module and 2 CPUs"
fi

# 11-12: with memory locked, a backend added later (memory hotplug) is bound
# before it is populated and locked (seed 001's order), not moved after. In
# a guest of one CPU per node, the patched one gets the two workers its
# prealloc-threads asks for: one on the node, one helping from the other.
nd=$(node_of 1)
want_workers=0
[ $has_module = 1 ] && [ $mpp_calls = 1 ] && [ "$nd" != "$(node_of 0)" ] &&
	[ "$(nproc)" = 2 ] && want_workers=2
workers() { echo $(($(stat_of workers_started) + $(stat_of workers_reused))); }
hot="memory-backend-ram,id=hot,size=${mib}M,host-nodes.0=$nd,policy=bind,prealloc=on"
for q in patched stock; do
	as $q
	calls0=$(stat_of calls)
	if start "$bin" -overcommit mem-lock=on; then
		lck0=$(vmlck_kb)
		w0=$(workers)
		hmp "object_add $hot,prealloc-threads=2$opt"
		got=$(bound_pages "$nd" "$nd")
		lck=$(vmlck_kb)
		calls=$(($(stat_of calls) - calls0))
		w=$(($(workers) - w0))
		stop
		echo "# $label: object_add after mem-lock=on: $got of $((mib * 256)) pages on node $nd, VmLck +$((lck - lck0)) kB, module calls $calls, workers $w"
		[ "$got" = $((mib * 256)) ] &&
			[ $((lck - lck0)) -ge $((mib * 1024)) ] &&
			{ [ $q = stock ] || [ $has_module = 0 ] ||
			  { [ "$calls" = $mpp_calls ] &&
			    { [ $want_workers = 0 ] ||
			      [ $w = $want_workers ]; }; }; }
		ok $? "$label: a backend added with memory locked: on its node, locked"
	else
		cat "$tmp/err"
		ok 1 "$label: a backend added with memory locked: on its node, locked"
	fi
done

# one_backend WHAT OBJ NODE PAGES: $bin (as $q) started with the memory
# backend OBJ bound to NODE, preallocated: its PAGES (of 4 KiB) all there,
# a clean quit, and for the patched QEMU with the module, its calls
one_backend() {
	ob_good=1
	ob_calls0=$(stat_of calls)
	if start "$bin" -object "$2$opt"; then
		ob_got=$(bound_pages "$3" "$3")
		stop
		ob_calls=$(($(stat_of calls) - ob_calls0))
		echo "# $1: $ob_got of $4 pages on node $3, module calls $ob_calls"
		[ "$status" = 0 ] && [ "$ob_got" = "$4" ] &&
			{ [ "$q" = stock ] || [ $has_module = 0 ] ||
			  [ "$ob_calls" = $mpp_calls ]; } && ob_good=0
	else
		cat "$tmp/err"
	fi
	ok $ob_good "$1"
}

# 13-16: memfd and hugetlbfs backends, bound to the second node and
# preallocated: every page there, for both QEMUs, through the module for the
# patched one
nd=$(node_of 1)
hp=/dev/hugepages
pool=/sys/devices/system/node/node$nd/hugepages/hugepages-2048kB
node_free=$(cat "$pool/free_hugepages" 2> /dev/null || echo 0)
for kind in memfd hugetlbfs; do
	if [ $kind = memfd ]; then
		size=$mib
		obj="memory-backend-memfd,id=f,size=${size}M,share=on"
	else
		size=$((node_free / 2 * 2))
		obj="memory-backend-file,id=f,size=${size}M,mem-path=$hp,share=on"
	fi
	obj="$obj,host-nodes=$nd,policy=bind,prealloc=on,prealloc-threads=2"
	for q in patched stock; do
		as $q
		what="$label: a $kind backend on its bound node"
		if [ $kind = hugetlbfs ] && [ "$size" -lt 2 ]; then
			ok 0 "$what # SKIP no free 2 MiB hugetlb pages on node $nd"
			continue
		fi
		one_backend "$what" "$obj" "$nd" $((size * 256))
	done
done

# 17-18: a hugetlb pool too small on the bound node (the reservation, for all
# nodes, is granted; faulting on that node fails): QEMU's own error, its own
# exit status
hp=/dev/hugepages
nd=$(node_of 1)
pool=/sys/devices/system/node/node$nd/hugepages/hugepages-2048kB
node_free=$(cat "$pool/free_hugepages" 2> /dev/null || echo 0)
free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
if grep -q " $hp hugetlbfs" /proc/mounts && [ "$nr_nodes" -ge 2 ] &&
   [ "$node_free" -gt 0 ] && [ "$((node_free + 4))" -le "${free:-0}" ]; then
	obj="memory-backend-file,id=h,size=$(((node_free + 4) * 2))M"
	obj="$obj,mem-path=$hp,host-nodes=$nd,policy=bind,prealloc=on"
	obj="$obj,prealloc-threads=2"
	for q in stock patched; do
		as $q
		"$bin" -machine none -nodefaults -display none \
			${sandbox:+-sandbox "$sandbox"} -object "$obj$opt" \
			< /dev/null > /dev/null 2> "$tmp/err.$q"
		echo $? > "$tmp/rc.$q"
		sed "s|^[^:]*: ||" "$tmp/err.$q" > "$tmp/msg.$q"
		echo "# $label: exit $(cat "$tmp/rc.$q"): $(cat "$tmp/msg.$q")"
	done
	[ "$(cat "$tmp/rc.patched")" = "$(cat "$tmp/rc.stock")" ] &&
		[ "$(cat "$tmp/rc.patched")" -gt 0 ] &&
		[ "$(cat "$tmp/rc.patched")" -lt 128 ]
	ok $? "hugetlb pool exhausted: the same exit status as stock, no signal"
	grep -q "preallocating memory failed" "$tmp/msg.patched" &&
		cmp -s "$tmp/msg.stock" "$tmp/msg.patched"
	ok $? "hugetlb pool exhausted: the same message as stock"
else
	why="needs 2 nodes and free 2 MiB hugetlb pages on $hp"
	ok 0 "hugetlb pool exhausted: exit status # SKIP $why"
	ok 0 "hugetlb pool exhausted: message # SKIP $why"
fi
# 19-22 (QEMU 10.0 and later)
qver=$("$patched" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p' |
	head -n 1)
# 19-20: libvirt's layout, one thread context per host node
# (node-affinity) as each bound backend's prealloc-context: placed, and for
# the patched one through one call of the module, each node's workers on
# that node's CPUs only
if [ "${qver:-0}" -ge 10 ] && [ "$nr_nodes" -ge 2 ]; then
	tcs="-object thread-context,id=tc0,node-affinity=$(node_of 0)"
	tcs="$tcs -object thread-context,id=tc1,node-affinity=$(node_of 1)"
	for q in patched stock; do
		as $q
		calls0=$(stat_of calls) bytes0=$(stat_of bytes_populated)
		rm -f "$tmp/done"
		sample_workers &
		sampler=$!
		if start "$bin" $tcs $(backends on 2 ,prealloc-context=tc@)
		then
			placed "$label"
			good=$?
			stop
		else
			cat "$tmp/err"
			good=1
		fi
		touch "$tmp/done"
		wait $sampler
		calls=$(($(stat_of calls) - calls0))
		bytes=$(($(stat_of bytes_populated) - bytes0))
		seen=$(sort -u "$tmp/cpus" | tr '\n' ' ')
		echo "# $label: libvirt's layout: module calls $calls, $bytes bytes; workers' allowed CPUs: ${seen:-none seen}"
		if [ $q = patched ] && [ $has_module = 1 ]; then
			[ "$calls" = $mpp_calls ] &&
				[ "$bytes" = $((mpp_calls * 2 * mib * 1048576)) ] &&
				! echo "$seen" | grep -q '[-,]' || good=1
		fi
		what="placed"
		[ $q = patched ] && [ $has_module = 1 ] &&
			what="placed, $mpp_calls module call, workers on their node's CPUs"
		ok $good "$label: libvirt's thread contexts: $what"
	done
else
	why="needs QEMU 10 and 2 nodes"
	ok 0 "libvirt's thread contexts: patched # SKIP $why"
	ok 0 "libvirt's thread contexts: stock # SKIP $why"
fi

# 21-22: mem-lock=on-fault, preallocated: placed and locked
if [ "${qver:-0}" -ge 10 ]; then
	for q in patched stock; do
		as $q
		if start "$bin" $(backends on 2) -overcommit mem-lock=on-fault
		then
			placed "$label"
			good=$?
			lck=$(vmlck_kb)
			stop
			echo "# $label: mem-lock=on-fault: VmLck $lck kB"
			[ "$lck" -ge $((2 * mib * 1024)) ] || good=1
		else
			cat "$tmp/err"
			good=1
		fi
		ok $good "$label: mem-lock=on-fault: every page on its node, locked"
	done
else
	ok 0 "mem-lock=on-fault: patched # SKIP needs QEMU 10"
	ok 0 "mem-lock=on-fault: stock # SKIP needs QEMU 10"
fi

# 23: the machine's prealloc-method, as libvirt can pass it on (a second
# -machine through <qemu:commandline>): every backend that sets none takes
# it (the command line's, -m's RAM with -mem-prealloc, one added by
# object_add), one that sets its own keeps it. Read from the trace events
# (on stderr) and the module's calls.
what="$name: -machine prealloc-method=memprepop: every backend's default, a backend's own kept"
if [ -n "$method" ] && [ "${qver:-0}" -ge 10 ]; then
	as patched
	opt=
	calls0=$(stat_of calls)
	if start "$bin" -machine prealloc-method=memprepop -m "${mib}M" -mem-prealloc \
		$(backends on 2) -trace 'host_memory_backend_memprepop*'; then
		hmp "object_add memory-backend-ram,id=hot,size=64M,prealloc=on"
		hmp "object_add memory-backend-ram,id=own,size=64M,prealloc=on,prealloc-method=default"
		placed "$name"
		good=$?
		stop
		calls=$(($(stat_of calls) - calls0))
		got=$(sed -n 's/^.*host_memory_backend_memprepop backend \([^ ]*\) .* ret 0$/\1/p' \
			"$tmp/err" | sort | tr '\n' ' ')
		echo "# $name: backends through libmemprepop: ${got:-none}; module calls $calls"
		[ "$status" = 0 ] && [ "$got" = "hot m0 m1 ram " ] || good=1
		[ $has_module = 0 ] || [ "$calls" = 4 ] || good=1
	else
		cat "$tmp/err"
		good=1
	fi
	ok $good "$what"
else
	ok 0 "$what # SKIP the series takes no prealloc-method"
fi

# 24-25: a hugetlbfs backend of 1 GiB pages (hugetlbfs mounted with
# pagesize=1G), bound to the node whose pool has a free page, preallocated:
# the page there for both, through the module for the patched one
gnode=
for p in /sys/devices/system/node/node[0-9]*/hugepages/hugepages-1048576kB; do
	[ "$(cat "$p/free_hugepages" 2> /dev/null || echo 0)" -gt 0 ] || continue
	gnode=${p#/sys/devices/system/node/node}
	gnode=${gnode%%/*}
	break
done
if [ -n "$gnode" ] && mkdir -p "$tmp/hp1g" &&
   mount -t hugetlbfs -o pagesize=1G none "$tmp/hp1g" 2> /dev/null; then
	obj="memory-backend-file,id=g,size=1G,mem-path=$tmp/hp1g,share=on"
	obj="$obj,host-nodes=$gnode,policy=bind,prealloc=on,prealloc-threads=2"
	for q in patched stock; do
		as $q
		one_backend "$label: a backend of 1 GiB hugetlb pages on its bound node" \
			"$obj" "$gnode" 262144
	done
	umount "$tmp/hp1g"
else
	why="no free 1 GiB hugetlb page"
	ok 0 "patched: a backend of 1 GiB hugetlb pages # SKIP $why"
	ok 0 "stock: a backend of 1 GiB hugetlb pages # SKIP $why"
fi
ktap_finish
