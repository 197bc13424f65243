#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The README's quick start as a newcomer follows it: step 1 names the
# package of every header the library and the tool include; steps 2 to 4
# run as written, with HOME a scratch directory, on a copy of the tree
# without its build; the installed example VMM builds with the line the
# README gives it. KTAP on stdout. Needs the source tree (a git checkout),
# a compiler and dpkg (not in the test VM).
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." 2> /dev/null && pwd)
# Installed beside it in build/tests; run from user/tests of a tree not
# built yet, the tree's own
if [ -f "$here/ktap_helpers.sh" ]; then
	. "$here/ktap_helpers.sh"
else
	. "$top/selftests/ktap_helpers.sh"
fi

[ -f "$top/README" ] && git -C "$top" rev-parse 2> /dev/null &&
	command -v cc > /dev/null && command -v dpkg > /dev/null ||
	ktap_skip_all "needs the source tree, git, a compiler and dpkg"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT

# The code lines of the README's quick start between a line matching $1
# and one matching $2, their indent gone
step() {
	sed -n "/^Quick start/,/^The two commands/p" "$top/README" |
		sed -n "/$1/,/$2/p" | sed -n 's/^       //p'
}

echo "TAP version 13"
echo "1..4"

# Step 1: the packages; those of build-essential's compiler and C library
# go without saying. The one generated header the sources include
# (memprepop/version.h) made first by user/Makefile's own rule, in the
# scratch directory: a fresh clone has no build/
pkgs=$(step '^1\. ' '^2\. ' | sed -n 's/^sudo apt install //p')
echo "# step 1 installs: $pkgs"
missing=
gen=$d/build
make -s -C "$top/user" B="$gen" "$gen/include/memprepop/version.h" \
	> "$d/make.log" 2>&1 || sed 's/^/# /' "$d/make.log"
for src in "$top"/user/lib/*.c "$top"/user/tool/*.c; do
	cc -M -D_GNU_SOURCE -I"$gen/include" -I"$top/uapi" \
		-I"$top/common" -I"$top/user/include" "$src"
done 2> "$d/cc.err" | tr ' \\' '\n\n' | grep '^/' | grep -v "^$top/" |
	sort -u > "$d/headers"
# A header not found: its package is not installed here to be named
[ -s "$d/cc.err" ] && grep -m 5 'error' "$d/cc.err" | sed 's/^/# /'
for h in $(cat "$d/headers"); do
	dpkg -S "$(realpath "$h")" 2> /dev/null | head -1 | cut -d: -f1
done | sort -u > "$d/pkgs"
for p in $(cat "$d/pkgs"); do
	case $p in libc6-dev|linux-libc-dev|libgcc-*|gcc-*) continue ;; esac
	echo " $pkgs " | grep -q " $p " || missing="$missing $p"
done
[ -n "$pkgs" ] && [ -s "$d/pkgs" ] && [ -z "$missing" ] &&
	[ ! -s "$d/cc.err" ] && echo " $pkgs " | grep -q " pkg-config "
ok $? "step 1 names every package the build needs${missing:+ (not:$missing)}"

# Steps 2 to 4, each line as written: make in the tree, the rest in HOME
git -C "$top" ls-files -z | (cd "$top" && tar --null -T - -cf -) |
	(mkdir "$d/src" && cd "$d/src" && tar -xf -)
step '^3\. ' '^   built and run' > "$d/first.c"
# Each line as written, in one shell (exports carry over; set -x logs
# them): make in the tree, the rest in HOME
steps_script() {
	printf '%s\n' "$@" | sed 's/ *# .*//' | while IFS= read -r line; do
		[ -n "$line" ] || continue
		case $line in make*) dir=$d/src ;; *) dir=\$HOME ;; esac
		printf 'cd "%s" && %s || exit 1\n' "$dir" "$line"
	done
}
export HOME="$d/home"
mkdir "$HOME" && cp "$d/first.c" "$HOME/"
two=$(step '^2\. ' '^3\. ')
three=$(step '^   built and run' '^   opts.flags')
four=$(step '^4\. ' '^5\. ')
steps_script "$two" "$three" "$four" > "$d/steps.sh"
# As a user would, with Debian's memlock limit: root without CAP_IPC_LOCK
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
	as_user="setpriv --bounding-set=-ipc_lock"
fi
[ -n "$two" ] && [ -n "$three" ] && [ -n "$four" ] &&
	$as_user sh -c 'ulimit -l 8192 && set -x && . "$1"' sh "$d/steps.sh" \
	> "$d/log" 2>&1
status=$?
[ $status = 0 ] || tail -20 "$d/log" | sed 's/^/# /'
ok $status "steps 2 to 4 install, build and run the first program and the tool"
grep -q "MiB in .* s by the " "$d/log"
ok $? "the first program says what it did"

# The installed example, with its line: the README's, and -lnuma
vmm=$HOME/.local/share/doc/memprepop/examples/vmm.c
PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig
export PKG_CONFIG_PATH
[ -f "$vmm" ] && grep -q "add -lnuma" "$top/README" &&
	cc -o "$d/vmm" "$vmm" $(pkg-config --cflags --libs memprepop) \
		-lnuma 2> "$d/vmm.err"
status=$?
[ $status = 0 ] || sed 's/^/# /' "$d/vmm.err"
ok $status "the installed examples/vmm.c builds with the README's line"
ktap_finish
