/* SPDX-License-Identifier: MIT */
/*
 * The recorder's state, and the sink its parts write through.
 *
 * Layers of src/record/ (each file includes only the headers of the ones
 * below it):
 *   recorder.c, setup.c   the core: the public ustack_recorder API, the
 *                         set-up, the poll loop, the end
 *   backend_*.c, kfp.c    where user stacks are unwound (backend.h)
 *   event*.c              what an event is (event.h)
 *   sideband.c            the perf side-band applied (threads, mappings,
 *                         exits, losses), telling the backend through its
 *                         operations
 *   sink.c, copy_unwind.c the trace side (threads, events, stacks, lost
 *                         records), the writer's callbacks, kernel symbols,
 *                         the unwind of a stack copy
 *   capture*.c, jitmap.c  files into the build-ID cache, JIT maps
 *   recmaps.c             the mapping picture of every process
 */
#ifndef USTACK_RECORD_REC_H
#define USTACK_RECORD_REC_H

#include <pthread.h>
#include <stdint.h>

#include <ustack/record.h>
#include <ustack/stackmap.h>
#include <ustack/trace.h>
#include <ustack/hashmap.h>
#include "perf/kallsyms.h"
#include "perf/perf_events.h"
#include "probe/probe.h"
#include "record/event.h"
#include "record/recmaps.h"
#include "unwind/unwind.h"

struct rec_backend_ops;
struct rec_capture;

#define MAX_USER_FRAMES 127
/* user stack words: two per frame, ustack_trace_pack_frame() */

/* The allocator functions --alloc probes (REC_ATTACH_ALLOC). */
enum rec_alloc_fn {
	REC_AF_MALLOC = 1,         /* malloc(size) */
	REC_AF_CALLOC,             /* calloc(n, size) */
	REC_AF_REALLOC,            /* realloc(ptr, size): a free of ptr, an allocation */
	REC_AF_FREE,               /* free(ptr) */
	REC_AF_POSIX_MEMALIGN,     /* posix_memalign(&ptr, align, size): ptr read at return */
	REC_AF_ALIGNED_ALLOC,      /* aligned_alloc(align, size) */
	REC_AF_MEMALIGN,           /* memalign(align, size) */
	REC_AF_VALLOC,             /* valloc(size) */
	REC_AF_PVALLOC,            /* pvalloc(size): size rounded up to pages */
	/* record --alloc-via=preload: libustack-alloc.so's functions
	 * (src/preload/alloc.c; the same numbers in src/bpf/alloc.bpf.h) */
	REC_AF_HIT = 10,           /* ustack_alloc_hit: a kept allocation */
	REC_AF_HIT_FREE,           /* ustack_free_hit: its free */
	REC_AF_HIT_TALLY,          /* ustack_alloc_tally: a thread's counts at its exit */
	REC_AF_NR
};

/* One place a probe event attaches to (probes.c resolves them). */
struct rec_probe {
	struct ustack_probe_target t; /* t.kind: USTACK_PROBE_UPROBE at the entry,
	                                 _URETPROBE at the return, _USDT */
	int event;          /* index in r->events (REC_ATTACH_ALLOC: the "alloc" event) */
	uint32_t alloc_fn;  /* REC_ATTACH_ALLOC: enum rec_alloc_fn, else 0 */
	/* whose hits are recorded: a -p process (the probe is attached for it
	 * alone, resolved in its mount namespace), 0: the command (attached
	 * for the child once started; resolved in ustack's own namespace), -1:
	 * every process mapping the file (-a) */
	pid_t pid;
};

struct tid_comm {
	uint32_t tid;
	char comm[16];
};

