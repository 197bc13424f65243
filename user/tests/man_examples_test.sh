#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The EXAMPLES of the library's man pages that are whole programs or
# functions (they start with #include), as a reader copies them: each
# compiles with -Wall -Wextra and no warning against the library's header,
# and memprepop_populate(3)'s runs, for a call of no bytes and one of 2 MiB.
# KTAP on stdout. Needs the source tree and a compiler (not in the test VM).
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." 2> /dev/null && pwd)
man=$top/Documentation/man
. "$here/ktap_helpers.sh"

[ -d "$man" ] && [ -d "$top/build/include" ] && command -v cc > /dev/null ||
	ktap_skip_all "needs the source tree, its build and a compiler"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The first .EX block of EXAMPLES, without the roff escapes a reader never
# sees
example() {
	sed -n '/^\.SH EXAMPLES/,/^\.SH [^E]/p' "$1" |
		sed -n '/^\.EX/,/^\.EE/{/^\.EX/d;/^\.EE/q;p}' |
		sed -e 's/\\e/\\/g' -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" \
		    -e 's/\\(dq/"/g' -e 's/\\&//g'
}
pages=
for p in "$man"/*.3; do
	example "$p" | head -1 | grep -q '^#include' && pages="$pages $p"
done

cflags="-Wall -Wextra -Werror -I$top/build/include -I$top/uapi -I$top/user/include"
echo "TAP version 13"
echo "1..$(($(echo $pages | wc -w) + 1))"
for p in $pages; do
	name=$(basename "$p" .3)
	example "$p" > "$work/$name.c"
	cc $cflags -c -o "$work/$name.o" "$work/$name.c" 2> "$work/$name.err"
	status=$?
	[ $status = 0 ] || sed 's/^/# /' "$work/$name.err"
	ok $status "$name(3): the example compiles without a warning"
done

# prefault() as the page defines it, called as a VMM would, and for nothing
cat > "$work/main.c" <<'EOF'
#include <stddef.h>
#include <sys/mman.h>

int prefault(void *ram, size_t size);

int main(void)
{
	size_t len = 2 << 20;
	void *ram = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (ram == MAP_FAILED)
		return 2;
	if (prefault(ram, 0))
		return 3;
	/* Locked: the example asks for it; a memlock limit may refuse */
	prefault(ram, len);
	return 0;
}
EOF
cc $cflags -o "$work/populate" "$work/main.c" "$work/memprepop_populate.o" \
	"$top/build/lib/libmemprepop.a" -lnuma -lpthread 2> "$work/link.err" &&
	"$work/populate" 2> "$work/run.err"
status=$?
[ $status = 0 ] || { sed 's/^/# /' "$work/link.err"; echo "# exit $status"; }
ok $status "memprepop_populate(3): the example runs, also for no bytes"
ktap_finish
