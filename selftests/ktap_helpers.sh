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
