# test_debugfind checks the decoders of src/symbolize/debugfind.c against the
# reference encoders; the library itself dlopens these (no link dependency).
$(CHECK)/tests/test_debugfind: TEST_LDLIBS += -lz -lzstd -llzma
