/* SPDX-License-Identifier: MIT */
/*
 * Allocation profiling (record --alloc): the programs on the allocator's
 * functions. Included at the end of record.bpf.c (one object, one
 * skeleton), after the probe helpers it uses.
 *
 * ustack_alloc_enter runs at the entry of malloc, calloc, realloc,
 * posix_memalign, aligned_alloc, memalign, valloc and pvalloc (the attach
 * cookie says which: enum rec_alloc_fn) and keeps the call's arguments in
 * the thread's storage; ustack_alloc_ret, at their return, has the result,
 * counts the allocation and keeps one in so many bytes (alloc_draw.h): for
 * a kept one, the stack of the caller (the registers at the return are the
 * caller's) and an "alloc" event weighing its size, and an entry in the
 * live map; ustack_alloc_free, at free's entry, sends a "free" event for
 * an address in the live map.
 *
 * Only a thread's outermost allocator call counts: glibc's realloc(NULL,
 * n) calls malloc, realloc(p, 0) calls free, a preloaded allocator may call
 * the libc's; counted again, the same bytes would be counted twice. The
 * depth is per thread, and the outermost call's stack pointer at its entry
 * tells a nested call (deeper on the stack) from a later call after a
 * return the program missed (a uretprobe the kernel could not place).
 */
#define UB_ALLOC_RANDOM() bpf_get_prandom_u32()
#include "alloc_draw.h"

/* enum rec_alloc_fn (src/record/rec.h) */
#define AF_MALLOC 1
#define AF_CALLOC 2
#define AF_REALLOC 3
#define AF_FREE 4
#define AF_POSIX_MEMALIGN 5
#define AF_ALIGNED_ALLOC 6
#define AF_MEMALIGN 7
#define AF_VALLOC 8
#define AF_PVALLOC 9
#define AF_PAGE 4096ull /* pvalloc's rounding: x86-64's page */

const volatile __u32 alloc_event = UB_NO_EVENT; /* "alloc" */
const volatile __u32 free_event = UB_NO_EVENT;  /* "free" */
const volatile __u64 alloc_mean = 1;            /* sampling mean, bytes (<= 1: all) */
const volatile __u64 alloc_lnm[UB_ALLOC_LN_N + 1]; /* ub_alloc_lnm_fill() */

/* kept allocations not freed yet: tgid + address -> size (max_entries set
 * by user space; its exit purge removes a dead process's) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct ub_alloc_key);
	__type(value, __u64);
} alloc_live SEC(".maps");

struct alloc_task {
	__u64 left;       /* bytes before the next kept allocation (0: not drawn) */
	__u64 sp;         /* stack pointer at the outermost call's entry */
	__u64 size;       /* bytes asked for */
	__u64 ptr;        /* realloc: the old block; posix_memalign: where the result goes */
	__u32 depth, fn;  /* allocator calls open; the outermost one's enum rec_alloc_fn */
	__u32 failed, pad; /* calloc's n * size overflows: no allocation */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct alloc_task);
} alloc_tasks SEC(".maps");

/* The arguments of the outermost call @fn. */
static __always_inline void alloc_args(struct alloc_task *at, __u32 fn, struct pt_regs *ctx)
{
	__u64 a0 = ctx->rdi, a1 = ctx->rsi;

	at->fn = fn;
	at->ptr = 0;
	at->failed = 0;
	switch (fn) {
	case AF_CALLOC:
		if (a1) {
			__u64 most = ~0ull / a1;

			/* clang would turn the test into a 128-bit multiply,
			 * which BPF has not */
			asm volatile("" : "+r"(most));
			at->failed = a0 > most;
		}
		at->size = a0 * a1;
		break;
	case AF_REALLOC:
		at->ptr = a0;
		at->size = a1;
		break;
	case AF_POSIX_MEMALIGN:
		at->ptr = a0;
		at->size = ctx->rdx;
		break;
	case AF_ALIGNED_ALLOC:
	case AF_MEMALIGN:
		at->size = a1;
		break;
	case AF_PVALLOC:
		at->size = (a0 + AF_PAGE - 1) & ~(AF_PAGE - 1);
		break;
	default: /* malloc, valloc */
		at->size = a0;
		break;
	}
}

SEC("uprobe")
int ustack_alloc_enter(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct alloc_task *at;
	__u64 sp = ctx->rsp;

	if (!traced(tgid))
		return 0;
	at = bpf_task_storage_get(&alloc_tasks, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!at)
		return 0;
	/* not below the outermost call's frame: its return was missed */
	if (at->depth && sp >= at->sp)
		at->depth = 0;
	if (at->depth++)
		return 0;
	at->sp = sp;
	alloc_args(at, (__u32)bpf_get_attach_cookie(ctx), ctx);
	return 0;
}

/* A "free" event for @addr of @tgid if it is a kept allocation still live. */
static __always_inline void alloc_forget(__u32 tgid, __u64 addr)
{
	struct ub_alloc_key k = { .tgid = tgid, .addr = addr };
	struct ub_event e = {};
	__u64 args[1] = { addr };

	if (bpf_map_delete_elem(&alloc_live, &k))
		return;
	if (free_event == UB_NO_EVENT)
		return;
	e.type = UB_REC_EVENT;
	e.cpu = bpf_get_smp_processor_id();
	e.pid = tgid;
	e.tid = (__u32)bpf_get_current_pid_tgid();
	e.time = bpf_ktime_get_ns();
	e.event = free_event;
	e.kstack = -1;
	send_pevent(&e, args, 1);
}

