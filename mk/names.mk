# out_names.c (src/cli) holds the rules by which every output format writes
# names (docs/cli/report.md, "Names in the output"). test_out_names checks
# them at the function level: it links that one CLI object, as test_pprof
# links out_pprof.o (mk/pprof.mk), which needs it too.
$(CHECK)/tests/test_out_names: $(CHECK)/obj/cli/out_names.o
$(CHECK)/tests/test_out_names: TEST_LDLIBS += $(CHECK)/obj/cli/out_names.o
# fuzz_out_names compiles out_names.c into itself (fuzz targets link only
# the library): rebuild it when the module changes
$(CHECK)/fuzz/fuzz_out_names $(BUILD)/fuzz/fuzz_out_names: src/cli/out_names.c src/cli/out_names.h src/cli/cli_fmt.h
