# ustack - top-level Makefile (plain GNU make, no recursion).
#
#   make            build/ustack, build/libustack.a, build/libustack.so
#   make check      install missing packages, build with ASan+UBSan, run every test
#   make check-kernel  the real-kernel tests: Debian sid's 7.x kernel in QEMU
#   make demo       install missing packages, build, run the bundled demo
#   make bench      run every benchmark in bench/ (bench/*/run.sh, bench/instructions.sh,
#                   bench/record/kernel_ns.sh)
#   make fuzz       build libFuzzer targets (clang) into build/fuzz/
#   make fuzz-long  run every fuzz target for FUZZ_SECONDS (default 600) each
#
# Variants: objects of the release build live in build/obj, those of the
# sanitizer build in build/check/obj. Module sources are picked up by wildcard
# (src/<module>/*.c), so adding a file needs no edit here. Extra rules live in
# mk/*.mk.

CC      ?= gcc
CLANG   ?= clang
BUILD   := build
CHECK   := $(BUILD)/check
# The version is written once, in include/ustack/ustack.h
# (USTACK_VERSION_MAJOR/MINOR/PATCH); everything else reads it from there.
USTACK_H := include/ustack/ustack.h
VERSION_PART = $(shell sed -n 's/^\#define USTACK_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' $(USTACK_H))
VERSION_MAJOR := $(call VERSION_PART,MAJOR)
VERSION := $(VERSION_MAJOR).$(call VERSION_PART,MINOR).$(call VERSION_PART,PATCH)
# 0.x: a minor release may change the ABI, so the soname carries it
SONAME  := libustack.so.$(VERSION_MAJOR)$(if $(filter 0,$(VERSION_MAJOR)),.$(call VERSION_PART,MINOR))

# SFrame for our own code when the assembler can emit it (binutils >= 2.40).
GSFRAME := $(shell echo 'nop' | $(CC) -x assembler -Wa,--gsframe -c -o /dev/null - 2>/dev/null && echo -Wa,--gsframe)

WARN     := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wpointer-arith \
            -Werror=implicit-function-declaration -Werror=incompatible-pointer-types
BASE_CFLAGS := -std=gnu11 -g -O2 -fPIC -fvisibility=hidden -D_GNU_SOURCE \
            -Iinclude -Isrc $(WARN) $(GSFRAME)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
            -fno-omit-frame-pointer
LIB_LDLIBS := -lpthread -ldl
# libbpf and libdw are dlopen()ed at first use (src/common/dl_syms.h), so
# the library and the release CLI do not link them. Sanitizer builds do: a
# dlopen()ed libelf's thread-local error state is dynamic TLS, and GCC 12's
# LeakSanitizer crashes scanning it at exit ("Tracer caught signal 11");
# linked at start it is static TLS, and dlopen() finds it already loaded.
SAN_LDLIBS := -Wl,--push-state,--no-as-needed -lbpf -ldw -lelf -Wl,--pop-state

