# SPDX-License-Identifier: GPL-2.0
#
# make check: every stage below, each printing KTAP verdicts, summed up by
# selftests/ktap-summary into "N passed, N failed". A stage that fails
# without saying so in KTAP still counts as a failure.

.PHONY: check check-kernel check-compat check-docs check-host check-install \
	check-vm check-dkms check-deb check-debug check-qemu checkpatch \
	check-kernels check-rfc bench-rfc-qemu

CHECK_STAGES	:= check-kernel check-compat check-docs check-host \
		   check-install check-vm check-dkms check-deb

check: deps
	@$(MAKE) -s all
	@set -o pipefail; ( rc=0; t0=$$(date +%s); for stage in $(CHECK_STAGES); do \
	    t=$$(date +%s); \
	    $(MAKE) -s --no-print-directory $$stage || \
	      { echo "not ok check: make $$stage failed"; rc=1; }; \
	    echo "# time: $$stage $$(($$(date +%s) - t)) s"; \
	  done; echo "# time: check $$(($$(date +%s) - t0)) s after the build"; \
	  exit $$rc ) 2>&1 | tee $(B)/check.log | selftests/ktap-summary

# The kernel side's own quality gates, for the VM's kernel
checkpatch: $(KSFT)/kselftest_harness.h
	scripts/checkpatch $(KSRC)

check-kernel: $(KSFT)/kselftest_harness.h
	@scripts/verdict "kernel: checkpatch --strict" scripts/checkpatch $(KSRC)
	@scripts/verdict "kernel: W=1 C=2 (sparse) build clean for $(VM_KVER)" \
		scripts/build-module $(VM_KDIR) $(B)/kbuild C=2
	@scripts/verdict "kernel: the build for $(OLD_KVER), without vhost_task, stops and says why" \
		sh -c '! scripts/build-module $$0 $$1 > /dev/null 2>&1 && \
		grep -q "error: #error \"no vhost_task" $$1/build.log' \
		/lib/modules/$(OLD_KVER)/build $(B)/kbuild-old

# Other kernels the module must build for (probe/): every other installed
# Debian header tree with vhost_task, W=1 and sparse clean
COMPAT_KDIRS	= $(filter-out $(realpath $(VM_KDIR)),$(shell grep -l \
		  '^CONFIG_VHOST_TASK=y' /usr/src/linux-headers-*-amd64/.config \
		  2>/dev/null | xargs -r -n1 dirname))

