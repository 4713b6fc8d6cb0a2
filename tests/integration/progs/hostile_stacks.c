// SPDX-License-Identifier: MIT
/*
 * Target of tests/integration/stack_switch.sh: threads whose stack is not
 * the one their thread started on, or was left in unusual ways. Built with
 * plain `gcc -O2` (no frame pointers, no SFrame) except where said.
 *
 * `hostile_stacks block`: every case blocked for good, one thread each,
 * each thread named (comm) after its case; prints "ready" once all are
 * blocked or about to block:
 *
 *   hs-coro    (the main thread) main -> main_ctx_marker -> main_ctx_inner
 *              -> swapcontext() into a makecontext() coroutine on an
 *              mmap'ed stack: coro_entry -> coro_mid -> coro_block ->
 *              read() of a pipe nobody writes. main's context stays
 *              suspended in swapcontext on the main stack. Hostile on
 *              purpose: main_ctx_marker and main_ctx_inner keep frame
 *              pointers and the coroutine's context was taken by
 *              getcontext() in main_ctx_inner, so the coroutine starts with
 *              rbp pointing at main_ctx_inner's frame on the main stack; its
 *              uc_link (the word above __start_context's address on the
 *              coroutine stack) points at main's ucontext on the main stack.
 *              A frame-pointer guess, or __start_context read as an
 *              ordinary frame, lands on the main stack: main_ctx_marker or
 *              main below coro_* frames is wrong.
 *   hs-alt     alt_thread -> alt_interrupted, which sends itself SIGUSR1
 *              with an inline tgkill (delivered on the way back: the
 *              interrupted pc is in alt_interrupted); the handler runs on a
 *              sigaltstack: alt_handler -> alt_mid -> alt_block -> read().
 *              The right chain goes through __restore_rt back to
 *              alt_interrupted on the thread's own stack.
 *   hs-longjmp lj_thread -> lj_setup: sigsetjmp, then lj_victim sends
 *              itself SIGUSR2 (inline tgkill); lj_handler -> lj_deep ->
 *              siglongjmp back into lj_setup, which then calls lj_after_a
 *              -> lj_after_b -> read(). No handler frame, no __restore_rt
 *              may be left in the stack.
 *   hs-clone   a thread made by a raw clone(2) system call (CLONE_VM |
 *              CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
 *              CLONE_SYSVSEM, no CLONE_SETTLS) on an mmap'ed stack, with no
 *              libc start routine: it starts in hs_clone_entry (assembly,
 *              no CFI at all, rbp left as the parent had it: raw_clone()
 *              keeps a frame pointer, so rbp points into the main thread's
 *              stack, where raw_clone's frame was and main's later calls
 *              put theirs), which calls clone_a -> clone_b ->
 *              clone_block, a read() made by an inline `syscall` (the
 *              thread has no TLS of its own: it calls nothing in libc).
 *   hs-clone2  the same from hs_clone_entry_end, whose CFI marks the end
 *              of the stack (DW_CFA_undefined rip, as glibc's clone3
 *              does) and which clears rbp; its stack starts at the very
 *              end of its mapping (the CFA of hs_clone_entry_end, sp + 8,
 *              lies past the mapping: the marked end must still win), and
 *              a read-only page follows it whose first word, the "return
 *              address" an ordinary row would read, is 0x4848484848484848.
 *   hs-clone3  the same from hs_clone_entry_lie, whose CFI says it is an
 *              ordinary function (return address at sp on entry), while
 *              the word at sp, inside the stack's mapping, is
 *              0x4848484848484848 (as for hs-clone): wrong tables in
 *              hand-written assembly, and what an assembler whose SFrame
 *              drops .cfi_undefined rip makes of hs_clone_entry_end.
 *
 * `hostile_stacks spin MS`: for `ustack record`, one thread: first a
 * coroutine (set up as above, hostile rbp and uc_link) spins for MS ms of
 * its own CPU time in coro_spin_a -> coro_spin_b, then switches back to
 * main's context; then alt_spin_interrupted sends SIGUSR1 to itself and
 * the handler spins MS ms on a sigaltstack in alt_spin_handler ->
 * alt_spin_b. Prints "spin: coro N alt M" (loop rounds) at the end.
 * Spinning is counted in thread CPU time, so the number of samples does
 * not depend on the load of the machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>

#if defined(__has_attribute)
#if __has_attribute(noipa)
#define HS_FN __attribute__((noipa, used))
#endif
#endif
#ifndef HS_FN
#define HS_FN __attribute__((noinline, noclone, used))
#endif
#define HS_FP __attribute__((optimize("no-omit-frame-pointer")))

#define STACK_SIZE (256 * 1024)

static volatile long sink;
static int block_fd; /* read end of a pipe nobody writes */

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void *map_stack(void)
{
	void *p = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/*
 * A stack whose mapping is followed by a read-only page (a mapping of its
 * own) that starts with a word that is neither 0 nor code: a walk that
 * reads past the end of the stack finds no "end of chain" there.
 */
static void *map_stack_fenced(void)
{
	char *p = mmap(NULL, STACK_SIZE + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	*(unsigned long *)(p + STACK_SIZE) = 0x4848484848484848ul;
	if (mprotect(p + STACK_SIZE, 4096, PROT_READ))
		die("mprotect");
	return p;
}

/* read(block_fd) through libc: blocks for good */
HS_FN static void block_in_libc(void)
{
	char c;

	sink += read(block_fd, &c, 1);
}

static void name_thread(const char *name)
{
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* tgkill(getpid(), gettid(), sig) by an inline `syscall`: the signal is
 * delivered on the way back to the calling function itself */
static inline __attribute__((always_inline)) void self_signal(int sig)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_tgkill), "D"((long)getpid()), "S"((long)gettid()),
			   "d"((long)sig)
			 : "rcx", "r11", "memory");
	sink += ret;
}

