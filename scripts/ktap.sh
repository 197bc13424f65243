# SPDX-License-Identifier: GPL-2.0
# Sourced by the check scripts: one KTAP verdict per step.
#
# Set ktap_prefix (say "deb: ") and ktap_log (the step's output) first.

# verdict STATUS DESCRIPTION: "ok ...", or the end of ktap_log as
# diagnostics and "not ok ..."
verdict() {
	if [ "$1" = 0 ]; then
		echo "ok $ktap_prefix$2"
	else
		tail -n 40 "$ktap_log" | sed 's/^/# /'
		echo "not ok $ktap_prefix$2"
	fi
}
