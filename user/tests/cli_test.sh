#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# memprepop(1) as an operator meets it: exit codes, --help, bad arguments,
# the JSON report, the file subcommand. KTAP on stdout. Uses the memprepop
# next to it (build tree) or on PATH (test VM).
here=$(cd "$(dirname "$0")" && pwd)
tool=$here/../bin/memprepop
[ -x "$tool" ] || tool=memprepop
shm=${TMPDIR_SHM:-/dev/shm}
. "$(dirname "$0")/ktap_helpers.sh"

# Runs the tool; $status is its exit status, $out its stdout
run() {
	out=$("$tool" "$@" 2> /tmp/cli_test.err)
	status=$?
}

echo "TAP version 13"
echo "1..54"

run --help; [ $status = 0 ] && echo "$out" | grep -q populate
ok $? "--help exits 0 and lists the commands"
for cmd in populate file info; do
	run $cmd --help
	[ $status = 0 ] && echo "$out" | grep -q "usage: memprepop $cmd"
	ok $? "$cmd --help exits 0 with its usage"
done
run; [ $status = 2 ]
ok $? "no command: exit 2"
run frobnicate; [ $status = 2 ] && grep -q "unknown command" /tmp/cli_test.err
ok $? "unknown command: exit 2, named"
run populate --size 12Q; [ $status = 2 ] && grep -q "bad size" /tmp/cli_test.err
ok $? "bad size: exit 2, one line naming it"
# What a size may be, said; sizes near 2^64 refused, not wrapped to 0 when
# rounded up to pages
run populate --size 1.5G
[ $status = 2 ] && [ "$(wc -l < /tmp/cli_test.err)" = 1 ] &&
	grep -q "bad size: '1.5G' (.*K, M, G or T, powers of 1024: .*512M" \
		/tmp/cli_test.err
ok $? "bad size: one line saying what a size may be"
for args in "populate --size 18446744073709551615" \
	    "populate --hugetlb 2M --size 18446744073708503041" \
	    "file $shm/cli_test_wrap.$$ --size 18446744073709551615"; do
	run $args
	[ $status = 2 ] && grep -q "bad size" /tmp/cli_test.err &&
		[ ! -e $shm/cli_test_wrap.$$ ]
	ok $? "${args%% *} of a size near 2^64: bad size, exit 2"
done
run populate --size 1M --threads 0; [ $status = 2 ]
ok $? "zero threads: exit 2"
run populate --size 1M --hugetlb 3M; [ $status = 2 ]
ok $? "bad hugetlb size: exit 2"
run populate --size 1M --membind 4095
[ $status = 2 ] && [ "$(wc -l < /tmp/cli_test.err)" = 1 ] &&
	grep -q "^memprepop: no node 4095 here .*: nodes with memory are [0-9]" \
		/tmp/cli_test.err
ok $? "node out of range: exit 2, the tool's one line naming the nodes there"
run populate --size 1M --membind ''
[ $status = 2 ] && grep -q "bad node list: ''" /tmp/cli_test.err
ok $? "empty node list: exit 2"
bad=
for list in 0- -1 1-0 0,,1 a; do
	run populate --size 1M --membind $list
	[ $status = 2 ] && [ "$(wc -l < /tmp/cli_test.err)" = 1 ] &&
		grep -q "bad node list: '$list' (node numbers and ranges" \
			/tmp/cli_test.err || bad="$bad $list"
done
[ -z "$bad" ]
ok $? "node lists that are not ones: bad node list, exit 2, one line${bad:+ (not:$bad)}"
run populate --size 1M --preferred 0,1
[ $status = 2 ] && grep -q "^memprepop: --preferred takes one node: '0,1'$" \
	/tmp/cli_test.err
ok $? "--preferred of two nodes: it takes one, exit 2"
run populate --size 1M --membind 0 --interleave 0
[ $status = 2 ] && [ "$(wc -l < /tmp/cli_test.err)" = 1 ] &&
	grep -q "one of --membind, --interleave, --preferred" /tmp/cli_test.err
ok $? "two placements: exit 2, not the last one silently"
run populate --size 1M --frobnicate
[ $status = 2 ] && [ "$(cat /tmp/cli_test.err)" = "memprepop populate: unknown option '--frobnicate' ('memprepop populate --help' lists them)" ]
ok $? "unknown option: exit 2, one line naming it and the command"
run populate --size 1M stray
[ $status = 2 ] && grep -q "populate takes no operand: 'stray'" /tmp/cli_test.err
ok $? "stray operand: exit 2, named"
run --help
echo "$out" | grep -q -- "--version"
ok $? "--help mentions --version"

