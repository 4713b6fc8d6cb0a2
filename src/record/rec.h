/* SPDX-License-Identifier: MIT */
/*
 * The recorder's state, shared by its two backends: recorder.c (set-up,
 * the copy backend: perf samples with stack copies, the deferred engine,
 * unwinding in user space) and recorder_bpf.c (the BPF backend: the kernel
 * unwinds, user space turns its records into the same trace records).
 */
#ifndef USTACK_RECORD_REC_H
#define USTACK_RECORD_REC_H

#include <pthread.h>
#include <stdint.h>

#include <ustack/record.h>
#include <ustack/stackmap.h>
#include <ustack/trace.h>
#include <ustack/hashmap.h>
#include "deferred/deferred.h"
#include "perf/kallsyms.h"
#include "perf/perf_events.h"
#include "record/recmaps.h"
#include "unwind/unwind.h"

struct ustack_bpf;
struct rec_bpf;
struct rec_capture;
struct rec_kfp;

#define MAX_USER_FRAMES 127
/* user stack words: two per frame, ustack_trace_pack_frame() */

struct tid_comm {
	uint32_t tid;
	char comm[16];
};

struct rec {
	const struct ustack_record_opts *o; /* = &opts */
	struct ustack_record_opts opts; /* the caller's, zero beyond its sz */
	struct ustack_record_stats st;
	struct ustack_perf_event_spec events[USTACK_PERF_MAX_EVENTS];
	int nr_events;
	struct ustack_perf_session *ps;
	struct ustack_modcache *mc;
	struct ustack_recmaps *rm;
	struct ustack_deferred *def;
	struct ustack_deferred_consumer consumer;
	struct ustack_stackmap *kmap, *umap;
	struct ustack_trace_writer *w;
	int werr;       /* first writer (or other fatal) error */
	char errmsg[320]; /* its message when it is not the trace file's */
	uint64_t bad_maps;   /* mapping records the picture refused */
	uint64_t unreadable; /* processes whose mappings could not be read (-a) */
	uint64_t bad_ring;   /* malformed BPF ring-buffer records */
	/* scratch */
	uint64_t words[2 * MAX_USER_FRAMES];
	struct ustack_trace_frame frames[MAX_USER_FRAMES];
	/* kernel symbols, loaded by a thread from the start */
	struct ustack_kallsyms *ksyms;
	int ksyms_loaded, ksyms_thread_started;
	pthread_t ksyms_thread;
	/* thread names, for FORK records */
	struct tid_comm *comms;
	size_t nr_comms, cap_comms;
	struct ustack_u64map *comm_of; /* tid -> index in comms (-a: thousands of threads) */
	const struct ustack_perf_sample *cur; /* the sample being requested */
	uint64_t t0;
	/* the BPF backend (NULL: copy) */
	struct ustack_bpf *bpf;
	struct rec_bpf *rb;
	/* the kernel's deferred user callchains (recorder_kfp.c; NULL: not used) */
	struct rec_kfp *kfp;
	/* processes whose main thread exited: their mapping pictures are
	 * dropped a second later, so that a record of theirs another CPU
	 * committed after the exit was read (time-stamped before it; seen
	 * under a stalled virtual CPU) still finds its mappings */
	struct rec_exit {
		uint32_t pid;
		uint64_t due; /* ustack_mono_ns() */
	} *exits;
	size_t nr_exits, cap_exits;
	/* pid -> JIT map state (jitmap_record.c) */
	struct ustack_u64map *jit_pids;
	/* pid -> where its map is (jitmap_record.c: an open root fd) */
	struct ustack_u64map *jit_roots;
	unsigned int jit_nroots;
	/* the recording itself (struct ustack_recorder) */
	pid_t child;          /* the command (-- CMD), 0 once reaped */
	int go_fd, report_fd; /* its start and exec-report pipes */
	int epfd;             /* what a poller waits on: the ring buffers, */
	int tfd;              /* a 100 ms tick (deadline, -p processes, flushes), */
	int pidfd;            /* the command's exit */
	uint64_t deadline, last_progress;
	int state;            /* enum rec_state */
	int result;           /* of the recording once over */
	/* capture into the build-ID cache (recorder_capture.c; NULL: off) */
	struct rec_capture *cap;
	uint64_t cap_gone, cap_fd_cap, cap_errors, cap_write_errors, cap_by_path;
	int64_t cap_since;    /* recording start, seconds since the epoch (trim) */
	char cap_warn[600];   /* why there is no capture, said once recording runs */
};

enum rec_state { REC_RUNNING, REC_OVER, REC_FINISHED };


/* recorder.c, for both backends */
/* Store @n frames and write the USER_STACK @u (its stack id set here);
 * @nr_requests events counted as without a user stack when it fails. */
void rec_write_user_stack(struct rec *r, struct ustack_trace_user_stack *u,
			  const struct ustack_frame *frames, uint32_t n, uint32_t nr_requests);
