/* SPDX-License-Identifier: MIT */
/*
 * The deferred engine: the user-space twin of the kernel's
 * unwind_deferred_init/request/cancel (kernel/unwind/deferred.c, 6.17+).
 *
 * Events (perf samples) of a task ask for its user stack and get a cookie at
 * once, so they can be written immediately. All samples of one task taken
 * inside one kernel entry share one cookie and one unwind; every consumer
 * that asked gets exactly one callback per cookie, when the task "returns to
 * user space". The engine knows nothing of perf or of unwinding: the owner
 * supplies the unwind as a callback, and feeds the engine the samples and
 * the notifications (user mode seen, exit, lost records, flush) in time
 * order. The exact rules are in docs/deferred.md.
 *
 * Single-threaded: one engine is driven by one thread (the recorder's
 * reader). Consumer callbacks run on that thread, inside the engine call
 * that closed the entry; from a callback only ustack_deferred__cancel()
 * may be called (other calls return -EDEADLK or do nothing).
 */
#ifndef USTACK_DEFERRED_DEFERRED_H
#define USTACK_DEFERRED_DEFERRED_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>

/*
 * Cookie layout, as the kernel's (6.17+): the per-CPU counter of the CPU the
 * first request of the entry was made on, in the high 32 bits, always odd;
 * cpu + 1 in the low 32 bits. Never 0.
 */
#define USTACK_DEFERRED_COOKIE(cnt, cpu) \
	(((uint64_t)(uint32_t)(cnt) << 32) | (uint64_t)((uint32_t)(cpu) + 1u))
#define USTACK_DEFERRED_COOKIE_CPU(cookie) ((uint32_t)(cookie) - 1u)
#define USTACK_DEFERRED_COOKIE_CNT(cookie) ((uint32_t)((cookie) >> 32))

/* At most this many consumers at once (one bit each in an entry's mask). */
#define USTACK_DEFERRED_MAX_CONSUMERS 64

/** Flags of a sample. */
enum ustack_deferred_sample_flags {
	/** taken in kernel mode (PERF_RECORD_MISC_KERNEL): ip/sp/bp are the
	 *  user registers saved at kernel entry */
	USTACK_DEFERRED_KERNEL = 1u << 0,
};

/** One sample asking for the user stack of its task. */
struct ustack_deferred_sample {
	uint32_t pid, tid;
	uint32_t cpu;           /**< < nr_cpus */
	uint32_t flags;         /**< enum ustack_deferred_sample_flags */
	uint64_t time;          /**< perf time; samples arrive in time order */
	uint64_t ip, sp, bp;    /**< user registers (at kernel entry for a kernel sample) */
	/**
	 * Optional extra identity of the user context, 0 when unused: two
	 * samples with different tags never share an entry. The owner may put a
	 * hash of the return-address words of the stack copy here, so that two
	 * kernel entries made from the same ip/sp but different callers (no
	 * user-mode sample seen between them) are not merged.
	 */
	uint64_t tag;
	const void *stack;      /**< copy of the top of the user stack, for unwind() */
	uint64_t stack_size;
	void *priv;             /**< the owner's, for unwind() */
	uint64_t bx;            /**< user rbx, where has_bx */
	int has_bx;
};

/**
 * The owner's unwind: fill @frames from @s (its registers and stack copy).
 * Called once per entry, during the request that opened it.
 * @param stop receives an enum ustack_stop_reason
 * @return number of frames stored (0..max), or a negative errno
 */
typedef int (*ustack_deferred_unwind_fn)(void *ctx, const struct ustack_deferred_sample *s,
					 struct ustack_frame *frames, uint32_t max,
					 uint32_t *stop);