run populate --size 64M --json
json_ok=1
if [ $status = 0 ]; then
	if command -v python3 > /dev/null; then
		echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
keys = {"size": int, "memory": str, "page_size": int, "policy": str,
        "locked": bool, "seconds": float, "gbps": float, "backend": str,
        "workers": int, "pages": int, "present_pages": int, "nodes": dict}
for k, t in keys.items():
    assert isinstance(d[k], t), k
assert d["size"] == 64 << 20 and d["pages"] == d["present_pages"]
assert sum(d["nodes"].values()) == d["pages"]
assert d["backend"] in ("module", "fallback")
' && json_ok=0
	else
		for k in size memory page_size policy locked seconds gbps \
			 backend workers pages present_pages nodes; do
			echo "$out" | grep -q "\"$k\": " || break
		done && json_ok=0
	fi
fi
ok $json_ok "populate --json: one object with every field, all pages present"

run populate --size 64M
[ $status = 0 ] && [ ! -s /tmp/cli_test.err ] &&
	echo "$out" | grep -q "^verified  16384 of 16384 pages present"
ok $? "populate: verified, and no progress bar when not a terminal"
echo "$out" | grep -q "^GB/s      [0-9.]* (GB: 10^9 bytes; .*GiB: .*2^30)" &&
	{ [ ! -d /sys/devices/system/node/node0 ] ||
	  echo "$out" | grep -q "^node 0    [0-9]* pages ([0-9.]* [KMG]*i*B)$"; }
ok $? "populate: GB/s says it is 10^9 bytes, pages per node say their size"

version=$("$tool" --version | cut -d' ' -f2)
run info
[ $status = 0 ] && echo "$out" | grep -q "^library   $version, option flags 0x7\$" &&
	echo "$out" | grep -qE "^module    (not loaded|flags 0x)"
ok $? "info: the library's version and the module's support"
run info --json
json_ok=1
if [ $status = 0 ] && command -v python3 > /dev/null; then
	echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["library"] == sys.argv[1] and d["option_flags"] == 7, d
assert d["backend"] in ("module", "fallback"), d
assert d["module"] is None or d["module"]["max_workers"] >= 1, d
for n in d["nodes"].values():
    assert n["total_bytes"] >= n["free_bytes"] >= 0, n
' "$version" && json_ok=0
elif [ $status = 0 ]; then
	echo "$out" | grep -q '^{"library": ' && json_ok=0
fi
ok $json_ok "info --json: one object with the library, backend, module, nodes"

# Locked where RLIMIT_MEMLOCK (or root's CAP_IPC_LOCK) allows it; else one
# line naming the limit
run populate --size 4M --lock --json
limit=$(ulimit -l)
if [ "$(id -u)" = 0 ] || [ "$limit" = unlimited ] || [ "$limit" -ge 4096 ]
then
	[ $status = 0 ] && echo "$out" | grep -q '"locked": true' &&
		echo "$out" | grep -q '"present_pages": 1024'
else
	[ $status = 1 ] && grep -q RLIMIT_MEMLOCK /tmp/cli_test.err
fi
ok $? "populate --lock: locked, or the memlock limit named"

# Refused by the memlock limit (root without CAP_IPC_LOCK): the report
# says what happened, not what was asked
limited() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --bounding-set=-ipc_lock sh -c 'ulimit -l 64; "$@"' sh "$@"
	else
		sh -c 'ulimit -l 64; "$@"' sh "$@"
	fi
}
# (busybox's setpriv, in the test VM, has no --bounding-set)
if [ "$(id -u)" != 0 ] ||
   setpriv --bounding-set=-ipc_lock true > /dev/null 2>&1; then
	out=$(limited "$tool" populate --size 4M --lock --json 2> /tmp/cli_test.err)
	status=$?
	text=$(limited "$tool" populate --size 4M --lock 2> /dev/null)
	[ $status = 1 ] && grep -q RLIMIT_MEMLOCK /tmp/cli_test.err &&
		echo "$out" | grep -q '"locked": false' &&
		echo "$text" | grep -q "^locked    no"
	ok $? "populate --lock refused: the report says not locked"
else
	ok 0 "populate --lock refused # SKIP root without setpriv --bounding-set"
fi

run populate --size 64M --json --fallback
echo "$out" | grep -q '"backend": "fallback"'
ok $? "--fallback uses the fallback"

