# Trace module extras. zlib's crc32() is an outside oracle for the trace
# checksum in test_trace (skipped when zlib's header is missing).
TRACE_ZLIB := $(shell test -f /usr/include/zlib.h && echo -lz)
$(CHECK)/tests/test_trace: TEST_LDLIBS += $(TRACE_ZLIB)
