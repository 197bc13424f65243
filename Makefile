# SPDX-License-Identifier: GPL-2.0
#
# memprepop: `make` builds, `make install` installs, `make check` tests (see
# check.mk), `make deps` installs with apt what building and testing need
# (make check, make demo, the VM and benchmark targets do that themselves;
# no build target does).
#
# Each directory builds itself: kmod/ through Kbuild, user/ (the library,
# the tool and the library's tests), examples/, bench/, selftests/ (on the
# kernel's lib.mk), Documentation/; Makefile.common is what they share. This
# one delegates to them, builds the test VM and installs.
#
# The module is built for KDIR: the running kernel's build tree when it has
# one, else the test VM's kernel (Debian's linux-headers-amd64). The VM
# targets always build it for the VM's kernel, apart, in build/vm/.

# Relative here, as the paths of build products have always been named
# (make build/vm/initramfs.cpio); absolute for each directory's Makefile
B		:= build
include Makefile.common
SUBMAKE		= $(MAKE) B=$(abspath $(B))

# --- kernels ----------------------------------------------------------------
# The test VM boots Debian 12's newest 6.12 (never hard-coded): the module
# needs vhost_task (6.11 and later, kmod/vtask.c). Debian 12's own 6.1 has
# none: its VM has no module, and tests the library's fallback alone.
VM_SERIES	:= 6.12
VM_KVER		?= $(shell scripts/kernel-version $(VM_SERIES) 2>/dev/null)
VM_KDIR		:= /lib/modules/$(VM_KVER)/build
OLD_SERIES	:= 6.1
OLD_KVER	?= $(shell scripts/kernel-version $(OLD_SERIES) 2>/dev/null)
RUNNING_KDIR	:= /lib/modules/$(shell uname -r)/build
KDIR		?= $(if $(wildcard $(RUNNING_KDIR)/Makefile),$(RUNNING_KDIR),$(VM_KDIR))
# The release modules built there are for (Debian's kernel.release file holds
# the upstream version, utsrelease.h the real one)
KRELEASE	= $(shell sed -n 's/.*UTS_RELEASE "\(.*\)"/\1/p' \
		  $(KDIR)/include/generated/utsrelease.h 2>/dev/null)

# The kselftest framework, checkpatch and kernel-doc come from Debian's
# linux-source-6.1, unpacked into $(KSRC) (Makefile.common)
KSRC_TAR	?= $(firstword $(wildcard /usr/src/linux-source-6.1.tar.xz))

KO		:= kmod/memprepop.ko