struct rec {
	const struct ustack_record_opts *o; /* = &opts */
	struct ustack_record_opts opts; /* the caller's, zero beyond its sz */
	struct ustack_record_stats st;
	/* what is recorded (event.h) */
	struct rec_event events[USTACK_PERF_MAX_EVENTS];
	int nr_events;
	/* where user stacks are unwound (backend.h) and its own state */
	const struct rec_backend_ops *be;
	void *be_state;
	struct ustack_perf_session *ps;
	struct ustack_modcache *mc;
	struct ustack_recmaps *rm;
	struct ustack_stackmap *kmap, *umap;
	struct ustack_trace_writer *w;
	int werr;       /* first writer (or other fatal) error */
	char errmsg[320]; /* its message when it is not the trace file's */
	uint64_t bad_maps;   /* mapping records the picture refused */
	uint64_t unreadable; /* processes whose mappings could not be read (-a) */
	/* scratch */
	uint64_t words[2 * MAX_USER_FRAMES];
	struct ustack_trace_frame frames[MAX_USER_FRAMES];
	/* kernel symbols, loaded by a thread from the start (sink.c) */
	struct {
		struct ustack_kallsyms *syms;
		int loaded, thread_started;
		pthread_t thread;
	} ks;
	/* thread names, for FORK records (sink.c) */
	struct {
		struct tid_comm *v;
		size_t nr, cap;
		struct ustack_u64map *of; /* tid -> index in v (-a: thousands of threads) */
	} comms;
	uint64_t t0;
	/* processes whose main thread exited (sideband.c): their mapping
	 * pictures are dropped a second later, so that a record of theirs
	 * another CPU committed after the exit was read (time-stamped before
	 * it; seen under a stalled virtual CPU) still finds its mappings */
	struct {
		struct rec_exit {
			uint32_t pid;
			uint64_t due; /* ustack_mono_ns() */
		} *v;
		size_t nr, cap;
	} exits;
	/* pid -> JIT map state (jitmap.c) */
	struct ustack_u64map *jit_pids;
	/* pid -> where its map is (jitmap.c: an open root fd) */
	struct ustack_u64map *jit_roots;
	unsigned int jit_nroots;
	/* the recording itself (struct ustack_recorder; recorder.c, setup.c) */
	struct {
		pid_t child;          /* the command (-- CMD), 0 once reaped */
		int go_fd, report_fd; /* its start and exec-report pipes */
		int epfd;             /* what a poller waits on: the backend's fds, */
		int tfd;              /* a 100 ms tick (deadline, -p processes, flushes), */
		int pidfd;            /* the command's exit */
		uint64_t deadline, last_progress;
		int state;            /* enum rec_state */
		int result;           /* of the recording once over */
	} run;
	/* where the probe events attach (probes.c) */
	struct {
		struct rec_probe *v;
		size_t nr;
		/* --alloc: enum ustack_record_alloc_via used (0: none); with
		 * _PRELOAD the command's environment (LD_PRELOAD and the
		 * sampling's settings added; NULL: ustack's) */
		unsigned int alloc_via;
		char **child_env;
		char *env_own[3]; /* its strings not environ's */
	} probes;
	/* capture into the build-ID cache (capture_files.c; NULL: off) */
	struct rec_capture *cap;
	uint64_t cap_gone, cap_fd_cap, cap_errors, cap_write_errors, cap_by_path;
	int64_t cap_since;    /* recording start, seconds since the epoch (trim) */
	char cap_warn[600];   /* why there is no capture, said once recording runs */
};

enum rec_state { REC_RUNNING, REC_OVER, REC_FINISHED };

/* ---- sink.c: the trace side -------------------------------------------- */

/* A writer error is kept (the first one ends the recording). */
static inline void rec_werr(struct rec *r, int ret)
{
	if (ret && !r->werr)
		r->werr = ret;
}
/* Write the EVENT @ev (counted). */
void rec_write_event(struct rec *r, const struct ustack_trace_event *ev);
/* Write a LOST record of @l (counted in st.lost). */
void rec_write_lost(struct rec *r, const struct ustack_trace_lost *l);
/* Store @n frames and write the USER_STACK @u (its stack id set here);
 * @nr_requests events counted as without a user stack when it fails. */