# Bound to node 1 of a guest with one CPU per node: two workers only with
# --borrow-cpus, every page on node 1 either way
if [ -d /sys/devices/system/node/node1 ] && [ "$(nproc)" = 2 ]; then
	run populate --size 128M --membind 1 --threads 2 --json
	one=$out
	run populate --size 128M --membind 1 --threads 2 --borrow-cpus --json
	echo "# without: $(echo "$one" | grep -o '"workers": [0-9]*'), with: $(echo "$out" | grep -o '"workers": [0-9]*')"
	[ $status = 0 ] && echo "$one" | grep -q '"workers": 1,' &&
		echo "$out" | grep -q '"workers": 2,' &&
		echo "$out" | grep -q '"nodes": {"0": 0, "1": 32768\(, "[0-9]*": 0\)*}'
	ok $? "--borrow-cpus: another node's CPU helps, placement unchanged"
else
	ok 0 "--borrow-cpus: another node's CPU helps # SKIP needs two nodes of one CPU each"
fi

f=$shm/cli_test.$$
run file "$f" --size 32M
[ $status = 0 ] && [ "$(stat -c %s "$f")" = 33554432 ] &&
	[ "$(($(stat -c %b "$f") * 512))" = 33554432 ]
ok $? "file: a tmpfs file grown and allocated in full"
rm -f "$f"

# Several files in one run: options before the first PATH for all, those
# after a PATH for that file
a=$shm/cli_test_a.$$ b=$shm/cli_test_b.$$
run file --size 8M "$a" --membind 0 "$b" --size 24M --interleave 0
[ $status = 0 ] && [ "$(stat -c %s "$a")" = 8388608 ] &&
	[ "$(stat -c %s "$b")" = 25165824 ] &&
	[ "$(($(stat -c %b "$b") * 512))" = 25165824 ] &&
	echo "$out" | grep -q "^verified  8192 of 8192 pages present" &&
	echo "$out" | grep -q "^file      $a: 8.00 MiB, membind 0, 2048 of 2048" &&
	echo "$out" | grep -q "^file      $b: 24.00 MiB, interleave 0, 6144 of"
ok $? "file: two files in one run, each its own size and placement"
rm -f "$a" "$b"

run file "$a" --size 4M "$b" --size 12M --json
json_ok=1
if [ $status = 0 ] && command -v python3 > /dev/null; then
	echo "$out" | python3 -c '
import json, sys
a, b = sys.argv[1:]
d = json.load(sys.stdin)
assert d["files"] == 2 and d["size"] == 16 << 20
assert d["pages"] == d["present_pages"] == sum(d["nodes"].values())
r = d["ranges"]
assert [x["path"] for x in r] == [a, b]
assert [x["size"] for x in r] == [4 << 20, 12 << 20]
for x in r:
    assert x["populated"] == x["size"] and x["error"] == 0
    assert x["error_text"] == "" and x["policy"] == "default"
    assert x["pages"] == x["present_pages"] == sum(x["nodes"].values())
' "$a" "$b" && json_ok=0
elif [ $status = 0 ]; then
	echo "$out" | grep -q '"ranges": \[{"path": ' && json_ok=0
fi
ok $json_ok "file --json: per-range path, size, populated, error, nodes"

# A path with an escape sequence is printed escaped, never raw, in the
# report and in a refusal
esc=$(printf '\033')
e="$shm/cli_test_${esc}[31m.$$"
run file "$e" --size 4M
"$tool" file "$e.x" 2>> /tmp/cli_test.err
# (printf, not echo: dash's echo would make the escapes again)
[ $status = 0 ] && ! { printf '%s\n' "$out"; cat /tmp/cli_test.err; } |
	grep -q "$esc" && printf '%s\n' "$out" | grep -qF 'cli_test_\033[31m' &&
	grep -qF 'cli_test_\033[31m' /tmp/cli_test.err
ok $? "file: control characters in a path printed escaped"
rm -f "$e"

# An empty file without --size: exit 2 before anything is populated
rm -f "$b"
: > "$a"
run file "$b" --size 4M "$a"
[ $status = 2 ] && grep -q "$a is empty: give --size" /tmp/cli_test.err &&
	[ ! -e "$b" ]
ok $? "file: an empty file without a size: exit 2, named, nothing created"
rm -f "$a" "$b"

# A refusal changes no file: the tmpfs file before the refused one is not
# created, a missing one without a size is not left behind empty
run file --size 4M "$a" /proc/cli_test.$$
[ $status = 2 ] && grep -q "not on hugetlbfs or tmpfs" /tmp/cli_test.err &&
	[ ! -e "$a" ]
