// SPDX-License-Identifier: MIT
/*
 * libustack-alloc.so: record --alloc's byte sampling inside the program,
 * for a command ustack starts (LD_PRELOAD, record --alloc-via=preload).
 *
 * With uprobes on the allocator, every malloc and free traps into the
 * kernel (about 4 us a hit), whatever the sampling then keeps: an
 * allocation-heavy program runs several times slower. Here the countdown
 * of the byte sampling (the same draw as the kernel's: bpf/alloc_draw.h)
 * runs in the program, and only a kept allocation, and the free of a kept
 * one, calls a function ustack has a uprobe on:
 *
 *   ustack_alloc_hit(ret, addr, size, calls, bytes, flags)
 *	a kept allocation of @size bytes at @addr; @calls and @bytes: the
 *	thread's allocations since its last hit; flags: USTACK_ALLOC_UNTRACKED
 *	when the table of kept blocks was full (its free will not be seen).
 *	Returns @ret, and is reached by a tail call from the allocator
 *	function: at its entry the return address on the stack and every
 *	callee-saved register are those of the allocator's caller, as at a
 *	uretprobe, so the kernel unwinds from the caller and no frame of this
 *	file is in the stack (the build checks each call to it is a jump:
 *	scripts/check-tail-calls.sh).
 *   ustack_free_hit(addr)
 *	the free of a kept block, before the allocator has it back (another
 *	thread could otherwise be handed the same address first).
 *   ustack_alloc_tally(calls, bytes)
 *	the allocations a thread made since its last hit, at its exit and at
 *	the process's.
 *
 * The environment: USTACK_ALLOC_MEAN (bytes; <= 1: every allocation),
 * USTACK_ALLOC_LIVE_MAX (kept blocks tracked at once). The blocks kept are
 * in a hash table under a spin lock; a free looks there only when a
 * per-bucket count of live kept blocks, read without the lock, says the
 * address may be one, so that a free costs a load in the common case.
 *
 * Not built with the sanitizers (it goes into programs that are not) nor
 * with the library's objects: it depends on nothing but libc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/alloc_hit.h"

typedef uint64_t ub_u64;
typedef uint32_t ub_u32;

#define EXPORT __attribute__((visibility("default")))
#define TLS __attribute__((tls_model("initial-exec")))
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- the thread's state ---------------------------------------------------------- */

struct tstate {
	ub_u64 left;  /* bytes before the next kept allocation (0: not drawn) */
	ub_u64 given; /* the countdowns drawn since the last hit */
	ub_u64 calls; /* allocations since the last hit */
	ub_u64 rnd;   /* xorshift64* state (0: not seeded) */
	int in_init;  /* this thread runs init(): allocations from the arena */
	int keyed;    /* the exit tally is registered */
	ub_u64 hit_calls, hit_bytes, hit_flags; /* draw() to the hit */
};

static __thread struct tstate ts TLS;
static ub_u64 seed;
static _Atomic ub_u64 nthreads;

static ub_u64 splitmix(ub_u64 x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static ub_u32 shim_random(void)
{
	ub_u64 x = ts.rnd;

	if (unlikely(!x)) {
		x = splitmix(seed + atomic_fetch_add_explicit(&nthreads, 1, memory_order_relaxed));
		if (!x)
			x = 1;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	ts.rnd = x;
	return (ub_u32)((x * 0x2545f4914f6cdd1dull) >> 32);
}

#define UB_ALLOC_RANDOM() shim_random()
#include "bpf/alloc_draw.h"

static ub_u64 mean = 512 * 1024;
static ub_u64 lnm[UB_ALLOC_LN_N + 1];

/* ---- the allocator underneath ------------------------------------------------------ */

static void *boot_malloc(size_t n);
static void boot_free(void *p);
static void *boot_calloc(size_t n, size_t size);
static void *boot_realloc(void *old, size_t n);
static int boot_posix_memalign(void **out, size_t align, size_t n);
static void *boot_aligned_alloc(size_t align, size_t n);
static void *boot_memalign(size_t align, size_t n);
static void *boot_valloc(size_t n);
static void *boot_pvalloc(size_t n);

/* The next definitions (RTLD_NEXT: libc's, or an allocator preloaded after
 * this file); until init() has them, functions that take allocations from
 * the arena. Read with REAL(): a relaxed load, published once. */
static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
} real = {
	boot_malloc, boot_free, boot_calloc, boot_realloc, boot_posix_memalign,
	boot_aligned_alloc, boot_memalign, boot_valloc, boot_pvalloc,
};
#define REAL(f) __atomic_load_n(&real.f, __ATOMIC_RELAXED)

static ub_u64 live_max = 1u << 20; /* kept blocks in the table at most */

/* ---- the blocks kept ----------------------------------------------------------------- */

#define FILTER_BITS 16
/* kept blocks live per bucket of addresses (and arena blocks, for ever):
 * a free looks further only where its bucket is not 0 */
static _Atomic ub_u32 filter[1u << FILTER_BITS];
#define FILTER(a) filter[((ub_u64)(uintptr_t)(a) * 0x9e3779b97f4a7c15ull) >> (64 - FILTER_BITS)]
static atomic_flag table_lock = ATOMIC_FLAG_INIT;
static uintptr_t *table; /* open addressing, 0: empty; mmap()ed */
static size_t table_cap, table_nr;

static inline ub_u64 hash_addr(uintptr_t a)
{
	return (ub_u64)a * 0x9e3779b97f4a7c15ull;
}

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&table_lock, memory_order_acquire))
		sched_yield();
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&table_lock, memory_order_release);
}

