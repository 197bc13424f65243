# SPDX-License-Identifier: GPL-2.0
#
# memprepop: `make` builds everything, `make check` tests it (natively and in
# a test VM), `make demo` shows it, `make vm` boots the test VM.
#
# KDIR=<kernel build dir> builds the module against other headers.

VERSION		:= 0.1.0
SOVERSION	:= 1

SHELL		:= /bin/bash
KVER		?= $(shell scripts/kernel-version 2>/dev/null)
KDIR		?= /lib/modules/$(KVER)/build
B		:= build
KSRC_TAR	?= $(firstword $(wildcard /usr/src/linux-source-6.1.tar.xz))
KSRC		:= $(B)/linux-source
KSFT		:= $(KSRC)/tools/testing/selftests

CC		?= cc
CFLAGS		?= -O2 -g
WARN		:= -Wall -Wextra -Werror=implicit-function-declaration
CPPFLAGS_USER	:= -Iuapi -Iuser/include -DMEMPREPOP_VERSION='"$(VERSION)"'
LDLIBS_USER	:= -lnuma -lpthread

LIB_SRCS	:= $(wildcard user/lib/*.c)
LIB_STATIC_OBJS	:= $(LIB_SRCS:user/lib/%.c=$(B)/obj/static/%.o)
LIB_SHARED_OBJS	:= $(LIB_SRCS:user/lib/%.c=$(B)/obj/shared/%.o)
LIB_A		:= $(B)/lib/libmemprepop.a
LIB_SO		:= $(B)/lib/libmemprepop.so.$(SOVERSION).0.0
LIB_SONAME	:= libmemprepop.so.$(SOVERSION)
PC		:= $(B)/lib/pkgconfig/memprepop.pc
TOOL		:= $(B)/bin/memprepop
KO		:= kmod/memprepop.ko
EXAMPLE		:= $(B)/bin/memprepop-example-vmm

SELFTESTS	:= $(patsubst selftests/%.c,$(B)/selftests/memprepop/%,\
		   $(wildcard selftests/*_test.c)) \
		   $(patsubst selftests/%,$(B)/selftests/memprepop/%,\
		   $(wildcard selftests/*_test.sh) selftests/ktap_helpers.sh)
LIBTESTS	:= $(patsubst user/tests/%.c,$(B)/tests/%,\
		   $(wildcard user/tests/*_test.c)) \
		   $(patsubst user/tests/%,$(B)/tests/%,\
		   $(wildcard user/tests/*_test.sh))
TEST_HELPERS	:= $(wildcard selftests/*.h)

PREFIX		?= /usr/local
BINDIR		?= $(PREFIX)/bin
LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
MANDIR		?= $(PREFIX)/share/man

.PHONY: all deps module lib tool selftests examples bench bench-vm clean check check-host \
	check-vm check-kernel check-compat check-install vm demo checkpatch \
	install install-user install-module install-dkms-source uninstall \
	check-dkms check-deb check-docs htmldocs check-debug

all: deps module lib tool selftests examples

# NO_DEPS=1: install nothing (a package build, say)
deps:
	@$(if $(NO_DEPS),:,scripts/install-deps)

# --- kernel module ----------------------------------------------------------
module: deps
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

$(KO): module

# --- library ----------------------------------------------------------------
$(B)/obj/static/%.o: user/lib/%.c user/lib/internal.h user/include/memprepop.h \
		     uapi/linux/memprepop.h Makefile | deps
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_USER) $(CPPFLAGS) -D_GNU_SOURCE $(CFLAGS) $(WARN) \
		-c -o $@ $<

$(B)/obj/shared/%.o: user/lib/%.c user/lib/internal.h user/include/memprepop.h \
		     uapi/linux/memprepop.h Makefile | deps
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_USER) $(CPPFLAGS) -D_GNU_SOURCE $(CFLAGS) $(WARN) -fPIC \
		-c -o $@ $<

$(LIB_A): $(LIB_STATIC_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(LIB_SO): $(LIB_SHARED_OBJS) user/lib/libmemprepop.map
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(LIB_SONAME) \
		-Wl,--version-script=user/lib/libmemprepop.map -Wl,-z,defs \
		-o $@ $(LIB_SHARED_OBJS) $(LDLIBS_USER)
	ln -sf $(@F) $(B)/lib/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(B)/lib/libmemprepop.so

PC_SED		= sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		  -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|'

$(PC): user/lib/memprepop.pc.in Makefile
	@mkdir -p $(@D)
	$(PC_SED) $< > $@

lib: $(LIB_A) $(LIB_SO) $(PC)

# Programs link the shared library and find it next to them, in ../lib.
LINK_LIB	:= -L$(B)/lib -lmemprepop -Wl,-rpath,'$$ORIGIN/../lib'

TOOL_SRCS	:= $(wildcard user/tool/*.c)

$(TOOL): $(TOOL_SRCS) user/tool/tool.h $(LIB_SO)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_USER) $(CPPFLAGS) -D_GNU_SOURCE $(CFLAGS) $(WARN) \
		$(LDFLAGS) -o $@ $(TOOL_SRCS) $(LINK_LIB) $(LDLIBS_USER)

tool: $(TOOL)

$(EXAMPLE): examples/vmm.c $(LIB_SO)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_USER) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) -o $@ $< \
		$(LINK_LIB) $(LDLIBS_USER)

examples: $(EXAMPLE)

# The benchmark driver, static against the library so that the VM needs
# nothing more
BENCH		:= $(B)/bin/prepop-bench

$(BENCH): bench/prepop-bench.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_USER) $(CPPFLAGS) -D_GNU_SOURCE $(CFLAGS) $(WARN) \
		$(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS_USER)

# make bench [QUICK=1]: on this host; make bench-vm: in the test VM, with
# the module. Results: results/*.md, *.json, *.png
bench: $(BENCH) $(TOOL)
	bench/run $(if $(QUICK),--quick)

bench-vm: $(BENCH) $(VM_INITRD)
	bench/run $(if $(QUICK),--quick) --vm $(VM_INITRD) $(KVER)

# --- tests --------------------------------------------------------------------
# The kselftest framework comes from Debian's linux-source-6.1, unpacked here.
$(KSFT)/kselftest_harness.h: | deps
	@test -n "$(KSRC_TAR)" || { echo "linux-source-6.1 not installed"; exit 1; }
	@mkdir -p $(KSRC)
	tar -xf $(KSRC_TAR) -C $(KSRC) --strip-components=1 \
		--wildcards '*/tools/testing/selftests/kselftest*' \
		'*/tools/testing/selftests/run_kselftest.sh' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch' '*/scripts/kernel-doc' \
		'*/Documentation/sphinx/*'
	touch $@

# The harness's EXPECT_*() compare with int literals and its signal handler
# has an unused parameter: those two warnings are the harness's, not ours.
KSFT_CFLAGS	:= -isystem $(KSFT) -Iselftests $(CPPFLAGS_USER) $(CFLAGS) $(WARN) \
		   -Wno-sign-compare -Wno-unused-parameter

$(B)/selftests/memprepop/%: selftests/%.c $(TEST_HELPERS) \
			    $(KSFT)/kselftest_harness.h $(LIB_SO)
	@mkdir -p $(@D)
	$(CC) $(KSFT_CFLAGS) -o $@ $< $(LINK_LIB) $(LDLIBS_USER)

$(B)/selftests/memprepop/%.sh: selftests/%.sh
	@mkdir -p $(@D)
	install -m 0755 $< $@

$(B)/tests/ktap_helpers.sh: selftests/ktap_helpers.sh
	@mkdir -p $(@D)
	install -m 0644 $< $@

$(B)/tests/%.sh: user/tests/%.sh
	@mkdir -p $(@D)
	install -m 0755 $< $@

$(B)/tests/%: user/tests/%.c $(TEST_HELPERS) $(KSFT)/kselftest_harness.h \
	      $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(KSFT_CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS_USER)

selftests: $(SELFTESTS) $(LIBTESTS) $(B)/tests/ktap_helpers.sh

# --- test VM --------------------------------------------------------------------
VM_INITRD	:= $(B)/vm/initramfs.cpio

$(VM_INITRD): all
	testvm/mkinitramfs $(B) $(KSRC) $@

vm: $(VM_INITRD)
	testvm/run --initrd $(VM_INITRD) --kver $(KVER) \
		$(if $(value RUN),--run '$(subst ','\'',$(value RUN))') $(foreach f,$(EXTRA),--extra $(f))

# --- the two commands of the README ------------------------------------------
check-host: all
	@selftests/run-host-tests $(LIBTESTS)

check-vm: $(VM_INITRD)
	@testvm/run --initrd $(VM_INITRD) --kver $(KVER) \
		--run '/selftests/run_kselftest.sh'
	@testvm/run --initrd $(VM_INITRD) --kver $(KVER) --node-mem 1024 \
		--mem-only-node 1024 \
		--run '/selftests/run_kselftest.sh -t memprepop:memonly_test'

check-dkms: $(VM_INITRD)
	@packaging/check-dkms $(VERSION) $(KVER) $(VM_INITRD)

check-deb: | deps
	@packaging/check-deb $(VERSION) $(KVER)

# Every stage runs; one that fails without saying so in KTAP still counts
CHECK_STAGES	:= check-kernel check-compat check-docs check-host check-install \
		   check-vm check-dkms check-deb

check: all
	@set -o pipefail; ( rc=0; for stage in $(CHECK_STAGES); do \
	    $(MAKE) -s --no-print-directory $$stage || \
	      { echo "not ok check: make $$stage failed"; rc=1; }; \
	  done; exit $$rc ) 2>&1 | tee $(B)/check.log | selftests/ktap-summary

# --- the debug kernel (not part of make check: its first build takes long) --
# Debian's 6.12 source built once with kernel/configs/debug.config and
# testvm/debug-kernel.config (cached, see testvm/debug-kernel); the module
# built against it; every selftest, the fuzzer at full length, fault
# injection and the stress run in a guest with a third, CPU-less node. Any
# splat, kmemleak report or hung task fails it.
DEBUG_B		:= $(B)/debug
DEBUG_FUZZ_ITERS ?= 100000
DEBUG_STRESS_SECS ?= 120
DEBUG_TIMEOUT	?= 10800
DEBUG_RUN	:= for f in /selftests/*/settings; do \
		     echo timeout=$(DEBUG_TIMEOUT) > $$f; done; \
		   MEMPREPOP_FUZZ_ITERS=$(DEBUG_FUZZ_ITERS) \
		   MEMPREPOP_STRESS_SECS=$(DEBUG_STRESS_SECS) \
		   /selftests/run_kselftest.sh

check-debug: all
	@set -o pipefail; ( \
	  tree=$$(testvm/debug-kernel) || \
	    { echo "not ok debug: debug kernel built"; exit 1; }; \
	  echo "ok debug: debug kernel $$(cat $$tree/include/config/kernel.release) ($$tree)"; \
	  rm -rf $(DEBUG_B); mkdir -p $(DEBUG_B)/mod; \
	  cp -r Kbuild kmod uapi $(DEBUG_B)/mod/; \
	  if $(MAKE) -C $$tree M=$(CURDIR)/$(DEBUG_B)/mod W=1 modules \
	       > $(DEBUG_B)/build.log 2>&1 && \
	     ! grep -qE 'warning:|error:' $(DEBUG_B)/build.log; \
	  then echo "ok debug: module builds against it (W=1)"; \
	  else cat $(DEBUG_B)/build.log; \
	       echo "not ok debug: module builds against it (W=1)"; exit 1; fi; \
	  testvm/mkinitramfs $(B) $(KSRC) $(DEBUG_B)/initramfs.cpio \
	    $(DEBUG_B)/mod/kmod/memprepop.ko && \
	  testvm/run --initrd $(DEBUG_B)/initramfs.cpio \
	    --kernel $$tree/arch/x86/boot/bzImage --node-mem 2048 \
	    --mem-only-node 1024 --timeout $$(($(DEBUG_TIMEOUT) + 600)) \
	    --run '$(DEBUG_RUN)' \
	) 2>&1 | tee $(B)/check-debug.log | selftests/ktap-summary

demo: $(VM_INITRD)
	testvm/run --initrd $(VM_INITRD) --kver $(KVER) --run '/usr/share/memprepop/demo'

KERNEL_SRCS	:= $(filter-out %.mod.c kmod/compat.h kmod/trace.h,\
		   $(wildcard kmod/*.c kmod/*.h)) uapi/linux/memprepop.h
CHECKPATCH	:= $(KSRC)/scripts/checkpatch.pl --no-tree --strict --terse \
		   --ignore FILE_PATH_CHANGES -f
# The two files whose very purpose checkpatch frowns on: version checks in
# the compat header, and the TRACE_EVENT() layout every trace header has.
CHECKPATCH_COMPAT := --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON
CHECKPATCH_TRACE := --ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT
CHECKPATCH_ALL	:= $(CHECKPATCH) $(KERNEL_SRCS) && \
		   $(CHECKPATCH) $(CHECKPATCH_COMPAT) kmod/compat.h && \
		   $(CHECKPATCH) $(CHECKPATCH_TRACE) kmod/trace.h

# Other kernels the module must build for (compat.h): every other installed
# Debian header tree, W=1 and sparse clean
COMPAT_KDIRS	= $(filter-out $(realpath $(KDIR)),\
		  $(wildcard /usr/src/linux-headers-*-amd64))

check-compat: | deps
	@for kdir in $(COMPAT_KDIRS); do \
	  v=$${kdir#/usr/src/linux-headers-}; d=$(B)/compat/$$v; \
	  rm -rf $$d; mkdir -p $$d; cp -r Kbuild kmod uapi $$d/; \
	  if $(MAKE) -C $$kdir M=$(CURDIR)/$$d W=1 C=2 modules \
	       > $$d/build.log 2>&1 && ! grep -qE 'warning:|error:' $$d/build.log; \
	  then echo "ok kernel: builds for $$v (W=1 C=2)"; \
	  else grep -E 'warning:|error:' $$d/build.log; \
	       echo "not ok kernel: builds for $$v (W=1 C=2)"; fi; \
	done

checkpatch: $(KSFT)/kselftest_harness.h
	$(CHECKPATCH_ALL)

# The kernel side's own quality gates, reported as test verdicts
check-kernel: $(KSFT)/kselftest_harness.h | deps
	@if { $(CHECKPATCH_ALL); } > $(B)/checkpatch.log 2>&1; \
	then echo "ok kernel: checkpatch --strict"; \
	else cat $(B)/checkpatch.log; echo "not ok kernel: checkpatch --strict"; fi
	@$(MAKE) -s -C $(KDIR) M=$(CURDIR) clean
	@$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 C=2 modules > $(B)/kbuild.log 2>&1; \
	if grep -E 'warning:|error:' $(B)/kbuild.log; \
	then echo "not ok kernel: W=1 C=2 (sparse) build clean"; \
	else echo "ok kernel: W=1 C=2 (sparse) build clean"; fi

# --- documentation ----------------------------------------------------------------
# Sphinx with the kernel's kernel-doc extension (from linux-source), warnings
# are errors: the ABI pages are pulled from the header's kernel-doc
htmldocs: $(KSFT)/kselftest_harness.h | deps
	MEMPREPOP_KSRC=$(CURDIR)/$(KSRC) sphinx-build -q -W --keep-going \
		-b html Documentation $(B)/htmldocs
	@echo "documentation in $(B)/htmldocs/index.html"

check-docs: $(KSFT)/kselftest_harness.h | deps
	@if MEMPREPOP_KSRC=$(CURDIR)/$(KSRC) sphinx-build -q -W --keep-going \
	     -b html Documentation $(B)/htmldocs > $(B)/htmldocs.log 2>&1; \
	then echo "ok docs: make htmldocs without a warning"; \
	else cat $(B)/htmldocs.log; echo "not ok docs: make htmldocs without a warning"; fi

# --- install --------------------------------------------------------------------
MANPAGES	:= $(wildcard Documentation/man/*.[0-9])
# udev reads /usr/lib/udev/rules.d whatever PREFIX is
UDEVRULESDIR	?= /usr/lib/udev/rules.d
DOCDIR		?= $(PREFIX)/share/doc/memprepop
DKMS_SRC	= /usr/src/memprepop-$(VERSION)
INSTALLED	= $(BINDIR)/memprepop $(LIBDIR)/libmemprepop.a \
		  $(LIBDIR)/libmemprepop.so.$(SOVERSION).0.0 \
		  $(LIBDIR)/$(LIB_SONAME) $(LIBDIR)/libmemprepop.so \
		  $(LIBDIR)/pkgconfig/memprepop.pc $(INCLUDEDIR)/memprepop.h \
		  $(INCLUDEDIR)/linux/memprepop.h \
		  $(UDEVRULESDIR)/60-memprepop.rules \
		  $(DOCDIR)/examples/modules-load.d/memprepop.conf \
		  $(foreach m,$(MANPAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))

install: install-user install-module

# The module, through kbuild, into /lib/modules/<version>/extra/kmod/
# (unsigned: signing needs the kernel's build key, which headers lack)
install-module: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=extra \
		CONFIG_MODULE_SIG_ALL= \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) modules_install

# The module's source where DKMS looks for it (the memprepop-dkms package)
install-dkms-source:
	install -d $(DESTDIR)$(DKMS_SRC)/kmod $(DESTDIR)$(DKMS_SRC)/uapi/linux
	install -m 0644 Kbuild dkms.conf $(DESTDIR)$(DKMS_SRC)/
	install -m 0644 $(filter-out %.mod.c,$(wildcard kmod/*.c)) kmod/*.h \
		kmod/Kbuild $(DESTDIR)$(DKMS_SRC)/kmod/
	install -m 0644 uapi/linux/memprepop.h $(DESTDIR)$(DKMS_SRC)/uapi/linux/

install-user: lib tool
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/linux $(DESTDIR)$(UDEVRULESDIR) \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d
	install -m 0755 $(TOOL) $(DESTDIR)$(BINDIR)/memprepop
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libmemprepop.so
	$(PC_SED) user/lib/memprepop.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/memprepop.pc
	install -m 0644 user/include/memprepop.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 0644 uapi/linux/memprepop.h $(DESTDIR)$(INCLUDEDIR)/linux/
	install -m 0644 packaging/udev/60-memprepop.rules $(DESTDIR)$(UDEVRULESDIR)/
	install -m 0644 packaging/modules-load.d/memprepop.conf \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d/
	for m in $(MANPAGES); do \
	  s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; \
	  install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; done

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED)) \
		$(DESTDIR)/lib/modules/$(KVER)/extra/kmod/memprepop.ko*
	$(if $(DESTDIR),,depmod $(KVER))

# A program of ours built against the installed library through pkg-config,
# shared and static; then uninstall leaves nothing behind
check-install: lib tool module
	@d=$$(mktemp -d); trap 'rm -rf $$d' EXIT; \
	$(MAKE) -s install DESTDIR=$$d PREFIX=/usr/local > $$d/log 2>&1 || \
	  { cat $$d/log; echo "not ok install: make install"; exit 1; }; \
	test -e $$d/lib/modules/$(KVER)/extra/kmod/memprepop.ko && \
	  test -e $$d/usr/lib/udev/rules.d/60-memprepop.rules && \
	  test -e $$d/usr/local/share/man/man4/memprepop.4 && \
	  echo "ok install: module in extra/, udev rule, man pages" || \
	  echo "not ok install: module in extra/, udev rule, man pages"; \
	export PKG_CONFIG_PATH=$$d/usr/local/lib/pkgconfig \
	       PKG_CONFIG_SYSROOT_DIR=$$d; \
	if $(CC) -o $$d/consumer user/tests/consumer.c \
	     $$(pkg-config --cflags --libs memprepop) && \
	   LD_LIBRARY_PATH=$$d/usr/local/lib $$d/consumer; \
	then echo "ok install: a program links libmemprepop.so via pkg-config"; \
	else echo "not ok install: a program links libmemprepop.so via pkg-config"; fi; \
	if $(CC) -o $$d/consumer-static user/tests/consumer.c \
	     $$(pkg-config --cflags memprepop) $$d/usr/local/lib/libmemprepop.a \
	     $$(pkg-config --static --libs-only-l memprepop | sed 's/-lmemprepop//') && \
	   $$d/consumer-static; \
	then echo "ok install: a program links libmemprepop.a via pkg-config --static"; \
	else echo "not ok install: a program links libmemprepop.a via pkg-config --static"; fi; \
	objdump -p $$d/usr/local/lib/libmemprepop.so | grep -q 'SONAME.*$(LIB_SONAME)' && \
	  echo "ok install: soname $(LIB_SONAME)" || echo "not ok install: soname $(LIB_SONAME)"; \
	$(MAKE) -s uninstall DESTDIR=$$d PREFIX=/usr/local; \
	left=$$(find $$d/usr $$d/lib/modules/*/extra -type f -o -type l | wc -l); \
	[ $$left = 0 ] && echo "ok install: make uninstall removes it all" || \
	  echo "not ok install: make uninstall leaves $$left files"

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null
	rm -rf $(B)
