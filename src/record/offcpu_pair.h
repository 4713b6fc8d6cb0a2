/* SPDX-License-Identifier: MIT */
/*
 * Off-CPU intervals paired per thread (the copy backend's, backend_copy.c):
 * a switch-out (a sched_switch sample, its stacks taken) waits for the
 * thread's next switch-in (a PERF_RECORD_SWITCH), and the two make one
 * interval. Records come in time order, but some may be missing (lost) or,
 * rarely, late (a virtual CPU stalled while writing): a switch-out is
 * paired only with a switch-in of the same thread and process, later than
 * it, with nothing lost in between, and is dropped (the drop callback: an
 * unpaired switch-out) wherever that cannot be known. Pure bookkeeping:
 * no perf, no trace; test_offcpu_pair drives it.
 */
#ifndef USTACK_RECORD_OFFCPU_PAIR_H
#define USTACK_RECORD_OFFCPU_PAIR_H

#include <stdint.h>

/* A switch-out, as held until its switch-in. */
struct rec_offcpu_out {
	uint32_t pid, tid, cpu;
	uint64_t time;
	int event;          /* the recording's event index (off-cpu or off-cpu-preempt) */
	uint32_t kstack_id; /* kernel stack at the switch-out */
	uint64_t cookie;    /* its user stack's, 0: none */
};

/* A held switch-out that will never be paired: the thread exited, records
 * were lost after it, another switch-out of the thread came first, the
 * recording ended. */
typedef void (*rec_offcpu_drop_fn)(void *ctx, const struct rec_offcpu_out *o);

struct rec_offcpu_pair;

/* NULL with errno ENOMEM. */
struct rec_offcpu_pair *rec_offcpu__new(rec_offcpu_drop_fn drop, void *ctx);
/* Without calls to drop (rec_offcpu__flush() first). NULL: no-op. */
void rec_offcpu__free(struct rec_offcpu_pair *p);

/* Hold @o until its thread's switch-in. A switch-out of the thread still
 * held is dropped first. 0; -ESTALE: @o is older than a switch-in of its
 * thread already seen (its own switch-in came before it: not held);
 * -ENOMEM. */
int rec_offcpu__switch_out(struct rec_offcpu_pair *p, const struct rec_offcpu_out *o);

/* Thread @tid of @pid switched in at @time. 1 with the interval's
 * switch-out in *@out (removed); 0: none held (the thread was off CPU when
 * the recording started, or its switch-out was not asked for, or is
 * later than @time), or the one held was another process's (dropped). */
int rec_offcpu__switch_in(struct rec_offcpu_pair *p, uint32_t pid, uint32_t tid, uint64_t time,
			  struct rec_offcpu_out *out);

/* Thread @tid exited (or its id is given to a new thread): what it holds
 * is dropped, and it is forgotten. */
void rec_offcpu__task_exit(struct rec_offcpu_pair *p, uint32_t tid);

/* Records were lost before @time (a LOST record's time, on any CPU: a
 * thread wakes up anywhere): every switch-out held from before it is
 * dropped, its switch-in may have been lost with a later switch-out. */
void rec_offcpu__lost(struct rec_offcpu_pair *p, uint64_t time);

/* End of the recording: every switch-out held is dropped. */
void rec_offcpu__flush(struct rec_offcpu_pair *p);

/* Switch-outs held now. */
uint64_t rec_offcpu__held(const struct rec_offcpu_pair *p);

#endif