static void alt_stack_on(void)
{
	stack_t ss = { .ss_sp = map_stack(), .ss_size = STACK_SIZE };

	if (sigaltstack(&ss, NULL))
		die("sigaltstack");
}

static inline __attribute__((always_inline)) double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* spins until the thread has used @ms ms of CPU since @t0; returns rounds */
static inline __attribute__((always_inline)) long spin_for(double t0, double ms)
{
	long rounds = 0;

	do {
		for (int i = 0; i < 200000; i++)
			sink += i;
		rounds++;
	} while (thread_cpu_ms() - t0 < ms);
	return rounds;
}

/* ---- the coroutine ------------------------------------------------------- */

static ucontext_t main_uc_static; /* spin mode */
static ucontext_t coro_uc;
static int spin_mode;
static double spin_ms;
static long coro_rounds, alt_rounds;

HS_FN static void coro_block(void)
{
	block_in_libc();
	sink++;
}

HS_FN static void coro_mid(void)
{
	coro_block();
	sink++;
}

HS_FN static void coro_spin_b(void)
{
	coro_rounds = spin_for(thread_cpu_ms(), spin_ms);
	sink++;
}

HS_FN static void coro_spin_a(void)
{
	coro_spin_b();
	sink++;
}

HS_FN static void coro_entry(void)
{
	if (spin_mode)
		coro_spin_a();
	else
		coro_mid();
	sink++;
	/* returning goes to __start_context, which resumes uc_link */
}

/* Keeps a frame pointer: the coroutine's context is taken here, so it
 * starts with rbp pointing at this frame, on the main stack. */
HS_FN HS_FP static void main_ctx_inner(ucontext_t *main_uc, void *stack)
{
	if (getcontext(&coro_uc))
		die("getcontext");
	coro_uc.uc_stack.ss_sp = stack;
	coro_uc.uc_stack.ss_size = STACK_SIZE;
	coro_uc.uc_link = main_uc;
	makecontext(&coro_uc, coro_entry, 0);
	if (swapcontext(main_uc, &coro_uc))
		die("swapcontext");
	sink++;
}