# Man pages and dkms.conf name the version: generated into build/
MANPAGES	:= $(patsubst Documentation/man/%,$(B)/man/%,\
		   $(wildcard Documentation/man/*.[0-9]))
DKMS_CONF	:= $(B)/dkms.conf

# The module's selftests: a kselftest directory of their own (selftests/)
KSFT_OUT	:= $(B)/selftests/memprepop
KSFT_MAKE	:= $(MAKE) -C selftests KSFT_DIR=$(abspath $(KSFT)) \
		   OUTPUT=$(abspath $(KSFT_OUT))
# The library's tests (user/tests), as check-host runs them
LIBTESTS	:= $(patsubst user/tests/%.c,$(B)/tests/%,\
		   $(wildcard user/tests/*_test.c)) \
		   $(patsubst user/tests/%,$(B)/tests/%,\
		   $(wildcard user/tests/*_test.sh))

.PHONY: bench-virtio-mem all deps module lib tool selftests examples docs bench bench-vm \
	bench-vmm bench-vmm-vm bench-qemu bench-qemu-vm \
	htmldocs clean vm demo ksft-install install install-user install-module \
	install-dkms-source uninstall uninstall-module install-udev \
	uninstall-udev

# `make`: everything this machine can build; what it cannot (the module
# without a kernel build tree, the selftests without linux-source) is named,
# with what would provide it, and the rest is built all the same
all: lib tool examples docs
	@if [ ! -f $(KDIR)/Makefile ]; then \
	   echo "make: module not built: no kernel build tree $(KDIR)" \
	   "(linux-headers-$$(uname -r), or make deps)"; \
	 elif { [ -f $(KDIR)/.config ] && \
		! grep -q '^CONFIG_VHOST_TASK=y' $(KDIR)/.config; } || \
	      [ "$$(printf '%s\n' 6.11 '$(KRELEASE)' | sort -V | head -n 1)" \
		!= 6.11 ]; then \
	   echo "make: module not built: $(KRELEASE) has no vhost_task" \
	   "(Linux 6.11 and later); libmemprepop works without it"; \
	 else $(MAKE) --no-print-directory module; fi
	@if [ -n "$(KSRC_TAR)" ]; then $(MAKE) --no-print-directory selftests; \
	 else echo "make: selftests not built: no linux-source-6.1" \
	   "(make deps installs it)"; fi

deps:
	@scripts/install-deps

# --- kernel module ----------------------------------------------------------
module:
	@test -f $(KDIR)/Makefile || { echo "module: no kernel build tree" \
	  "$(KDIR) (make deps installs Debian's headers)" >&2; exit 1; }
	@echo "module: building for $(KRELEASE) ($(KDIR))"
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

$(KO): module

# --- user space, documentation: each directory's own Makefile ---------------
lib tool:
	+$(SUBMAKE) -C user $@

examples: lib
	+$(SUBMAKE) -C examples

$(BENCH): lib
	+$(SUBMAKE) -C bench

docs:
	+$(SUBMAKE) -C Documentation man

htmldocs: $(KSFT)/kselftest_harness.h
	+$(SUBMAKE) -C Documentation htmldocs

$(DKMS_CONF): dkms.conf.in VERSION
	@mkdir -p $(@D)
	$(SUBST) $< > $@

debian/changelog: debian/changelog.in VERSION
	$(SUBST) $< > $@

# --- tests --------------------------------------------------------------------
$(KSFT)/kselftest_harness.h:
	@test -n "$(KSRC_TAR)" || { echo "linux-source-6.1 is not installed" \
	  "(make deps installs it)" >&2; exit 1; }
	@mkdir -p $(KSRC)
	tar -xf $(KSRC_TAR) -C $(KSRC) --strip-components=1 \
		--wildcards '*/tools/testing/selftests/kselftest*' \
		'*/tools/testing/selftests/lib.mk' \
		'*/tools/testing/selftests/run_kselftest.sh' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch' '*/scripts/kernel-doc' \
		'*/Documentation/sphinx/*'
	touch $@

selftests: $(KSFT)/kselftest_harness.h lib
	+$(SUBMAKE) -C user tests
	@mkdir -p $(KSFT_OUT)
	+$(KSFT_MAKE)

# --- test VM ------------------------------------------------------------------
# The module for the VM's kernel, built apart from kmod/
VM_KO		:= $(B)/vm/mod/kmod/memprepop.ko
MODULE_SRC	:= $(filter-out kmod/probes.h,$(wildcard Kbuild kmod/*.c \
		   kmod/*.h kmod/Kbuild kmod/probe/* uapi/linux/*.h common/*.h))
VM_INITRD	:= $(B)/vm/initramfs.cpio
KSFT_INSTALL	:= $(B)/vm/kselftest

$(VM_KO): $(MODULE_SRC)
	@test -n "$(VM_KVER)" || { echo "no $(VM_SERIES) kernel installed" \
		"(make deps installs it)" >&2; exit 1; }
	@echo "module: building for the test VM's $(VM_KVER)"
	@scripts/build-module $(VM_KDIR) $(B)/vm/mod

# The selftests as the kernel's "make install" of selftests lays them out
ksft-install: selftests
	rm -rf $(KSFT_INSTALL)
	+$(KSFT_MAKE) -s install INSTALL_PATH=$(abspath $(KSFT_INSTALL))/memprepop
	+$(KSFT_MAKE) -s --no-print-directory emit_tests COLLECTION=memprepop \
		> $(KSFT_INSTALL)/kselftest-list.txt

$(VM_INITRD): $(VM_KO) lib tool examples ksft-install
	testvm/mkinitramfs $(B) $(KSRC) $@ $(VM_KO)

# Debian 12's 6.1, without the module
OLD_INITRD	:= $(B)/vm-$(OLD_SERIES)/initramfs.cpio

$(OLD_INITRD): $(VM_INITRD)
	@test -n "$(OLD_KVER)" || { echo "no $(OLD_SERIES) kernel installed" \
		"(make deps installs it)" >&2; exit 1; }
	testvm/mkinitramfs $(B) $(KSRC) $@ none /lib/modules/$(OLD_KVER)

# make vm [KERNEL=6.1|7] [RUN='...'] [EXTRA=file...]: boot the test VM
# The newest 7.x Debian has (trixie-backports, found at run time), the
# module built in the trixie build root against its headers, the image and
# modules unpacked into the cache (testvm/debian-kernel). kernel.env holds
# KVER, KDIR, ROOT, VMLINUZ and MODULES; rewritten only when they change.
VM3_SERIES	:= 7
VM3_ENV		:= $(B)/vm-$(VM3_SERIES)/kernel.env
VM3_KO		:= $(B)/vm-$(VM3_SERIES)/mod/kmod/memprepop.ko
VM3_INITRD	:= $(B)/vm-$(VM3_SERIES)/initramfs.cpio

$(VM3_ENV): FORCE
	@mkdir -p $(@D)
	@testvm/debian-kernel $(VM3_SERIES) > $@.new && \
	  { cmp -s $@.new $@ || mv $@.new $@; }; rm -f $@.new

$(VM3_KO): $(MODULE_SRC) $(VM3_ENV)
	@. $(VM3_ENV) && echo "module: building for the test VM's $$KVER" && \
	  scripts/build-module --root $$ROOT $$KDIR $(B)/vm-$(VM3_SERIES)/mod

$(VM3_INITRD): $(VM3_KO) $(VM_INITRD)
	@. $(VM3_ENV) && testvm/mkinitramfs $(B) $(KSRC) $@ $(VM3_KO) $$MODULES

.PHONY: FORCE
FORCE:

# KERNEL=7 (VM3_SERIES: Debian's newest 7.x, whose version and image
# kernel.env gives at run time) or 6.1 (OLD_SERIES: no module); Debian 12's
# 6.12 otherwise
RUN_VM3		= $(filter $(VM3_SERIES),$(KERNEL))
RUN_OLD		= $(filter $(OLD_SERIES),$(KERNEL))
RUN_KVER	= $(if $(RUN_OLD),$(OLD_KVER),$(VM_KVER))
RUN_INITRD	= $(if $(RUN_VM3),$(VM3_INITRD),$(if $(RUN_OLD),$(OLD_INITRD),$(VM_INITRD)))
# For a recipe: what sets the kernel up (. kernel.env), and the bench's
# --vm arguments after the initramfs
RUN_ENV		= $(if $(RUN_VM3),. $(VM3_ENV) &&)
RUN_BENCH_VM	= $(RUN_INITRD) $(if $(RUN_VM3),$$KVER --vmlinuz $$VMLINUZ,$(RUN_KVER))

vm: deps
	+$(MAKE) --no-print-directory $(RUN_INITRD)
	$(RUN_ENV) testvm/run --initrd $(RUN_INITRD) \
		$(if $(RUN_VM3),--kernel $$VMLINUZ,--kver $(RUN_KVER)) \
		$(if $(value RUN),--run '$(subst ','\'',$(value RUN))') $(foreach f,$(EXTRA),--extra $(f))

demo: deps
	+$(MAKE) --no-print-directory $(VM_INITRD)
	testvm/run --initrd $(VM_INITRD) --kver $(VM_KVER) \
		--run '/usr/share/memprepop/demo'

# make bench [QUICK=1]: on this host; make bench-vm [KERNEL=7]: in the
# test VM, with the module. Results: results/*.md, *.json, *.png
bench: deps
	+$(MAKE) --no-print-directory $(BENCH) tool
	bench/run $(if $(QUICK),--quick)

bench-vm: deps
	+$(MAKE) --no-print-directory $(BENCH) $(RUN_INITRD)
	$(RUN_ENV) bench/run $(if $(QUICK),--quick) --vm $(RUN_BENCH_VM)

# The VMM scenarios (regions, small calls, background): bench/run --vmm
bench-vmm: deps
	+$(MAKE) --no-print-directory $(BENCH) tool
	bench/run $(if $(QUICK),--quick) --vmm

bench-vmm-vm: deps
	+$(MAKE) --no-print-directory $(BENCH) $(RUN_INITRD)
	$(RUN_ENV) bench/run $(if $(QUICK),--quick) --vmm --vm $(RUN_BENCH_VM)

# QEMU with one of contrib/qemu's series (QEMU=10.2, the default, or 10.0)
# against stock QEMU: the same source built without the series
# (scripts/qemu-build), or QEMU_STOCK=PATH (Debian 13's own binary:
# QEMU_STOCK=$(scripts/qemu-debian [trixie]))
QEMU_SERIES	= $(or $(QEMU),10.2)
QEMU_MPP	= $$(scripts/qemu-build $(B) --qemu $(QEMU_SERIES))/qemu-system-x86_64
QEMU_STOCK	= $$(scripts/qemu-build $(B) --qemu $(QEMU_SERIES) \
		  --stock)/qemu-system-x86_64
bench-qemu: deps
	+$(MAKE) --no-print-directory -s $(BENCH) lib tool docs
	q="$(QEMU_MPP)" && s="$(QEMU_STOCK)" && \
	bench/run $(if $(QUICK),--quick) --qemu "$$q" $${s:+--qemu-stock "$$s"}

# make bench-virtio-mem [QUICK=1]: QEMU 10.0 with the series (its backend
# given prealloc-method=memprepop, its device memdev-prealloc-threads=on)
# against stock
# on this host, a virtio-mem plug of 512 MiB with prealloc=on, the test VM's
# kernel as guest, with this host's free page reporting as it is and then
# off: results/host-qemu-10.0-virtio-mem{,-no-reporting}.{md,json}
VMEM_RESULT	= results/host-qemu-10.0-virtio-mem
bench-virtio-mem: deps
	+$(MAKE) --no-print-directory -s $(VM_INITRD) lib
	q=$$(scripts/qemu-build $(B) --qemu 10.0)/qemu-system-x86_64 && \
	s=$$(scripts/qemu-build $(B) --qemu 10.0 --stock)/qemu-system-x86_64 && \
	for how in "" --no-page-reporting; do \
		r=$(VMEM_RESULT)$${how:+-no-reporting}$(if $(QUICK),-quick) && \
		LD_LIBRARY_PATH=$(B)/lib contrib/qemu/virtio-mem-plug \
			--kernel /boot/vmlinuz-$(VM_KVER) \
			--initrd $(VM_INITRD) \
			--modules /lib/modules/$(VM_KVER)/kernel/drivers/virtio \
			--size 512 --threads 2 --reps $(if $(QUICK),3,7) --sample \
			--warmup $$how --json $$r.json --md $$r.md \
			--backend patched:prealloc-method=memprepop \
			--device patched:memdev-prealloc-threads=on \
			stock="$$s" patched="$$q" || exit 1; \
	done

bench-qemu-vm: deps
	+$(MAKE) --no-print-directory -s $(BENCH) $(VM_INITRD) lib tool docs
	q="$(QEMU_MPP)" && s="$(QEMU_STOCK)" && \
	testvm/mkinitramfs-qemu $(VM_INITRD) "$$q" \
		$(B)/qemu-$(QEMU_SERIES)/initramfs.cpio "" $$s && \
	bench/run $(if $(QUICK),--quick) --qemu "$$q" $${s:+--qemu-stock "$$s"} \
		--vm $(B)/qemu-$(QEMU_SERIES)/initramfs.cpio $(VM_KVER)

# --- install --------------------------------------------------------------------
# make install puts the library, headers, pkg-config file, tool, man pages and
# examples under DESTDIR + PREFIX, and nothing anywhere else; make uninstall
# removes them. The system's parts have targets of their own, for root:
# install-module (the running kernel, or KDIR=), install-udev (the rule that
# gives /dev/memprepop to the kvm group) and install-dkms-source.
DOCDIR		?= $(PREFIX)/share/doc/memprepop
# udev reads /usr/lib/udev/rules.d (and /etc/udev/rules.d) whatever PREFIX is
UDEVRULESDIR	?= /usr/lib/udev/rules.d
DKMS_SRC	= /usr/src/memprepop-$(VERSION)
# The kernel header under the library's own directory, never linux-libc-dev's
# /usr/include/linux: pkg-config --cflags names it
UAPI_INCLUDEDIR	:= $(INCLUDEDIR)/memprepop
INSTALLED	= $(BINDIR)/memprepop $(LIBDIR)/libmemprepop.a \
		  $(LIBDIR)/$(notdir $(LIB_SO)) \
		  $(LIBDIR)/$(LIB_SONAME) $(LIBDIR)/libmemprepop.so \
		  $(LIBDIR)/pkgconfig/memprepop.pc $(INCLUDEDIR)/memprepop.h \
		  $(UAPI_INCLUDEDIR)/linux/memprepop.h \
		  $(INCLUDEDIR)/memprepop/version.h \
		  $(DOCDIR)/examples/modules-load.d/memprepop.conf \
		  $(DOCDIR)/examples/udev/60-memprepop.rules \
		  $(DOCDIR)/examples/vmm.c \
		  $(foreach m,$(MANPAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
# install-module's kernel: the running one unless KDIR is given
INSTALL_KDIR	= $(if $(filter command line environment,$(origin KDIR)),$(KDIR),$(RUNNING_KDIR))
INSTALL_KREL	= $(shell sed -n 's/.*UTS_RELEASE "\(.*\)"/\1/p' \
		  $(INSTALL_KDIR)/include/generated/utsrelease.h 2>/dev/null)

install: install-user

# The module, through kbuild, into /lib/modules/<version>/extra/kmod/
# (unsigned: signing needs the kernel's build key, which headers lack)
install-module:
	@test -f $(INSTALL_KDIR)/Makefile || { echo "install-module: no" \
	  "headers in $(INSTALL_KDIR) (apt install linux-headers-$$(uname -r)," \
	  "or KDIR=)" >&2; exit 1; }
	$(MAKE) -C $(INSTALL_KDIR) M=$(CURDIR) modules
	$(MAKE) -C $(INSTALL_KDIR) M=$(CURDIR) INSTALL_MOD_DIR=extra \
		CONFIG_MODULE_SIG_ALL= \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) modules_install

uninstall-module:
	rm -f $(DESTDIR)/lib/modules/$(INSTALL_KREL)/extra/kmod/memprepop.ko*
	$(if $(DESTDIR),,depmod $(INSTALL_KREL))

# The rule that makes /dev/memprepop 0660 root:kvm
install-udev:
	install -d $(DESTDIR)$(UDEVRULESDIR)
	install -m 0644 packaging/udev/60-memprepop.rules $(DESTDIR)$(UDEVRULESDIR)/

uninstall-udev:
	rm -f $(DESTDIR)$(UDEVRULESDIR)/60-memprepop.rules

# The module's source where DKMS looks for it (the memprepop-dkms package)
install-dkms-source: $(DKMS_CONF)
	install -d $(DESTDIR)$(DKMS_SRC)/kmod/probe \
		$(DESTDIR)$(DKMS_SRC)/uapi/linux $(DESTDIR)$(DKMS_SRC)/common
	install -m 0644 Kbuild $(DKMS_CONF) $(DESTDIR)$(DKMS_SRC)/
	install -m 0644 $(filter-out %.mod.c,$(wildcard kmod/*.c)) \
		$(filter-out kmod/probes.h,$(wildcard kmod/*.h)) \
		kmod/Kbuild $(DESTDIR)$(DKMS_SRC)/kmod/
	install -m 0644 kmod/probe/*.c $(DESTDIR)$(DKMS_SRC)/kmod/probe/
	install -m 0755 kmod/probe/run $(DESTDIR)$(DKMS_SRC)/kmod/probe/
	install -m 0644 uapi/linux/memprepop.h $(DESTDIR)$(DKMS_SRC)/uapi/linux/
	install -m 0644 common/crew.h $(DESTDIR)$(DKMS_SRC)/common/

install-user: lib tool docs
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(UAPI_INCLUDEDIR)/linux \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d \
		$(DESTDIR)$(DOCDIR)/examples/udev
	install -m 0755 $(TOOL) $(DESTDIR)$(BINDIR)/memprepop
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libmemprepop.so
	$(SUBST) user/lib/memprepop.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/memprepop.pc
	install -m 0644 user/include/memprepop.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 0644 $(VERSION_H) $(DESTDIR)$(INCLUDEDIR)/memprepop/
	install -m 0644 uapi/linux/memprepop.h $(DESTDIR)$(UAPI_INCLUDEDIR)/linux/
	install -m 0644 packaging/modules-load.d/memprepop.conf \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d/
	install -m 0644 packaging/udev/60-memprepop.rules \
		$(DESTDIR)$(DOCDIR)/examples/udev/
	install -m 0644 examples/vmm.c $(DESTDIR)$(DOCDIR)/examples/
	for m in $(MANPAGES); do \
	  s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; \
	  install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; done

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(UAPI_INCLUDEDIR)/linux $(DESTDIR)$(UAPI_INCLUDEDIR) \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d \
		$(DESTDIR)$(DOCDIR)/examples/udev $(DESTDIR)$(DOCDIR)/examples \
		$(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null
	rm -rf $(B) debian/changelog

include check.mk
