# pprof output (src/cli/out_pprof*.c) gzips the profile with zlib: the
# ustack command links it. test_pprof checks the encoder of the CLI module
# out_pprof.c against hand-computed bytes, so it links that object (and the
# library again after it, for the hash map it uses), its buffer growth and
# the name rules its strings go through (out_names.o: valid UTF-8).
CLI_LDLIBS += -lz
$(CHECK)/tests/test_pprof: $(CHECK)/obj/cli/out_pprof.o $(CHECK)/obj/cli/cli_grow.o $(CHECK)/obj/cli/out_names.o
$(CHECK)/tests/test_pprof: TEST_LDLIBS += $(CHECK)/obj/cli/out_pprof.o $(CHECK)/obj/cli/cli_grow.o $(CHECK)/obj/cli/out_names.o $(CHECK)/libustack.a -lz
