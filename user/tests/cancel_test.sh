#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# memprepop(1) cancelled: SIGINT, SIGTERM and SIGHUP (Ctrl-C, systemd or
# timeout(1), a closed terminal) each cancel the call, undo what the
# command created or grew, say so in one line and exit 128 + the signal;
# a second signal ends it at once, but the same one sent twice at once
# (timeout(1)) is one; nothing after a cancel costs more than what was
# populated. KTAP on stdout. Uses the memprepop next to it (build tree) or
# on PATH (test VM).
here=$(cd "$(dirname "$0")" && pwd)
tool=$here/../bin/memprepop
[ -x "$tool" ] || tool=memprepop
shm=${TMPDIR_SHM:-/dev/shm}
out=/tmp/cancel_test.out err=/tmp/cancel_test.err
. "$(dirname "$0")/ktap_helpers.sh"

echo "TAP version 13"
echo "1..6"

# now: seconds since boot, to 10 ms (also in the test VM's busybox)
now() { cut -d' ' -f1 /proc/uptime; }

# wait_for PID SECONDS: its exit status once it ends, or 137 after killing
# it when it has not ended in time
wait_for() {
	( sleep "$2"; kill -KILL "$1" 2> /dev/null ) > /dev/null 2>&1 &
	watchdog=$!
	wait "$1"
	set -- $? "$watchdog"
	kill "$2" 2> /dev/null
	return "$1"
}

# The tool populating 4 TiB of anonymous memory with one thread, from $t0;
# back once it has more than $1 KiB resident
populate_4t() {
	t0=$(now)
	"$tool" populate --size 4T --overcommit --threads 1 > $out 2> $err &
	pid=$!
	for i in $(seq 500); do
		rss=$(awk '/^VmRSS:/ { print $2 }' /proc/$pid/status 2> /dev/null)
		[ "${rss:-0}" -gt "$1" ] && break
		sleep 0.02
	done
}

# pending PID SIG: SIG was sent to PID and is not taken yet
pending() {
	while read -r key mask; do
		[ "$key" = ShdPnd: ] &&
			return $(((0x$mask >> ($2 - 1) & 1) == 0))
	done < /proc/$1/status
	return 1
}

# ended_in_time: it ended within as long as it had run before the signal
# ($t1 and after, against $t0 to $t1): what it did after the cancel cost no
# more than populating what it had populated then, on any machine
ended_in_time() {
	t2=$(now)
	echo "# ran $t0..$t1 s, ended $t2 s"
	awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { exit !(c - b <= b - a) }'
}

# Big enough to take over 0.1 s at 10 GB/s, small enough for a guest, and
# the two files together at most half what the file system has free (a
# container's /dev/shm has 64 MiB): 256 MiB a file at least, else the
# tool would be done before the signal came
avail=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
kib=$((avail / 4 < 4194304 ? avail / 4 : 4194304))
why="$((avail / 1024)) MiB of memory available"
# (df -P: also busybox's; 0 blocks is a tmpfs without a size= limit)
set -- $(df -Pk "$shm" 2> /dev/null | awk 'NR == 2 { print $2, $4 }')
if [ "${1:-0}" -gt 0 ] && [ $(($2 / 4)) -lt $kib ]; then
	kib=$(($2 / 4))
	why="$shm has $(($2 / 1024)) MiB free"
fi
a=$shm/cancel_test_a.$$ b=$shm/cancel_test_b.$$

# A file this run creates and one it grows, the signal sent once the first
# has pages: the first removed, the second its size of before, one line
for sig in INT:2 TERM:15 HUP:1; do
	want=$((128 + ${sig#*:})) sig=${sig%:*}
	if [ $kib -lt 262144 ]; then
		ok 0 "file: SIG$sig cancels # SKIP $why: too little to populate files long enough to cancel them"
		continue
	fi
	rm -f "$a"
	head -c 1048576 /dev/zero > "$b"
	"$tool" file --threads 1 "$a" --size ${kib}K "$b" --size ${kib}K \
		> $out 2> $err &
	pid=$!
	# Once it populates (the file has pages): a slow guest starts it late
	for i in $(seq 500); do
		[ -e "$a" ] && [ "$(stat -c %b "$a")" -gt 0 ] && break
		sleep 0.02
	done
	kill -$sig $pid
	wait_for $pid 10
	status=$?
	echo "# SIG$sig: exit $status, stderr: $(head -c 300 $err)"
	[ $status = $want ] && [ "$(wc -l < $err)" = 1 ] &&
		grep -q "^memprepop: SIG$sig: cancelled" $err &&
		grep -q "Operation canceled" $out && [ ! -e "$a" ] &&
		[ "$(stat -c %s "$b")" = 1048576 ]
	ok $? "file: SIG$sig cancels, exit $want, one line, created removed, grown shrunk"
done
rm -f "$a" "$b"

# 4 TiB asked, a little populated (past the plan's own 8 MiB), then one
# Ctrl-C: the cancel line with what was populated, and the end no later
# than populating that took: what was populated is counted, not the 4 TiB
# (move_pages(2) over all of it takes minutes). Killed after 5 s: a tool
# that went on populating would take the machine's memory (one thread:
# ~8 GB then)
populate_4t 262144
t1=$(now)
kill -INT $pid
wait_for $pid 5
status=$?
echo "# exit $status, stderr: $(head -c 300 $err)"
ended_in_time && [ $status = 130 ] && [ "$(wc -l < $err)" = 1 ] &&
	grep -q "^memprepop: SIGINT: cancelled, [0-9.]* [KMG]iB of 4.00 TiB populated$" $err
ok $? "populate --size 4T: one Ctrl-C cancels, the populated part counted, in less time than it ran"

# Another signal right after the first: that one ends it at once, with the
# first one's exit status (a repeat of the first would be the first again)
populate_4t 32768
t1=$(now)
kill -INT $pid
kill -TERM $pid
wait_for $pid 5
status=$?
echo "# exit $status, stderr: $(head -c 300 $err)"
ended_in_time && [ $status = 130 ] &&
	grep -q "^memprepop: SIGTERM after SIGINT: stopped at once$" $err
ok $? "populate --size 4T: a second signal ends it at once, exit 130"

# SIGTERM twice within a moment, as timeout(1) sends it (to the process,
# then to its group): one cancel, not a second signal. The second sent
# once the tool has taken the first (it left the process's pending set),
# as happens to timeout(1)'s in about one run in six: else the two would
# be one
populate_4t 32768
kill -TERM $pid
for i in $(seq 2000); do
	pending $pid 15 2> /dev/null || break
done
kill -TERM $pid 2> /dev/null
wait_for $pid 5
status=$?
echo "# exit $status, stderr: $(head -c 300 $err)"
[ $status = 143 ] && [ "$(wc -l < $err)" = 1 ] &&
	grep -q "^memprepop: SIGTERM: cancelled, [0-9.]* [KMG]iB of 4.00 TiB populated$" $err
ok $? "populate --size 4T: SIGTERM sent twice at once cancels once, exit 143"
ktap_finish
