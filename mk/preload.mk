# libustack-alloc.so (src/preload/alloc.c): record --alloc's sampler,
# LD_PRELOADed into a command ustack starts. Built once without the
# sanitizers (it goes into programs that have none), beside each ustack
# that looks for it (build/ and build/check/); -Bsymbolic: its calls to
# its own hit functions go straight there, never through a PLT the
# program could interpose. scripts/check-tail-calls.sh checks each
# allocator function reaches ustack_alloc_hit by a jump (the kernel
# unwinds from the allocator's caller).
PRELOAD_SO := $(BUILD)/libustack-alloc.so

$(PRELOAD_SO): src/preload/alloc.c src/preload/alloc_hit.h src/bpf/alloc_draw.h \
		scripts/check-tail-calls.sh | deps-build
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -shared -Wl,-z,defs -Wl,-Bsymbolic -o $@.tmp $<
	bash scripts/check-tail-calls.sh $@.tmp
	mv $@.tmp $@

$(CHECK)/libustack-alloc.so: $(PRELOAD_SO)
	@mkdir -p $(@D)
	cp $< $@

all: $(PRELOAD_SO)
check-build: $(CHECK)/libustack-alloc.so
