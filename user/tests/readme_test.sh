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
. "$here/ktap_helpers.sh"

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
# go without saying
pkgs=$(step '^1\. ' '^2\. ' | sed -n 's/^sudo apt install //p')
echo "# step 1 installs: $pkgs"
missing=
for src in "$top"/user/lib/*.c "$top"/user/tool/*.c; do
	cc -M -D_GNU_SOURCE -I"$top/build/include" -I"$top/uapi" \
		-I"$top/common" -I"$top/user/include" "$src"
done 2> /dev/null | tr ' \\' '\n\n' | grep '^/' | grep -v "^$top/" |
	sort -u > "$d/headers"
for h in $(cat "$d/headers"); do
	dpkg -S "$(realpath "$h")" 2> /dev/null | head -1 | cut -d: -f1
done | sort -u > "$d/pkgs"
for p in $(cat "$d/pkgs"); do
	case $p in libc6-dev|linux-libc-dev|libgcc-*|gcc-*) continue ;; esac
	echo " $pkgs " | grep -q " $p " || missing="$missing $p"
done
[ -n "$pkgs" ] && [ -s "$d/pkgs" ] && [ -z "$missing" ] &&
	echo " $pkgs " | grep -q " pkg-config "
ok $? "step 1 names every package the build needs${missing:+ (not:$missing)}"

# Steps 2 to 4, each line as written: make in the tree, the rest in HOME
git -C "$top" ls-files -z | (cd "$top" && tar --null -T - -cf -) |
	(mkdir "$d/src" && cd "$d/src" && tar -xf -)
step '^3\. ' '^   built and run' > "$d/first.c"
run_steps() {
	echo "$1" | sed 's/ *# .*//' | while IFS= read -r line; do
		[ -n "$line" ] || continue
		case $line in make*) dir=$d/src ;; *) dir=$HOME ;; esac
		echo "\$ $line"
		(cd "$dir" && eval "$line") || exit 1
		# exports carry over to the next lines (of this subshell)
		case $line in export*) eval "$line" ;; esac
	done
}
export HOME="$d/home"
mkdir "$HOME" && cp "$d/first.c" "$HOME/"
two=$(step '^2\. ' '^3\. ')
three=$(step '^   built and run' '^   Without pkg-config')
four=$(step '^4\. ' '^5\. ')
[ -n "$two" ] && [ -n "$three" ] && [ -n "$four" ] &&
	run_steps "$(printf '%s\n' "$two" "$three" "$four")" > "$d/log" 2>&1
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