ok $? "file: refused for one file, no other file created or grown"
run file "$a"
[ $status = 2 ] && grep -q "$a is not there: give --size" /tmp/cli_test.err &&
	[ ! -e "$a" ]
ok $? "file: a missing file without a size is not created"
rm -f "$a" "$b"

# More than the machine has: refused before a page is touched (under a
# small address-space limit, so that a tool without the check fails to
# map instead of calling the OOM killer); --overcommit goes on, and here
# fails to map
(ulimit -v 4194304; run populate --size 64T; echo "$status" > /tmp/cli_test.st)
[ "$(cat /tmp/cli_test.st)" = 2 ] && [ "$(wc -l < /tmp/cli_test.err)" = 1 ] &&
	grep -q "is more than the .* could give .*--overcommit" /tmp/cli_test.err
ok $? "populate: a size beyond the nodes' memory refused, exit 2, one line"
(ulimit -v 4194304; run populate --size 64T --overcommit; echo "$status" > /tmp/cli_test.st)
[ "$(cat /tmp/cli_test.st)" = 1 ] && grep -q "cannot map" /tmp/cli_test.err
ok $? "populate --overcommit: no refusal"
(ulimit -v 4194304; run file --size 64T "$a"; echo "$status" > /tmp/cli_test.st)
[ "$(cat /tmp/cli_test.st)" = 2 ] && grep -q "^memprepop: .*$a.* --overcommit" /tmp/cli_test.err &&
	[ ! -e "$a" ]
ok $? "file: a size beyond the nodes' memory refused, the file not kept"
rm -f "$a"

# A tmpfs of 4 MiB: 16 MiB refused from its free space before anything is
# made; with --overcommit it takes 4 of 16 MiB, the failure said in words,
# the rate of what was populated
m=$(mktemp -d)
if mount -t tmpfs -o size=4M cli_test "$m" 2> /dev/null; then
	run file --size 16M "$m/f"
	[ $status = 2 ] && [ "$(wc -l < /tmp/cli_test.err)" = 1 ] &&
		grep -q "has 4.00 MiB free .*need 16.00 MiB more" \
			/tmp/cli_test.err && [ ! -e "$m/f" ]
	ok $? "file: beyond its file system's free space: exit 2, nothing made"
	run file --size 16M "$m/f" --json --overcommit
	rate_ok=1
	if [ $status = 1 ] && command -v python3 > /dev/null; then
		echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = d["ranges"][0]
assert 0 < r["populated"] < r["size"], r
assert abs(d["gbps"] - r["populated"] / d["seconds"] / 1e9) <= \
	0.01 * d["gbps"] + 0.001, d
' && rate_ok=0
	elif [ $status = 1 ]; then
		rate_ok=0
	fi
	grep -q "^memprepop: cannot populate $m/f: .*SIGBUS" /tmp/cli_test.err &&
		[ ! -e "$m/f" ] || rate_ok=1
	ok $rate_ok "file: a failed range's rate is of what it populated; SIGBUS said; removed"
	umount "$m"
else
	ok 0 "file: beyond its file system's free space # SKIP cannot mount a tmpfs"
	ok 0 "file: a failed range's rate is of what it populated # SKIP cannot mount a tmpfs"
fi
rmdir "$m"

