// SPDX-License-Identifier: MIT
/*
 * Runs commands alternately and prints the wall time of each run, whole
 * process from spawn to exit (output to /dev/null):
 *
 *   alternate RUNS WARMUP NAME CMD ARGS... [:: NAME CMD ARGS...]...
 *
 * Round r runs every command once, starting one further along each round
 * (A B C, B C A, C A B, ...), so that a change of machine load hits all of
 * them alike, and each follows each other equally often (a run right after
 * gdb's was measured slower, whichever tool it was). WARMUP rounds first,
 * not printed. Output: one line "NAME MICROSECONDS" per timed run.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

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
			int c = (k + r) % n;
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
		}
	}
	return 0;
}