LIB_SRCS := $(filter-out src/cli/% src/bpf/% src/preload/%,$(wildcard src/*/*.c))
CLI_SRCS := $(wildcard src/cli/*.c)
HDRS     := $(wildcard include/ustack/*.h src/*/*.h)

REL_LIB_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
REL_CLI_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
CHK_LIB_OBJS := $(patsubst src/%.c,$(CHECK)/obj/%.o,$(LIB_SRCS))
CHK_CLI_OBJS := $(patsubst src/%.c,$(CHECK)/obj/%.o,$(CLI_SRCS))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(CHECK)/tests/%,$(UNIT_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_REPLAY := $(patsubst tests/fuzz/%.c,$(CHECK)/fuzz/%,$(FUZZ_SRCS))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

.PHONY: all check check-kernel demo bench fuzz fuzz-long deps deps-build clean check-build version soname abi-baseline

# the version, for scripts (tests/integration/abi_exports.sh)
version:
	@echo $(VERSION)

soname: # for the same scripts (install, abi_exports)
	@echo $(SONAME)
.DEFAULT_GOAL := all

all: $(BUILD)/ustack $(BUILD)/libustack.a $(BUILD)/libustack.so

# ---- build dependencies ----------------------------------------------------
# Before the first compile: the packages compiling needs (scripts/deps.sh
# --build, one dpkg-query, ~50 ms): installed as root, as make demo and make
# check do; otherwise one line naming the command, instead of a compiler
# error about a missing header.
deps-build:
	@bash scripts/deps.sh --build

# ---- release build -------------------------------------------------------
$(BUILD)/obj/%.o: src/%.c $(HDRS) | deps-build
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -c $< -o $@

# The installed static library: one member per object, internal names
# moved under ustack__ (scripts/static-lib.sh says why).
$(BUILD)/libustack.a: $(REL_LIB_OBJS) scripts/static-lib.sh
	@mkdir -p $(@D)
	bash scripts/static-lib.sh $@ $(REL_LIB_OBJS)

# The same objects unchanged, internal names included: for the in-tree
# benchmarks that measure internal functions (bench/cfi). Not installed.
$(BUILD)/libustack_internal.a: $(REL_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

# Exports: exactly the names listed in ustack.map (--no-undefined-version:
# a listed name that no longer exists fails the link).
$(BUILD)/libustack.so.$(VERSION): $(REL_LIB_OBJS) ustack.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=ustack.map \
	    -Wl,--no-undefined-version -o $@ $(REL_LIB_OBJS) $(LDFLAGS) $(LIB_LDLIBS)

$(BUILD)/libustack.so: $(BUILD)/libustack.so.$(VERSION)
	ln -sf libustack.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf libustack.so.$(VERSION) $@

$(BUILD)/ustack: $(REL_CLI_OBJS) $(BUILD)/libustack.a
	$(CC) -o $@ $(REL_CLI_OBJS) $(BUILD)/libustack.a $(LDFLAGS) $(LIB_LDLIBS) $(CLI_LDLIBS)

# ---- sanitizer build (make check) -----------------------------------------
$(CHECK)/obj/%.o: src/%.c $(HDRS) | deps-build
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(CFLAGS) -c $< -o $@

$(CHECK)/libustack.a: $(CHK_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The sanitizer runtimes linked into the command, which the tests start
# ~1,500 times: each start of the dynamically linked one relocated
# libasan and libubsan, and LeakSanitizer's exit check read both
# libraries' untouched .bss (4.4 MB of stack depot each): 80 -> 50 ms of
# CPU per `ustack --version`, 4,474 -> 2,875 page faults (docs/TESTING.md).
# Linked as a fixed-address executable (-no-pie; the objects stay PIC):
# the loader no longer relocates the 2.3 MB of ASan's global descriptors
# at every start, ~570 page faults: 2,864 -> 2,300, 59 -> 52 ms of CPU.
# tests/unit/san_bss.c backs the runtime's .bss with huge pages: 2,300 ->
# 1,083 page faults, 52 -> 39 ms (medians of 3 alternating rounds; the
# build phase in docs/TESTING.md).
$(CHECK)/obj/san_bss.o: tests/unit/san_bss.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -c $< -o $@

$(CHECK)/ustack: $(CHK_CLI_OBJS) $(CHECK)/obj/san_bss.o $(CHECK)/libustack.a
	$(CC) $(SAN_FLAGS) -static-libasan -static-libubsan -no-pie -o $@ $(CHK_CLI_OBJS) $(CHECK)/obj/san_bss.o $(CHECK)/libustack.a $(LIB_LDLIBS) $(SAN_LDLIBS) $(CLI_LDLIBS)

# The unit tests' own code at -O0 (the library they test is the -O2 one in
# $(CHECK)/libustack.a): a third of the compile time (test_trace.c 3.0 ->
# 1.0 s; all 54: 41 -> 24 s of CPU), and their run time did not grow.
$(CHECK)/tests/%: tests/unit/%.c tests/unit/test.h $(CHECK)/libustack.a
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -O0 $(SAN_FLAGS) -Itests/unit -o $@ $< $(CHECK)/libustack.a $(LIB_LDLIBS) $(SAN_LDLIBS) $(TEST_LDLIBS)

$(CHECK)/fuzz/%: tests/fuzz/%.c tests/fuzz/replay_main.c $(CHECK)/libustack.a
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -o $@ $< tests/fuzz/replay_main.c $(CHECK)/libustack.a $(LIB_LDLIBS) $(SAN_LDLIBS)

check-build: deps $(CHECK)/ustack $(CHECK)/libustack.a $(UNIT_BINS) $(FUZZ_REPLAY) all

# make check and check-build compile on every CPU unless told otherwise
# (-j N, -j1): two builds of every source (ASan and release) and a program
# per test take minutes one at a time.
ifneq ($(filter check check-build,$(MAKECMDGOALS)),)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
endif

# ONLY=REGEX: only the tests whose name matches; passed as written ($(value):
# make would expand "$|" in "^a$|^b$" as one of its own variables).
# JOBS=N: tests run at once (default: the CPUs; tests/run-tests.sh).
# The tests get make's MAKEFLAGS without -j and the jobserver: a test that
# runs make (install, abi_exports) would otherwise get "jobserver
# unavailable" warnings in the output it reads.
check: check-build
	@MAKEFLAGS='$(filter-out -j% --jobserver%,$(MAKEFLAGS))' \
	    ONLY='$(value ONLY)' JOBS='$(JOBS)' CHECK_DIR=$(CHECK) CC=$(CC) GSFRAME="$(GSFRAME)" SAN_FLAGS="$(SAN_FLAGS)" \
	    BASE_CFLAGS="$(BASE_CFLAGS)" LIB_LDLIBS="$(LIB_LDLIBS) $(SAN_LDLIBS)" \
	    bash tests/run-tests.sh

# ---- a real newer kernel (Debian sid's 7.x) in QEMU ----------------------------
# tests/kernel/run.sh: downloads the kernel once (build/kernel), boots it
# with an initramfs holding build/ustack and the test programs, runs
# tests/kernel/guest.sh inside; SKIP with the reason where it cannot run.
check-kernel: all
	@bash tests/kernel/run.sh

# ---- fuzzing (clang + libFuzzer) --------------------------------------------
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -Isrc -fsanitize=fuzzer-no-link,address,undefined
FUZZ_LIB_OBJS := $(patsubst src/%.c,$(BUILD)/fuzz/obj/%.o,$(LIB_SRCS))

$(BUILD)/fuzz/obj/%.o: src/%.c $(HDRS) | deps-build
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -c $< -o $@

$(BUILD)/fuzz/libustack.a: $(FUZZ_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/fuzz/%: tests/fuzz/%.c $(BUILD)/fuzz/libustack.a
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/fuzz/libustack.a $(LIB_LDLIBS) $(SAN_LDLIBS)

fuzz: $(FUZZ_BINS)
	@echo "run e.g.: $(BUILD)/fuzz/fuzz_sframe -max_total_time=60 tests/fuzz/corpus/sframe"

# every target for FUZZ_SECONDS (default 600) each, FUZZ_JOBS at a time;
# findings under build/fuzz-long/ (scripts/fuzz-long.sh)
fuzz-long: $(FUZZ_BINS)
	@BUILD=$(BUILD) bash scripts/fuzz-long.sh

# ---- ABI baseline -----------------------------------------------------------
# abi/libustack.abi describes the public ABI of the last release (abidw,
# public headers only); tests/integration/abi_check.sh diffs the built
# library against it. Record a deliberate change (a release that breaks the
# ABI, with a new soname) or a release (so that its new functions are
# checked from then on) with: make abi-baseline, and commit the file.
# comp-dir-path is dropped: it names the directory the build ran in.
abi-baseline: $(BUILD)/libustack.so.$(VERSION)
	@mkdir -p abi
	abidw --drop-private-types --drop-undefined-syms --no-corpus-path --short-locs \
	    --headers-dir include/ustack $< | sed "s/ comp-dir-path='[^']*'//" >abi/libustack.abi.tmp
	mv abi/libustack.abi.tmp abi/libustack.abi

# ---- set-up, demo, bench ---------------------------------------------------
deps:
	@bash scripts/deps.sh

demo: deps all
	@bash scripts/demo.sh

# bench/*/run.sh, then the measures that do not move with the machine:
# instructions (after bench/record/run.sh, whose traces it reports) and
# in-kernel ns per event against bpftrace (root, bpftrace and bpftool; a
# line says why when it cannot run). bench/record/backends.sh and
# bpf_cost.sh are not run: they compare recorders' losses and builds of
# ustack (docs/PERFORMANCE.md gives their commands).
bench: deps all
	@set -e; for b in bench/*/run.sh; do echo "== $$b"; bash $$b; done; \
	echo "== bench/instructions.sh"; bash bench/instructions.sh; \
	echo "== bench/record/kernel_ns.sh"; \
	if [ "$$(id -u)" != 0 ]; then echo "skipped: needs root (kernel.bpf_stats_enabled)"; \
	elif ! command -v bpftrace >/dev/null || ! command -v bpftool >/dev/null; then \
		echo "skipped: needs bpftrace and bpftool (apt-get install bpftrace bpftool)"; \
	else bash bench/record/kernel_ns.sh; fi

clean:
	rm -rf $(BUILD)

-include $(wildcard mk/*.mk)
