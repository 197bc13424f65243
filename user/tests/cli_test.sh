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
echo "1..16"

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
run populate --size 1M --threads 0; [ $status = 2 ]
ok $? "zero threads: exit 2"
run populate --size 1M --hugetlb 3M; [ $status = 2 ]
ok $? "bad hugetlb size: exit 2"

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

version=$("$tool" --version | cut -d' ' -f2)
run info
[ $status = 0 ] && echo "$out" | grep -q "^library   $version\$" &&
	echo "$out" | grep -qE "^module    (not loaded|flags 0x)"
ok $? "info: the library's version and the module's support"

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

run populate --size 64M --json --fallback
echo "$out" | grep -q '"backend": "fallback"'
ok $? "--fallback uses the fallback"

f=$shm/cli_test.$$
run file "$f" --size 32M
[ $status = 0 ] && [ "$(stat -c %s "$f")" = 33554432 ] &&
	[ "$(($(stat -c %b "$f") * 512))" = 33554432 ]
ok $? "file: a tmpfs file grown and allocated in full"
rm -f "$f"

run file /proc/version --size 1M
[ $status = 1 ] && grep -q "not on hugetlbfs or tmpfs" /tmp/cli_test.err
ok $? "file: refuses a file that is not on hugetlbfs or tmpfs"

ktap_finish