/* A kept allocation: its stack (the caller's, from the registers at the
 * return), the event, and its entry in the live map. */
static __always_inline void alloc_keep(struct pt_regs *ctx, const struct uctx *u, __u32 tgid,
				       __u64 addr, __u64 size)
{
	struct regs_in r = { .slot = SLOT_TP, .user_mode = 1, .keep = 1 };
	struct ub_alloc_key k = { .tgid = tgid, .addr = addr };
	struct ub_event e = {};
	__u64 args[2] = { size, addr };
	long err;

	/* the event keeps collect()'s time: this one's free, sent below when
	 * the address is still in the map, must come before it */
	if (!probe_admit(bpf_ktime_get_ns()))
		return;
	/* still in the map: its free was not seen (the allocator handed the
	 * address out again, so it was freed); its "free" goes first, with a
	 * time before this event's */
	if (bpf_map_lookup_elem(&alloc_live, &k))
		alloc_forget(tgid, addr);
	if (!collect(ctx, u, alloc_event, 0, &e, &r))
		return;
	/* SLOT_TP is this CPU's; uprobe programs run preemptibly */
	if (bpf_preempt_disable)
		bpf_preempt_disable();
	finish(&e, &r);
	if (bpf_preempt_enable)
		bpf_preempt_enable();
	err = bpf_map_update_elem(&alloc_live, &k, &size, BPF_NOEXIST);
	if (err)
		count(UB_C_ALLOC_LIVE_DROPPED, 1);
	e.value = size;
	e.flags |= UB_EV_VALUE;
	send_pevent(&e, args, 2);
}

SEC("uretprobe")
int ustack_alloc_ret(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 addr = ctx->rax, size;
	struct alloc_task *at;

	if (!traced(tgid))
		return 0;
	at = bpf_task_storage_get(&alloc_tasks, bpf_get_current_task_btf(), 0, 0);
	if (!at || !at->depth || --at->depth)
		return 0;
	size = at->size;
	if (at->fn == AF_POSIX_MEMALIGN) {
		/* 0 on success, the block in *memptr */
		if (addr || !at->ptr || bpf_probe_read_user(&addr, sizeof(addr), (void *)at->ptr))
			addr = 0;
	}
	/* realloc: the old block is gone when a new one came, or when the
	 * size was 0 (glibc frees it and returns NULL) */
	if (at->fn == AF_REALLOC && at->ptr && (addr || !size))
		alloc_forget(tgid, at->ptr);
	if (!addr || at->failed)
		return 0;
	count(UB_C_ALLOC_CALLS, 1);
	count(UB_C_ALLOC_BYTES, size);
	if (ub_alloc_take(&at->left, size, alloc_mean, alloc_lnm)) {
		struct uctx u = { .ip = ctx->rip, .sp = ctx->rsp, .bp = ctx->rbp, .bx = ctx->rbx,
				  .have = 1 };

		alloc_keep(ctx, &u, tgid, addr, size);
	}
	return 0;
}

SEC("uprobe")
int ustack_alloc_free(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct alloc_task *at;
	__u64 addr = ctx->rdi;

	if (!addr || !traced(tgid))
		return 0;
	/* inside another allocator call (realloc(p, 0)): that call accounts */
	at = bpf_task_storage_get(&alloc_tasks, bpf_get_current_task_btf(), 0, 0);
	if (at && at->depth && ctx->rsp < at->sp)
		return 0;
	alloc_forget(tgid, addr);
	return 0;
}

/* record --alloc-via=preload: the functions of libustack-alloc.so
 * (src/preload/alloc.c), which samples in the program; the attach cookie
 * says which (enum rec_alloc_fn).
 *
 * ustack_alloc_hit(ret, addr, size, calls, bytes, flags), a kept
 * allocation, is reached by a tail call from the allocator function: at
 * its entry the word at rsp is the return address into the allocator's
 * caller and rbp, rbx are the caller's, the registers a uretprobe on the
 * allocator would see, so the walk starts in the caller.
 * ustack_free_hit(addr): the free of a kept block. ustack_alloc_tally(
 * calls, bytes): a thread's allocations since its last hit, at its exit. */
#define AF_HIT 10
#define AF_HIT_FREE 11
#define AF_HIT_TALLY 12
#define UB_ALLOC_UNTRACKED 1 /* USTACK_ALLOC_UNTRACKED (preload/alloc_hit.h) */

SEC("uprobe")
int ustack_alloc_hit(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 fn = bpf_get_attach_cookie(ctx);
	struct uctx u = { .sp = ctx->rsp + 8, .bp = ctx->rbp, .bx = ctx->rbx, .have = 1 };

	if (!traced(tgid))
		return 0;
	if (fn == AF_HIT_FREE) {
		if (ctx->rdi)
			alloc_forget(tgid, ctx->rdi);
		return 0;
	}
	if (fn == AF_HIT_TALLY) {
		count(UB_C_ALLOC_CALLS, ctx->rdi);
		count(UB_C_ALLOC_BYTES, ctx->rsi);
		return 0;
	}
	if (fn != AF_HIT)
		return 0;
	count(UB_C_ALLOC_CALLS, ctx->rcx);
	count(UB_C_ALLOC_BYTES, ctx->r8);
	if (ctx->r9 & UB_ALLOC_UNTRACKED)
		count(UB_C_ALLOC_LIVE_DROPPED, 1);
	if (bpf_probe_read_user(&u.ip, sizeof(u.ip), (void *)ctx->rsp))
		return 0;
	alloc_keep(ctx, &u, tgid, ctx->rsi, ctx->rdx);
	return 0;
}