HS_FN HS_FP static void main_ctx_marker(ucontext_t *main_uc)
{
	main_ctx_inner(main_uc, map_stack());
	sink++;
}

/* ---- sigaltstack ----------------------------------------------------------- */

HS_FN static void alt_block(void)
{
	block_in_libc();
	sink++;
}

HS_FN static void alt_mid(void)
{
	alt_block();
	sink++;
}

HS_FN static void alt_spin_b(void)
{
	alt_rounds = spin_for(thread_cpu_ms(), spin_ms);
	sink++;
}

HS_FN static void alt_handler(int sig)
{
	(void)sig;
	if (spin_mode)
		alt_spin_b();
	else
		alt_mid();
	sink++;
}

HS_FN static void alt_interrupted(void)
{
	self_signal(SIGUSR1);
	sink++;
}

static void on_altstack(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		die("sigaction");
}

static void *alt_thread(void *arg)
{
	(void)arg;
	name_thread("hs-alt");
	alt_stack_on();
	alt_interrupted();
	return NULL;
}

/* ---- siglongjmp out of a handler --------------------------------------------- */

static __thread sigjmp_buf lj_env;

HS_FN static void lj_deep(void)
{
	siglongjmp(lj_env, 1);
}

HS_FN static void lj_handler(int sig)
{
	(void)sig;
	lj_deep();
	sink++;
}

HS_FN static void lj_victim(void)
{
	self_signal(SIGUSR2);
	sink++;
}

HS_FN static void lj_after_b(void)
{
	block_in_libc();
	sink++;
}

HS_FN static void lj_after_a(void)
{
	lj_after_b();
	sink++;
}

HS_FN static void lj_setup(void)
{
	if (sigsetjmp(lj_env, 1) == 0) {
		lj_victim();
		fprintf(stderr, "hostile_stacks: SIGUSR2 handler returned\n");
		exit(1);
	}
	lj_after_a();
	sink++;
}

static void *lj_thread(void *arg)
{
	struct sigaction sa;

	(void)arg;
	name_thread("hs-longjmp");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = lj_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL))
		die("sigaction");
	lj_setup();
	return NULL;
}

/* ---- a thread made by a raw clone(2) ---------------------------------------------- */

/* read(block_fd) by an inline `syscall`: nothing of libc in this thread */
HS_FN static void clone_block(void)
{
	char c;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_read), "D"((long)block_fd), "S"(&c), "d"(1L)
			 : "rcx", "r11", "memory");
	sink += ret;
}

HS_FN static void clone_b(void)
{
	clone_block();
	sink++;
}

HS_FN void clone_a(long named)
{
	/* prctl by hand too: the name for the test */
	static const char names[3][16] = { "hs-clone", "hs-clone2", "hs-clone3" };
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_prctl), "D"((long)PR_SET_NAME), "S"(names[named])
			 : "rcx", "r11", "memory");
	sink += ret;
	clone_b();
	sink++;
}

/*
 * The child's first instructions; the function's argument is in r12 (the
 * child has the parent's registers). hs_clone_entry has no CFI and keeps
 * the parent's rbp; hs_clone_entry_end is what a careful runtime writes
 * (as glibc's clone3: the return address undefined, rbp 0);
 * hs_clone_entry_lie's CFI describes an ordinary function entry (CFA
 * sp + 8, return address at sp), which it is not.
 */