void rec_write_user_stack(struct rec *r, struct ustack_trace_user_stack *u,
			  const struct ustack_frame *frames, uint32_t n, uint32_t nr_requests);
void rec_write_thread(struct rec *r, uint64_t time, uint32_t pid, uint32_t tid, uint32_t flags,
		      const char *comm);
/* A THREAD record names @tid already. */
int rec_knows_thread(struct rec *r, uint32_t tid);
/* The name @tid has now ("" when it has none). */
const char *rec_thread_comm(struct rec *r, uint32_t tid);
/* @tid exited: its name is not needed any more. */
void rec_forget_thread(struct rec *r, uint32_t tid);
void rec_map_result(struct rec *r, int ret, uint32_t pid, const char *what);
/* Normalize @n frames of @pid with the mapping picture, store the stack
 * once: its id in *id. 0 or -errno. */
int rec_store_frames(struct rec *r, uint32_t pid, const struct ustack_frame *frames, uint32_t n,
		     uint32_t *id);
/* rec_store_frames() without the store: the trace words into r->words
 * (frames counted). Returns the frames packed (at most MAX_USER_FRAMES). */
uint32_t rec_pack_frames(struct rec *r, uint32_t pid, const struct ustack_frame *frames,
			 uint32_t n);
/* The writer's callbacks (stacks, file maps, kernel symbols) for @wo. */
void rec_writer_callbacks(struct rec *r, struct ustack_trace_writer_opts *wo);
/* Kernel symbols: loaded on a thread from the start; the end waits. */
void rec_ksyms_start(struct rec *r);
void rec_ksyms_free(struct rec *r);
/* The kallsyms name of kernel address @ip, NULL where none is known (a BPF
 * program's JIT image, no kallsyms); waits for the load rec_ksyms_start()
 * began. */
const char *rec_ksym_name(struct rec *r, uint64_t ip);

/* copy_unwind.c: unwind a stack copy in user space (the copy backend's
 * way; the BPF backend's COPY records too). */
int rec_unwind_copy(struct rec *r, uint32_t pid, uint64_t ip, uint64_t sp, uint64_t bp,
		    const uint64_t *bx /* NULL: not known */,
		    const void *stack, uint64_t size, struct ustack_frame *frames, uint32_t max,
		    uint32_t *stop);

/* ---- probes.c: the places the probe events attach to ------------------- */

/* Resolve every REC_ATTACH_UPROBE and REC_ATTACH_ALLOC event of the
 * recording into r->probes: for each -p process in its own mount namespace
 * (pid), for -a and a command in ustack's (pid -1 and 0). REC_ATTACH_ALLOC:
 * the malloc family (entry and return probes, and free's entry) of the
 * allocator each process maps: jemalloc or tcmalloc where one is mapped,
 * else its libc. 0, or -errno with the message set (rec_set_err): a probe
 * that names nothing is an error, never an empty recording. */
int rec_probes_resolve(struct rec *r);
/* the file execvp() would run for @cmd: 0, or -ENOENT */
int rec_find_command(const char *cmd, char *out, size_t len);
void rec_probes_free(struct rec *r);

/* ---- sideband.c: the perf side-band ------------------------------------ */

/* The perf record callback: COMM, MMAP2, FORK, EXIT, LOST applied here,
 * the rest (SAMPLE, SWITCH, CALLCHAIN_DEFERRED, THROTTLE) handed to the
 * backend. */
void rec_on_record(void *ctx, const struct ustack_perf_record *rec);
/* Drop the mapping pictures of exited processes whose time came. */
void rec_exits_due(struct rec *r, uint64_t now);

/* capture_files.c: the files stacks ran through, into the build-ID cache */
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

/* jitmap.c: /tmp/perf-PID.map files into the trace */
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

#endif