/** Why an entry was closed (= when its callbacks ran). */
enum ustack_deferred_close {
	USTACK_DEFERRED_CLOSE_USER_MODE = 0, /**< task seen in user mode (user-mode
	                                          sample or ustack_deferred__user_mode()) */
	USTACK_DEFERRED_CLOSE_NEW_ENTRY = 1, /**< kernel sample with other user regs/tag */
	USTACK_DEFERRED_CLOSE_USER_SAMPLE = 2, /**< the entry of a user-mode sample itself */
	USTACK_DEFERRED_CLOSE_EXIT = 3,      /**< ustack_deferred__task_exit() */
	USTACK_DEFERRED_CLOSE_TID_REUSE = 4, /**< same tid, other pid: a new task */
	USTACK_DEFERRED_CLOSE_REORDER = 5,   /**< sample older than the entry's last one */
	USTACK_DEFERRED_CLOSE_LOST = 6,      /**< records were lost (see err) */
	USTACK_DEFERRED_CLOSE_EVICTED = 7,   /**< table full: least recently seen entry */
	USTACK_DEFERRED_CLOSE_FLUSH = 8,     /**< ustack_deferred__flush() */
};

/** What a consumer callback receives with a cookie. Valid during the callback only. */
struct ustack_deferred_stack {
	const struct ustack_frame *frames;
	uint32_t nr;
	uint32_t stop;          /**< enum ustack_stop_reason from the unwind */
	/**
	 * 0: frames are the stack of every event that got this cookie.
	 * -ENODATA: withheld because records were lost while the entry was open
	 *  (nr == 0): events with this cookie get no user stack.
	 * -ESTALE: withheld because a user-mode notification arrived dated
	 *  inside the entry (input out of order) (nr == 0).
	 * other negative errno: the unwind failed (nr == 0).
	 */
	int err;
	uint32_t close_reason;  /**< enum ustack_deferred_close */
	uint32_t nr_requests;   /**< requests (all consumers) served by this cookie */
	uint64_t close_time;    /**< time of the event that closed the entry (the
	                             entry's last sample time for exit/flush/evict) */
};

/** A task as seen by the engine. */
struct ustack_deferred_task {
	uint32_t pid, tid;
};

struct ustack_deferred_consumer;

/**
 * Consumer callback, once per cookie the consumer requested.
 * @param cpu the CPU of the first request (the cookie's CPU)
 * @param time the time of the first request of the entry (the kernel's
 *        "timestamp of the first request since the task entered the kernel")
 */
typedef void (*ustack_deferred_cb_t)(struct ustack_deferred_consumer *c, uint64_t cookie,
				     const struct ustack_deferred_task *task, uint32_t cpu,
				     uint64_t time, const struct ustack_deferred_stack *stack);

/** Owned by the consumer (like the kernel's struct unwind_work); fields set by init. */
struct ustack_deferred_consumer {
	ustack_deferred_cb_t func;
	void *ctx;              /**< the consumer's */
	int idx;                /**< slot in the engine, -1 when not registered */
};

/** libbpf-style options. */
struct ustack_deferred_opts {
	size_t sz;              /**< sizeof(struct ustack_deferred_opts) */
	uint32_t nr_cpus;       /**< required: CPUs are 0..nr_cpus-1 */
	uint32_t max_tasks;     /**< open entries tracked at once; 0: 1024 */
	uint32_t max_frames;    /**< frames kept per stack; 0: 127 */
	ustack_deferred_unwind_fn unwind; /**< required */
	void *unwind_ctx;
};

/** Counters. requests == unwinds + shared. */
struct ustack_deferred_stats {
	uint64_t requests;      /**< successful requests */
	uint64_t unwinds;       /**< unwinds run = cookies handed out */
	uint64_t shared;        /**< requests served by an existing unwind */
	uint64_t dropped_after_lost; /**< cookies withheld (err -ENODATA) after lost records */
	uint64_t dropped_misordered; /**< cookies withheld (err -ESTALE) */
	uint64_t unwind_errors; /**< unwinds that returned an error */
	uint64_t evicted;       /**< entries closed early because the table was full */
	uint64_t callbacks;     /**< consumer callbacks made */
	uint64_t open;          /**< entries open now (kernel entries + pending user samples) */
};