__asm__(".text\n"
	".globl hs_clone_entry\n"
	".type hs_clone_entry, @function\n"
	"hs_clone_entry:\n"
	"	mov %r12, %rdi\n"
	"	call clone_a\n"
	"	mov $60, %eax\n"
	"	xor %edi, %edi\n"
	"	syscall\n"
	"	hlt\n"
	".size hs_clone_entry, .-hs_clone_entry\n"
	".globl hs_clone_entry_end\n"
	".type hs_clone_entry_end, @function\n"
	"hs_clone_entry_end:\n"
	"	.cfi_startproc\n"
	"	.cfi_undefined rip\n"
	"	xor %ebp, %ebp\n"
	"	mov %r12, %rdi\n"
	"	call clone_a\n"
	"	mov $60, %eax\n"
	"	xor %edi, %edi\n"
	"	syscall\n"
	"	hlt\n"
	"	.cfi_endproc\n"
	".size hs_clone_entry_end, .-hs_clone_entry_end\n"
	".globl hs_clone_entry_lie\n"
	".type hs_clone_entry_lie, @function\n"
	"hs_clone_entry_lie:\n"
	"	.cfi_startproc\n"
	"	mov %r12, %rdi\n"
	"	call clone_a\n"
	"	mov $60, %eax\n"
	"	xor %edi, %edi\n"
	"	syscall\n"
	"	hlt\n"
	"	.cfi_endproc\n"
	".size hs_clone_entry_lie, .-hs_clone_entry_lie\n");
void hs_clone_entry(void);
void hs_clone_entry_end(void);
void hs_clone_entry_lie(void);

/*
 * clone(flags, stack) by hand: the child returns from the system call on
 * the new stack and jumps to @entry. Keeps a frame pointer, so that rbp,
 * which the child inherits, points at this frame on the caller's stack.
 * The child's stack starts @below bytes under the end of its mapping (0:
 * at the very end, so that its entry's CFA, sp + 8, lies past it, in a
 * fence page: map_stack_fenced()).
 */
HS_FN HS_FP static long raw_clone(void (*entry)(void), long arg, long below)
{
	char *top = (char *)(below ? map_stack() : map_stack_fenced()) + STACK_SIZE - below;
	long ret;

	if (below) /* at sp: a word that is neither 0 nor code */
		*(unsigned long *)top = 0x4848484848484848ul;

	/* the child: rax 0, rsp = top; it must not return here (the
	 * parent's frame is not on its stack): jump to entry at once */
	__asm__ volatile("mov %[arg], %%r12\n\t"
			 "syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "jmp *%[entry]\n"
			 "1:"
			 : "=a"(ret)
			 : "0"((long)SYS_clone),
			   "D"((long)(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
				      CLONE_THREAD | CLONE_SYSVSEM)),
			   "S"(top), "d"(0L), [entry] "r"(entry), [arg] "r"(arg)
			 : "rcx", "r8", "r10", "r11", "r12", "memory");
	if (ret < 0) {
		errno = (int)-ret;
		die("clone");
	}
	return ret;
}

/* ---- main ---------------------------------------------------------------------- */

static void start(void *(*fn)(void *))
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL))
		die("pthread_create");
}

HS_FN static void alt_spin_interrupted(void)
{
	self_signal(SIGUSR1);
	sink++;
}

int main(int argc, char **argv)
{
	int fds[2];

	if (argc < 2) {
		fprintf(stderr, "usage: hostile_stacks block | spin MS\n");
		return 2;
	}
	if (pipe(fds))
		die("pipe");
	block_fd = fds[0];
	if (!strcmp(argv[1], "spin")) {
		spin_mode = 1;
		spin_ms = argc > 2 ? atof(argv[2]) : 200;
		main_ctx_marker(&main_uc_static);
		alt_stack_on();
		on_altstack(SIGUSR1, alt_handler);
		alt_spin_interrupted();
		printf("spin: coro %ld alt %ld\n", coro_rounds, alt_rounds);
		return coro_rounds > 0 && alt_rounds > 0 ? 0 : 1;
	}
	if (strcmp(argv[1], "block"))
		return 2;
	on_altstack(SIGUSR1, alt_handler);
	start(alt_thread);
	start(lj_thread);
	raw_clone(hs_clone_entry, 0, 64);
	raw_clone(hs_clone_entry_end, 1, 0);
	raw_clone(hs_clone_entry_lie, 2, 64);
	name_thread("hs-coro");
	printf("ready\n");
	fflush(stdout);
	{
		ucontext_t main_uc; /* on the main stack: uc_link points here */

		main_ctx_marker(&main_uc);
	}
	return 1; /* the coroutine never returns */
}
