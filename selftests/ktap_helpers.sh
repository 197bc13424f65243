# SPDX-License-Identifier: GPL-2.0
# KTAP for the shell tests: "ok N what" or "not ok N what", counted.
ktap_n=0
ktap_failed=0

# ok STATUS DESCRIPTION: a result, passed when STATUS is 0
ok() {
	ktap_n=$((ktap_n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $ktap_n $2"
	else
		echo "not ok $ktap_n $2"
		ktap_failed=$((ktap_failed + 1))
	fi
}

# ktap_finish: the totals line; the exit status for the test
ktap_finish() {
	echo "# Totals: pass:$((ktap_n - ktap_failed)) fail:$ktap_failed" \
	     "xfail:0 xpass:0 skip:0 error:0"
	[ $ktap_failed = 0 ]
}

# ktap_skip_all REASON: skip the whole test, as kselftest's ksft_exit_skip()
ktap_skip_all() {
	echo "TAP version 13"
	echo "1..0 # SKIP $1"
	exit 4
}

# ktap_need_device: skip the whole test unless /dev/memprepop is there (the
# module loaded, or loadable)
ktap_need_device() {
	[ -e /dev/memprepop ] || modprobe -q memprepop 2>/dev/null
	[ -e /dev/memprepop ] || ktap_skip_all "no /dev/memprepop: the memprepop module is not loaded"
}

# ktap_need_cmd PROGRAM...: skip the whole test unless each is on PATH
ktap_need_cmd() {
	for c in "$@"; do
		command -v "$c" > /dev/null || ktap_skip_all "$c is not installed"
	done
}
