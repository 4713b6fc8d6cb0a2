# The BPF backend's kernel program (src/bpf/*.bpf.c): compiled with clang
# -target bpf at build time, turned into a libbpf skeleton header by
# bpftool, included by src/bpfload/bpf_backend.c. CO-RE: the program
# declares the few kernel types it reads (src/bpf/kernel_types.h), so the
# build needs no vmlinux.h and no BTF on the build machine; the running
# kernel's BTF is needed only to load it.
BPFTOOL  ?= bpftool
BPF_ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine 2>/dev/null)
BPF_CFLAGS := -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -O2 -g -Wall -Werror \
              -I$(BPF_ARCH_INC) -Isrc/bpf
BPF_SKEL := $(BUILD)/bpf/record.skel.h

$(BUILD)/bpf/%.bpf.o: src/bpf/%.bpf.c $(wildcard src/bpf/*.h) | deps-build
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name ustack_$*_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/bpfload/bpf_backend.o $(CHECK)/obj/bpfload/bpf_backend.o: $(BPF_SKEL)
$(BUILD)/obj/bpfload/bpf_backend.o $(CHECK)/obj/bpfload/bpf_backend.o: BASE_CFLAGS += -I$(BUILD)/bpf
# the libFuzzer build of the library (make fuzz) too
$(BUILD)/fuzz/obj/bpfload/bpf_backend.o: $(BPF_SKEL)
$(BUILD)/fuzz/obj/bpfload/bpf_backend.o: FUZZ_CFLAGS += -I$(BUILD)/bpf

# keep the object: otherwise make deletes it as an intermediate and rebuilds
# the skeleton (and the backend) on every run
.SECONDARY: $(BUILD)/bpf/record.bpf.o

# the libFuzzer build (make fuzz) compiles the library too
$(BUILD)/fuzz/obj/bpfload/bpf_backend.o: $(BPF_SKEL)
$(BUILD)/fuzz/obj/bpfload/bpf_backend.o: FUZZ_CFLAGS += -I$(BUILD)/bpf
