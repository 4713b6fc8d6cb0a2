// SPDX-License-Identifier: MIT
/*
 * snap_probe PID: can this process ptrace PID and read its memory with
 * process_vm_readv? The snapshot tests ask this first, with a program of
 * their own rather than ustack, so that a missing capability (seccomp,
 * Yama, a container without CAP_SYS_PTRACE) becomes a SKIP with its reason
 * and an ustack bug stays a FAIL. Prints the reason and exits 1 when not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
	char path[64], line[256];
	uint64_t start = 0, word;
	int pid, status;
	FILE *f;

	if (argc != 2 || (pid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: snap_probe PID\n");
		return 2;
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		printf("ptrace(PTRACE_SEIZE) not permitted: %s\n", strerror(errno));
		return 1;
	}
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) || waitpid(pid, &status, __WALL) < 0) {
		printf("ptrace(PTRACE_INTERRUPT) failed: %s\n", strerror(errno));
		ptrace(PTRACE_DETACH, pid, 0, 0);
		return 1;
	}
	ptrace(PTRACE_DETACH, pid, 0, 0);

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		printf("%s not readable: %s\n", path, strerror(errno));
		return 1;
	}
	fclose(f);
	start = strtoull(line, NULL, 16);
	struct iovec local = { &word, sizeof(word) }, remote = { (void *)(uintptr_t)start, sizeof(word) };
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(word)) {
		printf("process_vm_readv not available: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
