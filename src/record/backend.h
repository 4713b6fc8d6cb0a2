/* SPDX-License-Identifier: MIT */
/*
 * Where user stacks are unwound: one struct of operations per unwind
 * backend, in the manner of the kernel's struct file_operations.
 *
 *   copy  (backend_copy.c)  perf samples carry the user registers and a
 *         copy of the top of the stack; the deferred engine unwinds once
 *         per kernel entry in user space. The kernel's own deferred user
 *         callchains (Linux 6.19+, kfp.c) are consumed by this backend
 *         beside its own unwind: they arrive as perf records of the same
 *         session and name the same entries, so they are a part of it,
 *         not a backend of their own.
 *   bpf   (backend_bpf.c)   a BPF program unwinds at the event from
 *         tables loaded into the kernel; user space turns its ring-buffer
 *         records into the same trace records.
 *
 * The core (recorder.c, setup.c) owns the perf session, the mapping
 * picture, the trace writer and the targets, and calls a backend only
 * through these operations, in this order:
 *
 *   open -> perf_opts -> [perf session opened] -> start -> watch
 *   -> { read; the side-band calls record / remap / mapped / exit / lost } ...
 *   -> drain -> [the perf session's last records] -> finish -> stats -> close
 *
 * A backend writes what it finds through the sink (rec.h: rec_write_event,
 * rec_write_user_stack, rec_store_frames, ...) and applies the perf
 * side-band through rec_on_record(); it never calls into the core. Its own
 * state hangs from rec->be_state (NULL until open, freed by close).
 *
 * Adding a backend: one file implementing these operations and a line in
 * rec_backends[] (setup.c picks by enum ustack_record_backend).
 */
#ifndef USTACK_RECORD_BACKEND_H
#define USTACK_RECORD_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ustack/record.h>
#include "perf/perf_events.h"

struct rec;

struct rec_backend_ops {
	const char *name;          /* "copy", "bpf" */
	unsigned int id;           /* enum ustack_record_backend */

	/* Set up before the targets and the events are: load what the
	 * backend needs, check that it can record the events asked for.
	 * 0, or -errno with @err saying why (auto then falls back to copy;
	 * close is called either way). */
	int (*open)(struct rec *r, char *err, size_t errlen);
	/* The perf session it needs: @po holds the recording's events and
	 * defaults; the backend may replace the event list (with @scratch,
	 * room for USTACK_PERF_MAX_EVENTS + 1 specs), the stack copy size,
	 * the ring size and its wake-up rule. */
	void (*perf_opts)(struct rec *r, struct ustack_perf_opts *po,
			  struct ustack_perf_event_spec *scratch);
	/* The perf session is open, nothing runs yet: targets, tables,
	 * attachments (@child: the command, stopped before its exec, or 0).
	 * 0, or -errno with @err. */
	int (*start)(struct rec *r, pid_t child, char *err, size_t errlen);
	/* Every fd a poller must wait on: @add(ctx, fd) for each; 0 or the
	 * first error @add returned. */
	int (*watch)(struct rec *r, int (*add)(void *ctx, int fd), void *ctx);
	/* One round: what the kernel has up to now (the perf side-band too,
	 * through rec_on_record). Records read, or -errno with @err. */
	int (*read)(struct rec *r, char *err, size_t errlen);

	/* -- the side-band, from rec_on_record() (any may be NULL) -- */
	/* A perf record the core does not apply itself: a SAMPLE, a SWITCH, a
	 * CALLCHAIN_DEFERRED. */
	void (*record)(struct rec *r, const struct ustack_perf_record *rec);
	/* @tid is about to change its process's mapping picture (an exec,
	 * @exec set, or a new executable mapping): what waits for @tid is
	 * named from the picture as it is now. */
	void (*remap)(struct rec *r, uint32_t tid, int exec);
	/* A new executable mapping of @pid at @start is in the picture. */
	void (*mapped)(struct rec *r, uint32_t pid, uint64_t start);
	/* Thread @tid exited: its last user stack is complete. */
	void (*exit)(struct rec *r, uint32_t tid);
	/* The kernel lost records of @cpu at @time. */
	void (*lost)(struct rec *r, uint32_t cpu, uint64_t time);

	/* The events are off: read what the backend's own buffers hold
	 * (the core then reads the perf session's last records). */
	void (*drain)(struct rec *r);
	/* Everything is read: write the user stacks still open. */
	void (*finish)(struct rec *r);
	/* The backend's counters and its share of kernel_bytes into @st
	 * (@st->kernel_bytes holds the perf session's bytes on entry). */
	void (*stats)(const struct rec *r, struct ustack_record_stats *st);
	/* Free its state (also after a failed open or start). */
	void (*close)(struct rec *r);
};

extern const struct rec_backend_ops rec_backend_copy;
extern const struct rec_backend_ops rec_backend_bpf;

#endif