struct ustack_deferred;

/**
 * Create an engine. All memory is allocated here (max_tasks * max_frames
 * frames): requests do not allocate.
 * @param opts required (nr_cpus and unwind)
 * @return the engine, or NULL with errno (EINVAL, ENOMEM)
 */
struct ustack_deferred *ustack_deferred__new(const struct ustack_deferred_opts *opts);

/**
 * Free the engine. Pending entries are discarded without callbacks: call
 * ustack_deferred__flush() first. NULL is a no-op.
 */
void ustack_deferred__free(struct ustack_deferred *d);

/**
 * Register a consumer (the kernel's unwind_deferred_init()).
 * @param c caller-owned, must stay valid until cancelled or the engine is freed
 * @param func called once per cookie @c requested
 * @param ctx stored in c->ctx
 * @return 0, -EINVAL (NULL argument), -EALREADY (already registered),
 *         -EBUSY (USTACK_DEFERRED_MAX_CONSUMERS registered)
 */
int ustack_deferred__init_consumer(struct ustack_deferred *d, struct ustack_deferred_consumer *c,
				   ustack_deferred_cb_t func, void *ctx);

/**
 * Unregister @c: it gets no further callbacks, not even for cookies it
 * already requested. Other consumers of those cookies are unaffected.
 * May be called from a callback. Unregistered @c: no-op.
 */
void ustack_deferred__cancel(struct ustack_deferred *d, struct ustack_deferred_consumer *c);

/**
 * Ask for the user stack of the task of @s (the kernel's
 * unwind_deferred_request()). @s is only read during the call.
 * @param cookie receives the entry's cookie (0 on error)
 * @return 0 when a new entry was opened (one unwind ran),
 *         1 when @s joined an open entry (same cookie, shared unwind),
 *         -EINVAL (bad argument, consumer not registered, cpu >= nr_cpus,
 *         no user registers: ip == 0 and sp == 0), -EDEADLK (from a callback)
 */
int ustack_deferred__request(struct ustack_deferred *d, struct ustack_deferred_consumer *c,
			     const struct ustack_deferred_sample *s, uint64_t *cookie);

/**
 * The task @tid was seen running in user space at @time on @cpu (a
 * user-mode record the owner did not request a stack for): close its open
 * entry. Ignored when older than the entry's first sample.
 */
void ustack_deferred__user_mode(struct ustack_deferred *d, uint32_t tid, uint32_t cpu,
				uint64_t time);

/** Task @tid exited: close its open entry (delivered normally). */
void ustack_deferred__task_exit(struct ustack_deferred *d, uint32_t tid);

/**
 * Records were lost on @cpu; @time is the time of the lost record (the end
 * of the gap). Every open entry is closed; one that might have a lost
 * record between its samples gets err -ENODATA and no frames (see
 * docs/deferred.md for the exact rule). cpu >= nr_cpus: a loss of unknown
 * place, every open entry is withheld.
 */
void ustack_deferred__lost(struct ustack_deferred *d, uint32_t cpu, uint64_t time);

/** End of recording: deliver every pending entry (close reason FLUSH). */
void ustack_deferred__flush(struct ustack_deferred *d);

/** Copy the counters into @st. */
void ustack_deferred__stats(const struct ustack_deferred *d, struct ustack_deferred_stats *st);

/**
 * Set the per-CPU counter state of @cpu (the value of the last cookie's
 * counter; the next cookie uses (value + 2) | 1). For tests and for
 * continuing a recording. @return 0 or -EINVAL
 */
int ustack_deferred__set_counter(struct ustack_deferred *d, uint32_t cpu, uint32_t value);

/** Name of an enum ustack_deferred_close. Never NULL. */
const char *ustack_deferred_close_name(unsigned int reason);

#endif