# and the newest 7.x of Debian's, generic and PREEMPT_RT, in the trixie
# build root (testvm/debian-kernel)
check-compat:
	@for kdir in $(COMPAT_KDIRS); do v=$${kdir#/usr/src/linux-headers-}; \
	  scripts/verdict "kernel: builds for $$v (W=1 C=2)" \
	    scripts/build-module $$kdir $(B)/compat/$$v C=2; done; true
	@for f in amd64 rt-amd64; do \
	  if env=$$(testvm/debian-kernel --flavour $$f $(VM3_SERIES)); then \
	    eval "$$env"; \
	    scripts/verdict "kernel: builds for $$KVER (W=1 C=2)" \
	      scripts/build-module --root $$ROOT $$KDIR \
		$(B)/compat/$$KVER C=2; \
	  else echo "not ok kernel: Debian's newest $(VM3_SERIES).x $$f headers"; fi; \
	done

check-docs: $(KSFT)/kselftest_harness.h
	@scripts/verdict "docs: make htmldocs without a warning" \
		$(MAKE) -s htmldocs
	@scripts/check-errnos user/include/memprepop.h Documentation/man

check-host: lib tool selftests
	@selftests/run-host-tests $(LIBTESTS)

check-install: lib tool module docs
	@scripts/check-install $(VERSION) $(KRELEASE)

# Every selftest on three kernels: Debian 12's 6.1, without the module (the
# module's tests skip, the library's run its fallback), and with the module
# on Debian 12's 6.12 and on the newest 7.x Debian has. Each kernel runs whatever another failed. The timed races
# and the stress run take 5 s each here (make check-debug: 120 s). One boot
# a kernel, its guest with a third node of memory and no CPU (as hosts with
# CXL or HBM memory have) beside the two with a CPU each, as check-debug's.
check-vm: $(OLD_INITRD) $(VM_INITRD) $(VM3_INITRD)
	@. $(VM3_ENV); rc=0; \
	for k in "$(OLD_KVER) $(OLD_INITRD) /boot/vmlinuz-$(OLD_KVER)" \
		 "$(VM_KVER) $(VM_INITRD) /boot/vmlinuz-$(VM_KVER)" \
		 "$$KVER $(VM3_INITRD) $$VMLINUZ"; do \
	  set -- $$k; echo "# kernel $$1"; t=$$(date +%s); \
	  testvm/run --initrd $$2 --kernel $$3 --mem-only-node 1024 \
		--run 'echo "# workers: $$(cat /sys/class/misc/memprepop/workers 2>/dev/null || echo none)"; MEMPREPOP_STRESS_SECS=5 /selftests/run_kselftest.sh' || rc=1; \
	  echo "# time: selftests on $$1 $$(($$(date +%s) - t)) s"; \
	done; exit $$rc

# DKMS on each kernel of check-vm, the module it built loaded in each one's
# VM (none for 6.1), and the newest 7.x PREEMPT_RT headers (built only)
check-dkms: $(VM_INITRD) $(VM3_INITRD)
	@. $(VM3_ENV); rt_KVER=$$(testvm/debian-kernel --flavour rt-amd64 \
		$(VM3_SERIES) | sed -n 's/^KVER=\([^ ]*\).*/\1/p'); \
	packaging/check-dkms $(VERSION) \
	  !$(OLD_KVER) \
	  $(VM_KVER):$(VM_INITRD):/boot/vmlinuz-$(VM_KVER) \
	  $$KVER:$(VM3_INITRD):$$VMLINUZ:$$ROOT \
	  $${rt_KVER:-rt-headers-missing}:::$$ROOT

check-deb:
	@packaging/check-deb $(VERSION) $(VM_KVER)

# The debug kernel (not part of make check: its first build takes long)
DEBUG_FUZZ_ITERS ?= 100000
DEBUG_STRESS_SECS ?= 120
DEBUG_TIMEOUT	?= 10800
# DEBUG_TESTS: only these programs (wing_test lifetime_test
# libmemprepop:lib_test ...); all if empty
DEBUG_TESTS	?=

check-debug: deps
	@$(MAKE) -s lib tool examples ksft-install
	@set -o pipefail; scripts/check-debug $(B) $(KSRC) $(DEBUG_FUZZ_ITERS) \
		$(DEBUG_STRESS_SECS) $(DEBUG_TIMEOUT) "$(DEBUG_TESTS)" 2>&1 | \
		tee $(B)/check-debug.log | selftests/ktap-summary

# contrib/linux's RFC series (process_madvise() populating another
# process) on the kernel it is written for: Debian's newest 7.x source with
# the series and Debian's config, its kselftest in the test VM (not part of
# make check: the kernel's first build takes about 15 min here; cached, see
# testvm/rfc-kernel)
check-rfc: deps
	@$(MAKE) -s lib tool examples selftests ksft-install
	@set -o pipefail; scripts/check-rfc $(B) $(KSRC) 2>&1 | \
		tee $(B)/check-rfc.log | selftests/ktap-summary

# A stock QEMU (Debian's, scripts/qemu-debian) on the kernel of make
# check-rfc: its backends populated from outside by memprepop populate
# --pid against its own prealloc (bench/run --remote):
# results/vm-rfc-qemu.*. QUICK=1: 3 runs a cell.
bench-rfc-qemu: deps
	@$(MAKE) -s lib tool examples selftests ksft-install $(BENCH)
	@tree=$$(testvm/rfc-kernel) && s=$$(scripts/qemu-debian) && \
	testvm/mkinitramfs $(B) $(KSRC) $(B)/rfc/initramfs.cpio none \
		"$$tree" && \
	testvm/mkinitramfs-qemu $(B)/rfc/initramfs.cpio - \
		$(B)/rfc/initramfs-qemu.cpio "" "$$s" && \
	bench/run $(if $(QUICK),--quick) --remote --vm \
		$(B)/rfc/initramfs-qemu.cpio \
		"$$(cat $$tree/include/config/kernel.release)" \
		--vmlinuz "$$tree/arch/x86/boot/bzImage"

# Kernels beyond make check's three (not part of it: an hour more under
# TCG), each from Debian's image, the module built against its headers:
# the newest 6.18 (the longterm series), the newest 7.0 (Ubuntu 26.04's
# series) and the newest 7.x PREEMPT_RT. Every selftest, as check-vm, and
# DKMS, as check-dkms.
# CHECK_KERNELS: [FLAVOUR:]SERIES words (scripts/check-kernel)
CHECK_KERNELS	?= 6.18 7.0 rt-amd64:7

check-kernels: deps
	@$(MAKE) -s lib tool examples ksft-install
	@set -o pipefail; ( rc=0; t0=$$(date +%s); for k in $(CHECK_KERNELS); do \
	    scripts/check-kernel $(B) $(KSRC) $(VERSION) $$k || rc=1; done; \
	  echo "# time: check-kernels $$(($$(date +%s) - t0)) s"; exit $$rc ) \
	  2>&1 | tee $(B)/check-kernels.log | selftests/ktap-summary

# QEMU with contrib/qemu's series (QEMU=10.2 or QEMU=10.0 for one; both by
# default) against Debian's stock QEMU, on this host
# and in the test VM (not part of make check: its first build takes long;
# the build is cached, see scripts/qemu-build)
check-qemu: deps
	@$(MAKE) -s lib tool docs $(VM_INITRD)
	@set -o pipefail; scripts/check-qemu $(B) $(VM_INITRD) $(VM_KVER) \
		$(QEMU) 2>&1 | tee $(B)/check-qemu.log | selftests/ktap-summary

