# test_alloc_draw compares the kernel's integer draw (src/bpf/alloc_draw.h)
# with the exponential law in floating point: libm (the library itself
# links none)
$(CHECK)/tests/test_alloc_draw: TEST_LDLIBS += -lm