void rec_write_thread(struct rec *r, uint64_t time, uint32_t pid, uint32_t tid, uint32_t flags,
		      const char *comm);
/* A THREAD record names @tid already. */
int rec_knows_thread(struct rec *r, uint32_t tid);
void rec_map_result(struct rec *r, int ret, uint32_t pid, const char *what);
/* Normalize @n frames of @pid with the mapping picture, store the stack
 * once: its id in *id. 0 or -errno. */
int rec_store_frames(struct rec *r, uint32_t pid, const struct ustack_frame *frames, uint32_t n,
		     uint32_t *id);
/* Unwind a stack copy in user space as the copy backend does. */
int rec_unwind_copy(struct rec *r, uint32_t pid, uint64_t ip, uint64_t sp, uint64_t bp,
		    const uint64_t *bx /* NULL: not known */,
		    const void *stack, uint64_t size, struct ustack_frame *frames, uint32_t max,
		    uint32_t *stop);

/* The perf record callback (side-band in the BPF backend too). */
void rec_on_record(void *ctx, const struct ustack_perf_record *rec);

/* recorder_capture.c: the files stacks ran through, into the build-ID cache */
/* Open the cache and start the thread (one warning and no capture when the
 * cache cannot be written). */
void rec_capture_setup(struct rec *r);
/* The recording runs: say why there is no capture, if so. */
void rec_capture_started(struct rec *r);
/* The writer defines @file_id (a stack used it): capture it, once. */
void rec_capture_file(struct rec *r, uint64_t file_id);
/* Write the FILE_CONTENT records of the captures done so far. */
void rec_capture_drain(struct rec *r);
/* End: wait for the queue, write the rest, trim the cache. */
void rec_capture_finish(struct rec *r);
void rec_capture_stats(const struct rec *r, struct ustack_record_stats *st);
void rec_capture_free(struct rec *r);

/* jitmap_record.c: /tmp/perf-PID.map files into the trace */
int rec_jit_init(struct rec *r);
void rec_jit_free(struct rec *r);
/* @pid had a frame in anonymous memory: its map is read at the end. */
void rec_jit_note_anon(struct rec *r, uint32_t pid);
/* where @pid's map is, learnt now while it runs (the command, -p pids):
 * a process that has exited, even unreaped, has no root to look in */
void rec_jit_learn(struct rec *r, uint32_t pid);
/* Process @pid exited: copy its map now (once). */
void rec_jit_exit(struct rec *r, uint32_t pid);
/* End of the recording: the maps of the processes not copied yet. */
void rec_jit_finish(struct rec *r);

/* recorder_bpf.c */
/* Load the kernel program (before targets and events are set up).
 * 0, or -errno with @err saying why. */
int rec_bpf_open(struct rec *r, char *err, size_t errlen);
/* Targets, tables of every mapping known now, attachments. */
int rec_bpf_start(struct rec *r, pid_t child, char *err, size_t errlen);
/* Attach to the perf events of index @perf_event_index (sampling events). */
int rec_bpf_attach_sampling(struct rec *r, int perf_event_index);
/* A new executable mapping of @pid at @start: its file's table. */
void rec_bpf_mapped(struct rec *r, uint32_t pid, uint64_t start);
/* Thread @tid exited: its last user stack is complete. */
void rec_bpf_exit(struct rec *r, uint32_t tid);
/* Read the ring buffer (waiting up to @timeout_ms): records or -errno. */
int rec_bpf_poll(struct rec *r, int timeout_ms);
/* An fd readable when the ring buffer or the side-band has data. */
int rec_bpf_epoll_fd(struct rec *r);
/* Everything in the ring buffer now. */
void rec_bpf_drain(struct rec *r);
/* End: the last user stacks, the counters into r->st. */
void rec_bpf_finish(struct rec *r);
/* The backend's counters into @st. */
void rec_bpf_stats(const struct rec *r, struct ustack_record_stats *st);
void rec_bpf_close(struct rec *r);

/* recorder_kfp.c: the kernel's deferred user callchains (copy backend) */
int rec_kfp_init(struct rec *r);
void rec_kfp_free(struct rec *r);
/* a sample with a kernel cookie that got ustack's @cookie */
void rec_kfp_sample(struct rec *r, const struct ustack_perf_sample *s, uint64_t cookie);
/* a PERF_RECORD_CALLCHAIN_DEFERRED */
void rec_kfp_deferred(struct rec *r, const struct ustack_perf_record *rec);
/* ustack's own stack of an entry: 1 when written (or kept) here, 0 when
 * the entry had no kernel cookie (the caller writes it) */
int rec_kfp_user_stack(struct rec *r, uint64_t cookie, const struct ustack_deferred_task *task,
		       struct ustack_trace_user_stack *u, const struct ustack_deferred_stack *stack);
void rec_kfp_exec(struct rec *r, uint32_t tid);
void rec_kfp_exit(struct rec *r, uint32_t tid);
/* the end: stacks still waiting for the kernel's are written */
void rec_kfp_finish(struct rec *r);

#endif
