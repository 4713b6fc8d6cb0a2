// SPDX-License-Identifier: MIT
/*
 * The marker inside a SIGUSR1 handler installed with sigaction(), reached
 * twice, each time deterministically (no timers):
 *
 *   main -> rec_sig_interrupted: sends itself SIGUSR1 with a tgkill system
 *       call made by an inline `syscall` instruction, so the signal is
 *       delivered on the way back to rec_sig_interrupted itself: the
 *       interrupted pc is in our code. Stack, innermost first:
 *       getppid x 3 <- rec_sig_handler <- __restore_rt (signal frame)
 *       <- rec_sig_interrupted <- main
 *   main -> rec_sig_raise_caller -> raise(SIGUSR1): delivered inside libc
 *       (raise's tgkill): getppid x 5 <- rec_sig_handler <- __restore_rt
 *       <- libc frames of raise <- rec_sig_raise_caller <- main
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "rec_common.h"

static volatile int rec_sig_n;
static volatile int rec_sig_seen;

REC_FN void rec_sig_handler(int sig)
{
	(void)sig;
	rec_marker(rec_sig_n);
	rec_sig_seen++;
}

REC_FN void rec_sig_interrupted(long pid, long tid)
{
	long ret;

	rec_sig_n = 3;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_tgkill), "D"(pid), "S"(tid), "d"((long)SIGUSR1)
			 : "rcx", "r11", "memory");
	rec_sink += ret;
}

REC_FN void rec_sig_raise_caller(void)
{
	rec_sig_n = 5;
	raise(SIGUSR1);
	rec_sink++;
}

int main(void)
{
	struct sigaction sa;

	rec_warm();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = rec_sig_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL)) {
		perror("sigaction");
		return 1;
	}
	rec_sig_interrupted(getpid(), gettid());
	rec_sig_raise_caller();
	printf("rec_signal: %d signals handled\n", rec_sig_seen);
	return rec_sig_seen == 2 ? 0 : 1;
}