static void table_atfork_prepare(void)
{
	lock();
}

static void table_atfork_after(void)
{
	unlock();
}

/* the child's counts since the last hit are the parent's, told by it */
static void table_atfork_child(void)
{
	unlock();
	ts.calls = 0;
	ts.given = ts.left;
}

static size_t slot_of(uintptr_t a, size_t cap)
{
	return (size_t)(hash_addr(a) >> 20) & (cap - 1);
}

/* twice the room, or 4096 slots; under the lock */
static int table_grow(void)
{
	size_t cap = table_cap ? table_cap * 2 : 4096;
	uintptr_t *t = mmap(NULL, cap * sizeof(*t), PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (t == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < table_cap; i++) {
		size_t s;

		if (!table[i])
			continue;
		for (s = slot_of(table[i], cap); t[s]; s = (s + 1) & (cap - 1))
			;
		t[s] = table[i];
	}
	if (table)
		munmap(table, table_cap * sizeof(*table));
	table = t;
	table_cap = cap;
	return 0;
}

/* 0: kept in the table, -1: not (full) */
static int remember(uintptr_t a)
{
	int ret = -1;

	lock();
	/* at most half full */
	if (table_nr < live_max && ((table_nr + 1) * 2 <= table_cap || !table_grow())) {
		size_t s;

		for (s = slot_of(a, table_cap); table[s] && table[s] != a; s = (s + 1) & (table_cap - 1))
			;
		if (!table[s]) {
			table[s] = a;
			table_nr++;
			atomic_fetch_add_explicit(&FILTER(a), 1, memory_order_relaxed);
		}
		ret = 0;
	}
	unlock();
	return ret;
}

/* 1 if @a was a kept block (now forgotten); under the lock, backward-shift
 * deletion keeps every chain whole */
static int forget(uintptr_t a)
{
	size_t s, j, home;

	lock();
	if (!table_cap) {
		unlock();
		return 0;
	}
	for (s = slot_of(a, table_cap); table[s] && table[s] != a; s = (s + 1) & (table_cap - 1))
		;
	if (!table[s]) {
		unlock();
		return 0;
	}
	table[s] = 0;
	table_nr--;
	atomic_fetch_sub_explicit(&FILTER(a), 1, memory_order_relaxed);
	for (j = (s + 1) & (table_cap - 1); table[j]; j = (j + 1) & (table_cap - 1)) {
		home = slot_of(table[j], table_cap);
		/* table[j] may move to s when s lies cyclically in [home, j) */
		if (((j - home) & (table_cap - 1)) >= ((j - s) & (table_cap - 1))) {
			table[s] = table[j];
			table[j] = 0;
			s = j;
		}
	}
	unlock();
	return 1;
}

/* ---- the hits: ustack's uprobes are on these -------------------------------------- */

/* Each a few instructions of its own, in assembly: the compiler can neither
 * fold nor inline them. Each starts with push %rbp, the instruction the
 * uprobe replaces: the x86 kernel emulates a push at a uprobe where most
 * instructions are single-stepped out of line, a second trap (an
 * allocation and its free recorded at --alloc-mean 1: 5 us against 19 us
 * with a mov first, and 30 us with a 5-byte nop, on Linux 6.18 here). */
/* a function that only returns, @name: a string */
#define EMPTY_HIT(name)                                                                    \
	".globl " name "\n.type " name ", @function\n.p2align 4\n" name ":\n.cfi_startproc\n"  \
	"	push %rbp\n.cfi_adjust_cfa_offset 8\n	pop %rbp\n.cfi_adjust_cfa_offset -8\n"     \
	"	ret\n.cfi_endproc\n.size " name ", .-" name "\n"

__asm__(".text\n"
	".globl ustack_alloc_hit\n"
	".type ustack_alloc_hit, @function\n"
	".p2align 4\n"
	"ustack_alloc_hit:\n"
	".globl ustack_alloc_hit_int\n" /* the same, typed for posix_memalign */
	".hidden ustack_alloc_hit_int\n"
	"ustack_alloc_hit_int:\n"
	".globl ustack_alloc_hit_ptr\n" /* and for the others */
	".hidden ustack_alloc_hit_ptr\n"
	"ustack_alloc_hit_ptr:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_adjust_cfa_offset 8\n"
	"	mov %rdi, %rax\n"
	"	pop %rbp\n"
	".cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size ustack_alloc_hit, .-ustack_alloc_hit\n"
	EMPTY_HIT("ustack_free_hit") EMPTY_HIT("ustack_alloc_tally"));

EXPORT uintptr_t ustack_alloc_hit(uintptr_t ret, uintptr_t addr, size_t size, ub_u64 calls,
				  ub_u64 bytes, ub_u64 flags);
void *ustack_alloc_hit_ptr(uintptr_t ret, uintptr_t addr, size_t size, ub_u64 calls,
			   ub_u64 bytes, ub_u64 flags);
int ustack_alloc_hit_int(uintptr_t ret, uintptr_t addr, size_t size, ub_u64 calls,
			 ub_u64 bytes, ub_u64 flags);
EXPORT void ustack_free_hit(uintptr_t addr);
EXPORT void ustack_alloc_tally(ub_u64 calls, ub_u64 bytes);

/* ---- start-up ------------------------------------------------------------------------ */

/* Before the functions underneath are known (dlsym itself may allocate),
 * allocations come from here, and are never given back (their buckets in
 * the filter stay counted: their free takes the slow path, which knows
 * them). */
static _Alignas(64) char arena[64 * 1024];
static _Atomic size_t arena_used;

static int in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof(arena);
}

