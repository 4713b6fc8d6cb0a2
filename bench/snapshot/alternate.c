// SPDX-License-Identifier: MIT
/*
 * Runs commands alternately and prints the wall time of each run, whole
 * process from spawn to exit (output to /dev/null):
 *
 *   alternate RUNS WARMUP NAME CMD ARGS... [:: NAME CMD ARGS...]...
 *
 * Every round runs every command once, so that a change of machine load
 * hits all of them alike. The orders of the rounds form a Williams design
 * (for 4 commands: A B D C, B C A D, C D B A, D A C B; for an odd count
 * these and their reverses), in which each command comes right after each
 * other one equally often: a run right after gdb's was measured slower,
 * whichever tool it was, and the plain rotation used before (A B C, B C A,
 * ...) put the same tool after gdb in all but one round of each cycle.
 * After each run the target is left alone for SETTLE_MS (not timed), so
 * that no run pays for the threads the previous tool has just released.
 * WARMUP rounds first, not printed. Output: one line "NAME MICROSECONDS"
 * per timed run.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

#define SETTLE_MS 20

/* Position k of round r in a Williams design of n commands: row 0 is
 * 0, 1, n-1, 2, n-2, ...; row i adds i (mod n); for odd n the rows n..2n-1
 * are rows 0..n-1 reversed. */
static int williams(int n, int r, int k)
{
	int rows = n % 2 ? 2 * n : n, row = r % rows, v;

	if (row >= n) {
		row -= n;
		k = n - 1 - k;
	}
	v = k == 0 ? 0 : k % 2 ? (k + 1) / 2 : n - k / 2;
	return (v + row) % n;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	char **cmds[32], *names[32];
	int n = 0, runs, warmup;
	posix_spawn_file_actions_t fa;

	if (argc < 5) {
		fprintf(stderr, "usage: alternate RUNS WARMUP NAME CMD [ARGS...] [:: NAME CMD ...]...\n");
		return 2;
	}
	runs = atoi(argv[1]);
	warmup = atoi(argv[2]);
	for (int i = 3; i < argc && n < 32;) {
		names[n] = argv[i++];
		cmds[n++] = &argv[i];
		while (i < argc && strcmp(argv[i], "::"))
			i++;
		if (i < argc)
			argv[i++] = NULL; /* ends this command's argv */
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	for (int r = 0; r < warmup + runs; r++) {
		for (int k = 0; k < n; k++) {
			int c = williams(n, r, k);
			double t0 = now_us(), t1;
			pid_t pid;
			int st;

			if (posix_spawnp(&pid, cmds[c][0], &fa, NULL, cmds[c], environ)) {
				perror(cmds[c][0]);
				return 1;
			}
			if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "alternate: %s failed (status 0x%x)\n", names[c], st);
				return 1;
			}
			t1 = now_us();
			if (r >= warmup)
				printf("%s %.0f\n", names[c], t1 - t0);
			nanosleep(&(struct timespec){ 0, SETTLE_MS * 1000000l }, NULL);
		}
	}
	return 0;
}
