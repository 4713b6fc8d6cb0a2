/* Fixture: the C part of the static executable (no libc). */
static volatile int sinkv;

__attribute__((noinline)) static int work(int x)
{
	int acc = 0;

	for (int i = 0; i < x; i++)
		acc += i * sinkv;
	return acc;
}

__attribute__((noreturn)) void entry(long *sp)
{
	sinkv = work((int)*sp);
	for (;;)
		__asm__ volatile("mov $60, %%eax; xor %%edi, %%edi; syscall" ::: "rax", "rdi", "rcx", "r11", "memory");
}
