# report_weight.c (src/cli): the weights and durations of report's outputs;
# test_report_weight links its object, as test_out_names links out_names.o.
$(CHECK)/tests/test_report_weight: $(CHECK)/obj/cli/report_weight.o
$(CHECK)/tests/test_report_weight: TEST_LDLIBS += $(CHECK)/obj/cli/report_weight.o