# JSON as the text: the nodes "all" names, every node up to the highest,
# and an object also when populating failed
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2> /dev/null | wc -l)
run populate --size 1M --interleave all --json
[ $status = 0 ] && ! echo "$out" | grep -q '"policy_nodes": "all"' &&
	{ [ "$nodes" = 0 ] ||
	  [ "$(echo "$out" | sed 's/.*"nodes": {\([^}]*\)}.*/\1/' |
	       tr ',' '\n' | wc -l)" -ge "$nodes" ]; }
ok $? "populate --json: policy_nodes resolved, a count for every node"
# (a kernel without runtime gigantic pages, as 7.3's defconfig without
# MEMORY_ISOLATION, has no 1 GiB size at all: nothing to fail here)
free1g=$(cat /sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages \
	 2> /dev/null || echo none)
if [ "$free1g" = none ]; then
	ok 0 "populate --json that fails # SKIP no 1 GiB hugetlb pages in this kernel"
elif [ "$free1g" = 0 ]; then
	run populate --size 1G --hugetlb 1G --overcommit --json
	[ $status = 1 ] && echo "$out" | grep -q '"error": -[0-9]' &&
		echo "$out" | grep -q '"populated": 0'
	ok $? "populate --json that fails: the object, with its error"
else
	ok 0 "populate --json that fails # SKIP 1 GiB pages are free here"
fi

# In a container's default seccomp profile the NUMA calls are refused: the
# tool populates there as the library does, and counts pages without nodes
sandbox=$here/sandbox
if [ -x "$sandbox" ] && "$sandbox" --refuse numa true 2> /dev/null; then
	out=$("$sandbox" --refuse numa "$tool" populate --size 64M \
		2> /tmp/cli_test.err)
	status=$?
	[ $status = 0 ] &&
		grep -q "page placement cannot be read here" /tmp/cli_test.err &&
		echo "$out" | grep -q "^verified  16384 of 16384 pages present"
	ok $? "populate with the NUMA calls refused: populated, verified, said so"
else
	ok 0 "populate with the NUMA calls refused # SKIP no seccomp sandbox here"
fi

# Under QEMU's -sandbox resourcecontrol=deny (libvirt's default) affinity
# is refused: the fallback's threads run unpinned and populate, as madvise
# by the caller does under the same filter; with the NUMA calls refused
# too (a container), the same
for refuse in "affinity" "affinity --refuse numa"; do
	what=$(echo "$refuse" | sed 's/ --refuse / and /')
	if [ -x "$sandbox" ] && "$sandbox" --refuse affinity true 2> /dev/null
	then
		out=$("$sandbox" --refuse $refuse "$tool" populate --size 64M \
			--fallback --threads 2 2> /tmp/cli_test.err)
		status=$?
		[ $status = 0 ] &&
			echo "$out" | grep -q "^verified  16384 of 16384 pages present" &&
			echo "$out" | grep -q "^workers   [1-9]"
		ok $? "fallback with $what refused: threads populate it all"
	else
		ok 0 "fallback with $what refused # SKIP no seccomp sandbox here"
	fi
done

# Transparent huge pages asked for, and counted in the report
# (whether the kernel finds huge pages is its choice: none only where it
# says it fell back, by its thp_fault_fallback count)
thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2> /dev/null)
fallbacks() { awk '/^thp_fault_fallback / { print $2 }' /proc/vmstat; }
before=$(fallbacks)
run populate --size 64M --thp --json
case $thp in
*"[never]"*|"")
	ok 0 "populate --thp: huge pages counted # SKIP THP is off" ;;
*)
	[ $status = 0 ] && { echo "$out" | grep -q '"thp_bytes": [1-9]' ||
			     [ "$(fallbacks)" -gt "${before:-0}" ]; }
	ok $? "populate --thp: transparent huge pages used and counted, or the kernel fell back" ;;
esac

run file --size 1M
[ $status = 2 ] && [ "$(wc -l < /tmp/cli_test.err)" = 1 ] &&
	grep -q "memprepop file: no PATH given" /tmp/cli_test.err
ok $? "file: no PATH: exit 2, one line saying so"

run file /proc/version --size 1M
[ $status = 2 ] && grep -q "not on hugetlbfs or tmpfs" /tmp/cli_test.err
ok $? "file: refuses a file that is not on hugetlbfs or tmpfs, exit 2"
run file /proc/cli_test.$$/x --size 1M
[ $status = 2 ] && grep -q "cannot use /proc/cli_test.$$/x" /tmp/cli_test.err
ok $? "file: a directory that is not there: exit 2"

# The same file twice, by two names: refused before anything is created
run file "$a" --size 4M "$(dirname "$a")/../$(basename "$(dirname "$a")")/$(basename "$a")" --size 8M
[ $status = 2 ] && grep -q "given twice" /tmp/cli_test.err && [ ! -e "$a" ]
ok $? "file: the same path twice: exit 2, nothing created"
# A hard link: another path without links, the same inode
c=$shm/cli_test_c.$$
: > "$a"
ln "$a" "$b"
run file "$c" --size 4M "$a" --size 4M "$b" --size 8M
[ $status = 2 ] && grep -q "$a and $b are the same file, given twice" \
	/tmp/cli_test.err && [ ! -e "$c" ] && [ "$(stat -c %s "$a")" = 0 ]
ok $? "file: a file and its hard link: exit 2, nothing created or grown"
rm -f "$a" "$b" "$c"

# A file larger than --size: refused, not populated in part
truncate -s 8M "$a"
run file "$a" --size 4M
[ $status = 2 ] && grep -q "larger than --size" /tmp/cli_test.err &&
	[ "$(stat -c %s "$a")" = 8388608 ] && [ "$(stat -c %b "$a")" = 0 ]
ok $? "file: a file larger than --size: exit 2, untouched"
rm -f "$a"

ktap_finish
