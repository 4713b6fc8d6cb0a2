# zlib's crc32() is an outside oracle for ustack_crc32() (src/common/crc32.c,
# the trace chunk checksum and .gnu_debuglink's CRC) in test_crc32 (that
# check is skipped when zlib's header is missing).
CRC32_ZLIB := $(shell test -f /usr/include/zlib.h && echo -lz)
$(CHECK)/tests/test_crc32: TEST_LDLIBS += $(CRC32_ZLIB)
