// SPDX-License-Identifier: MIT
/*
 * fork_hold N: forks N children that all live at once (each blocks reading
 * a pipe until every one was forked), then lets them go: each child makes
 * one getppid() call and exits; the parent waits for them and makes its
 * own getppid() call. Exit status 0 when every child exited 0.
 * For tests/integration/record_targets_full.sh: N processes started by a
 * recorded one, alive together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8, go[2], bad = 0;
	char c;

	if (n < 1 || n > 4096 || pipe(go))
		return 2;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0)
			return 3;
		if (!p) {
			close(go[1]);
			if (read(go[0], &c, 1) != 0)
				_exit(4);
			syscall(SYS_getppid);
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]); /* every child is past its fork: all go */
	for (int i = 0; i < n; i++) {
		int ws;

		if (wait(&ws) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws))
			bad++;
	}
	syscall(SYS_getppid);
	return bad ? 1 : 0;
}
