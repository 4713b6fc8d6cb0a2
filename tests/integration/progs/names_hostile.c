// SPDX-License-Identifier: MIT
/*
 * A process whose names are hostile, for tests/integration/names_hostile.sh:
 *  - threads named (prctl(PR_SET_NAME): any bytes but NUL, 15 at most)
 *    "x;y", "a\nb", "<script>", "q\"b\\s", "\xff\xfe;bad", " 1 (p->q",
 *    "\r\t\x1b[31m", "u\u2028\xc2\x9b" (U+2028, then the C1 control CSI), "z"
 *    (one character: stackcollapse-perf.pl's header regex wants two blanks
 *    after it);
 *  - a function whose ELF symbol the test rewrites in the binary's .strtab:
 *    it is named HOSTILE_NAME_SLOT_0123456789abcdef here and gets bytes no
 *    compiler writes ('(' first, ';', a newline, '<', '"', '\\', 0xff, "->");
 *  - a C++ mangled name, _Z27HOSTILE_CXX_SLOT_0123456789v (an asm label),
 *    whose 27-byte identifier the test rewrites likewise: the demangler
 *    copies an identifier as it is, so the demangled name is hostile too;
 *  - JIT code: two functions copied into anonymous executable memory and
 *    named in /tmp/perf-PID.map with names holding ';', '<', '"', '\\',
 *    invalid UTF-8, a tab, a CR, "->", a '(' first;
 *  - the program itself is run from a path with ';' and a space in it, so
 *    its name and its path are hostile too.
 *
 * Usage: names_hostile block  every thread blocks (pause), "ready" once all
 *                             are named and waiting; runs until killed
 *        names_hostile spin MS "pid N", then every thread spins MS
 *                             milliseconds in the same functions, and the
 *                             process exits
 * Each thread's stack: thread_main -> (its function) -> the wait or spin,
 * so that a snapshot sees the names in frames and a recording in samples.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 9

static const char *const thread_names[NTHREADS] = {
	"x;y", "a\nb", "<script>", "q\"b\\s", "\xff\xfe;bad", " 1 (p->q", "\r\t\x1b[31m",
	"u\xe2\x80\xa8\xc2\x9b", "z",
};

static int spin_mode;
static volatile int stop;
static volatile unsigned long sink;
static pthread_barrier_t named;

/* JIT code: spin(n) at offset 0, block() at offset 64 */
static void (*jit_spin)(unsigned long n);
static void (*jit_block)(void);

/* the work: a loop that calls nothing, or a wait that lasts */
__attribute__((noinline)) static void park(void)
{
	if (spin_mode) {
		while (!stop)
			for (int i = 0; i < 100000; i++)
				sink += (unsigned long)i;
		return;
	}
	for (;;)
		pause();
}

/* the function whose symbol name the test rewrites */
__attribute__((noinline, used)) void HOSTILE_NAME_SLOT_0123456789abcdef(void)
{
	park();
	sink++; /* not a tail call: this frame stays on the stack */
}

/* "HOSTILE_CXX_SLOT_0123456789()" once demangled; the test rewrites it */
__attribute__((noinline, used)) void hostile_cxx(void) __asm__("_Z27HOSTILE_CXX_SLOT_0123456789v");
__attribute__((noinline, used)) void hostile_cxx(void)
{
	park();
	sink++;
}

__attribute__((noinline)) static void via_jit(void)
{
	if (spin_mode) {
		while (!stop)
			jit_spin(1000000);
		return;
	}
	jit_block();
}

static void *thread_main(void *arg)
{
	long i = (long)arg;

	prctl(PR_SET_NAME, thread_names[i], 0, 0, 0);
	pthread_barrier_wait(&named);
	if (i == 0 || i == 3)
		HOSTILE_NAME_SLOT_0123456789abcdef();
	else if (i == 2 || i == 5)
		hostile_cxx();
	else if (i == 1 || i == 4)
		via_jit();
	else
		park();
	sink++;
	return NULL;
}

static int setup_jit(void)
{
	static const unsigned char spin[] = {
		0x55,             /* push %rbp */
		0x48, 0x89, 0xe5, /* mov %rsp,%rbp */
		0x48, 0x89, 0xf9, /* mov %rdi,%rcx */
		0x48, 0xff, 0xc9, /* 1: dec %rcx */
		0x75, 0xfb,       /* jnz 1b */
		0x5d,             /* pop %rbp */
		0xc3,             /* ret */
	};
	static const unsigned char block[] = {
		0x55,                         /* push %rbp */
		0x48, 0x89, 0xe5,             /* mov %rsp,%rbp */
		0xb8, 0x22, 0x00, 0x00, 0x00, /* 1: mov $34 (pause),%eax */
		0x0f, 0x05,                   /* syscall */
		0xeb, 0xf7,                   /* jmp 1b */
	};
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64];
	FILE *f;

	if (code == MAP_FAILED)
		return -1;
	memcpy(code, spin, sizeof(spin));
	memcpy(code + 64, block, sizeof(block));
	jit_spin = (void (*)(unsigned long))(void *)code;
	jit_block = (void (*)(void))(void *)(code + 64);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return -1;
	/* names: "START SIZE name", the name the rest of the line */
	fprintf(f, "%lx %zx (jit;spin<b>\"\\\xfe\t->c\n", (unsigned long)(uintptr_t)code, sizeof(spin));
	fprintf(f, "%lx %zx jit\rblock;</title>\xff\n", (unsigned long)(uintptr_t)(code + 64),
		sizeof(block));
	return fclose(f);
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	long ms = 0;

	if (argc < 2 || (strcmp(argv[1], "block") && strcmp(argv[1], "spin")) ||
	    (!strcmp(argv[1], "spin") && (argc < 3 || (ms = atol(argv[2])) <= 0))) {
		fprintf(stderr, "usage: names_hostile block | spin MS\n");
		return 2;
	}
	spin_mode = !strcmp(argv[1], "spin");
	if (spin_mode) { /* the test removes this process's perf map */
		printf("pid %d\n", (int)getpid());
		fflush(stdout);
	}
	if (setup_jit()) {
		perror("jit");
		return 1;
	}
	pthread_barrier_init(&named, NULL, NTHREADS + 1);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)i))
			return 1;
	pthread_barrier_wait(&named);
	if (spin_mode) {
		struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

		nanosleep(&ts, NULL);
		stop = 1;
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(t[i], NULL);
		return (int)(sink & 0);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