static void *arena_alloc(size_t n, size_t align)
{
	size_t cur = atomic_load(&arena_used), at, next;

	if (align < 16)
		align = 16;
	do {
		at = (cur + 16 + align - 1) & ~(align - 1); /* 16 bytes before: the size */
		next = at + n;
		if (at > sizeof(arena) || next > sizeof(arena) || next < at)
			return NULL;
	} while (!atomic_compare_exchange_weak(&arena_used, &cur, next));
	*(size_t *)(arena + at - 16) = n;
	atomic_fetch_add_explicit(&FILTER(arena + at), 1, memory_order_relaxed);
	return arena + at;
}

static size_t arena_size(const void *p)
{
	return *(const size_t *)((const char *)p - 16);
}

static ub_u64 env_u64(const char *name, ub_u64 dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 10);
	return errno || *end ? dflt : v;
}

static _Atomic int init_state; /* 0 not yet, 1 under way, 2 done */
static pthread_key_t exit_key;
static int have_key;
static void thread_exit(void *unused);

static void *no_alloc(void)
{
	errno = ENOMEM;
	return NULL;
}

/* 1 when the functions underneath are there; 0 in the thread that looks
 * them up (dlsym may allocate: the arena serves it) */
static int init(void)
{
	int expect = 0;

	if (atomic_load_explicit(&init_state, memory_order_acquire) == 2)
		return 1;
	if (!atomic_compare_exchange_strong(&init_state, &expect, 1)) {
		if (ts.in_init)
			return 0;
		while (atomic_load_explicit(&init_state, memory_order_acquire) != 2)
			sched_yield();
		return 1;
	}
	ts.in_init = 1;
	mean = env_u64("USTACK_ALLOC_MEAN", mean);
	live_max = env_u64("USTACK_ALLOC_LIVE_MAX", live_max);
	if (!live_max)
		live_max = 1;
	ub_alloc_lnm_fill(lnm);
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (ub_u64)(uintptr_t)&seed ^ (ub_u64)getpid() << 32;
	pthread_atfork(table_atfork_prepare, table_atfork_after, table_atfork_child);
	have_key = !pthread_key_create(&exit_key, thread_exit);
#define NEXT(f)                                                                            \
	do {                                                                               \
		void *f_ = dlsym(RTLD_NEXT, #f);                                           \
		__atomic_store_n((void **)&real.f, f_ ? f_ : (void *)no_alloc,              \
				 __ATOMIC_RELAXED);                                        \
	} while (0)
	/* free first: a block the next malloc hands out is freed by the next
	 * free; until then only arena blocks exist */
	NEXT(free);
	NEXT(calloc);
	NEXT(realloc);
	NEXT(posix_memalign);
	NEXT(aligned_alloc);
	NEXT(memalign);
	NEXT(valloc);
	NEXT(pvalloc);
	NEXT(malloc);
#undef NEXT
	ts.in_init = 0;
	atomic_store_explicit(&init_state, 2, memory_order_release);
	return 1;
}

static void *boot_malloc(size_t n)
{
	return init() ? REAL(malloc)(n) : arena_alloc(n, 16);
}

static void boot_free(void *p)
{
	(void)p; /* before init() only arena blocks exist: never given back */
}

static void *boot_calloc(size_t n, size_t size)
{
	if (init())
		return REAL(calloc)(n, size);
	if (size && n > SIZE_MAX / size)
		return NULL;
	return arena_alloc(n * size, 16); /* never used before: zeroed */
}

static void *boot_realloc(void *old, size_t n)
{
	void *p;

	if (init() && !in_arena(old))
		return REAL(realloc)(old, n);
	p = boot_malloc(n);
	if (p && old)
		memcpy(p, old, arena_size(old) < n ? arena_size(old) : n);
	return p;
}

static int boot_posix_memalign(void **out, size_t align, size_t n)
{
	if (init())
		return REAL(posix_memalign)(out, align, n);
	*out = arena_alloc(n, align);
	return *out ? 0 : ENOMEM;
}

static void *boot_aligned_alloc(size_t align, size_t n)
{
	return init() ? REAL(aligned_alloc)(align, n) : arena_alloc(n, align);
}

static void *boot_memalign(size_t align, size_t n)
{
	return init() ? REAL(memalign)(align, n) : arena_alloc(n, align);
}

static void *boot_valloc(size_t n)
{
	return init() ? REAL(valloc)(n) : arena_alloc(n, 4096);
}

static void *boot_pvalloc(size_t n)
{
	return init() ? REAL(pvalloc)(n) : arena_alloc((n + 4095) & ~(size_t)4095, 4096);
}

static void thread_exit(void *unused)
{
	(void)unused;
	if (ts.calls || ts.given != ts.left)
		ustack_alloc_tally(ts.calls, ts.given - ts.left);
	ts.calls = 0;
	ts.given = ts.left;
}

/* The thread's counts at a normal exit (exit(), a return from main) and
 * at _exit() and _Exit(), which run no destructor; not at a death by a
 * signal, an exec, or a raw exit_group system call (docs/cli/record.md) */
__attribute__((destructor)) static void process_exit(void)
{
	thread_exit(NULL);
}

EXPORT __attribute__((noreturn)) void _exit(int status)
{
	thread_exit(NULL);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	_exit(status);
}

/* ---- the sampling --------------------------------------------------------------------- */

/*
 * The fast path, inlined in each allocator function: the allocation is
 * counted, and when it does not reach the countdown (ts.left) that is all.
 * Otherwise the slow path, alloc_slow_*(), reached by a tail call: it draws
 * the countdown (the thread's first allocation, or a kept one) and, for a
 * kept allocation, tail-calls the hit. Two tail calls in a row: at the
 * hit's entry the stack is the allocator's caller's.
 *
 * The bytes since the last hit are not summed on the fast path: ts.given
 * is the sum of the countdowns drawn since, and given - left what the
 * allocations that did not reach them took.
 */
static inline int take(ub_u64 n)
{
	if (__builtin_expect(n < ts.left, 1)) {
		ts.left -= n;
		return 0;
	}
	return 1;
}

/* the slow path: 1 when the allocation is kept, with the hit's counts in
 * ts.hit_calls, ts.hit_bytes (no local of the caller's has its address
 * taken: that would stop the tail call) */
static __attribute__((noinline)) int draw(uintptr_t a, ub_u64 n)
{
	if (in_arena((void *)a))
		return 0; /* ld.so's, before the allocator: never freed, not kept */
	if (!ts.keyed) {
		ts.keyed = 1; /* before: pthread_setspecific() may allocate */
		if (have_key)
			pthread_setspecific(exit_key, (void *)1);
	}
	if (mean > 1 && !ts.left) { /* the thread's first allocation */
		ts.left = ts.given = ub_alloc_draw(shim_random(), mean, lnm);
		if (n < ts.left) {
			ts.left -= n;
			return 0;
		}
	}
	ts.hit_calls = ts.calls;
	ts.hit_bytes = ts.given - ts.left + n;
	ts.calls = 0;
	ts.left = ts.given = mean > 1 ? ub_alloc_draw(shim_random(), mean, lnm) : 0;
	ts.hit_flags = remember(a) ? USTACK_ALLOC_UNTRACKED : 0;
	return 1;
}

static __attribute__((noinline)) void *alloc_slow_ptr(void *p, ub_u64 n)
{
	if (!draw((uintptr_t)p, n))
		return p;
	return ustack_alloc_hit_ptr((uintptr_t)p, (uintptr_t)p, n, ts.hit_calls, ts.hit_bytes,
				    ts.hit_flags);
}

static __attribute__((noinline)) int alloc_slow_int(void *p, ub_u64 n)
{
	if (!draw((uintptr_t)p, n))
		return 0;
	return ustack_alloc_hit_int(0, (uintptr_t)p, n, ts.hit_calls, ts.hit_bytes,
				    ts.hit_flags);
}

/* The end of an allocator function that got @p for @n bytes (NULL: none) */
#define ALLOCATED(p, n)                                                                    \
	do {                                                                               \
		void *p_ = (p);                                                            \
		ub_u64 n_ = (n);                                                           \
		if (__builtin_expect(!p_, 0))                                              \
			return p_;                                                         \
		ts.calls++;                                                                \
		if (!take(n_))                                                             \
			return p_;                                                         \
		return alloc_slow_ptr(p_, n_);                                             \
	} while (0)

/* The free of @p where its bucket in the filter is not 0: an arena block,
 * a kept block (told to ustack before the allocator has it back: another
 * thread could otherwise be handed the address first), or neither. */
static __attribute__((noinline)) void free_slow(void *p)
{
	if (in_arena(p))
		return;
	if (forget((uintptr_t)p))
		ustack_free_hit((uintptr_t)p);
	REAL(free)(p);
}

static inline int maybe_kept(const void *p)
{
	return __builtin_expect(!!atomic_load_explicit(&FILTER(p), memory_order_relaxed), 0);
}

/* ---- the allocator's functions ------------------------------------------------------- */

EXPORT void *malloc(size_t n)
{
	ALLOCATED(REAL(malloc)(n), n);
}

EXPORT void free(void *p)
{
	if (maybe_kept(p))
		free_slow(p);
	else
		REAL(free)(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	ALLOCATED(REAL(calloc)(n, size), n * size); /* NULL where n * size overflows */
}

/* The old block first: told before the allocator can hand it to another
 * thread. Should realloc fail (NULL for n > 0), the block still lives and
 * ustack has its free: a report counts it freed. */
static inline void realloc_old(void *old)
{
	if (old && maybe_kept(old) && !in_arena(old) && forget((uintptr_t)old))
		ustack_free_hit((uintptr_t)old);
}

EXPORT void *realloc(void *old, size_t n)
{
	if (__builtin_expect(in_arena(old), 0))
		return boot_realloc(old, n);
	realloc_old(old);
	ALLOCATED(REAL(realloc)(old, n), n);
}

/* realloc's, the product checked (glibc's reallocarray calls realloc
 * through its PLT: the next one's would count the call twice) */
EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	if (__builtin_expect(in_arena(old), 0))
		return boot_realloc(old, n * size);
	realloc_old(old);
	ALLOCATED(REAL(realloc)(old, n * size), n * size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	int ret = REAL(posix_memalign)(out, align, n);

	if (ret)
		return ret;
	ts.calls++;
	if (!take(n))
		return 0;
	return alloc_slow_int(*out, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	ALLOCATED(REAL(aligned_alloc)(align, n), n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	ALLOCATED(REAL(memalign)(align, n), n);
}

EXPORT void *valloc(size_t n)
{
	ALLOCATED(REAL(valloc)(n), n);
}

EXPORT void *pvalloc(size_t n)
{
	ALLOCATED(REAL(pvalloc)(n), (n + 4095) & ~(size_t)4095); /* x86-64's page */
}
