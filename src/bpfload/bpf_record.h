/* SPDX-License-Identifier: MIT */
/*
 * Checks of the records the BPF backend's program writes into its ring
 * buffer (src/bpf/record_abi.h): UB_REC_EVENT, UB_REC_STACK, UB_REC_COPY,
 * UB_REC_KSTACK.
 * The program is ours, but the ring buffer is input like any other (a
 * program built from other sources, a kernel bug, a torn record): every
 * field user space relies on is checked here, apart from the recorder, so
 * that it can be unit-tested and fuzzed without loading BPF.
 */
#ifndef USTACK_BPFLOAD_BPF_RECORD_H
#define USTACK_BPFLOAD_BPF_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/record_abi.h"

/** One checked record: exactly one pointer is set, into the checked bytes. */
struct ustack_bpf_rec {
	uint8_t type; /* UB_REC_* */
	const struct ub_event *event; /* with UB_EV_ARGS: a struct ub_pevent */
	const struct ub_stack *stack;
	const struct ub_copy *copy;
	const struct ub_kstack *kstack;
};

/**
 * Check the ring-buffer record [@data, @data + @size).
 * @param nr_events events the recorder asked for (an event's index must be below)
 * @param why receives a static reason on failure (for a debug line)
 * @return 0 with @out set, -EBADMSG (malformed: skip and count it)
 */
int ustack_bpf_record__check(const void *data, size_t size, uint32_t nr_events,
			     struct ustack_bpf_rec *out, const char **why);

#endif
