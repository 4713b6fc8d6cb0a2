// SPDX-License-Identifier: MIT
/*
 * hostile_forker N MAPS TRUE [RATE [K GO]]: many short-lived processes
 * (tests/integration/record_scale.sh).
 *
 * First maps its own executable MAPS times more, PROT_READ|PROT_EXEC, each
 * a mapping of its own (a page apart), so that every child inherits a
 * large picture of executable mappings. Then makes N children, at most 4
 * alive at once, at most RATE a second (default: no limit), each exiting
 * through exit_group() exactly once:
 *   even children  exec TRUE (a copy of /bin/true, whose name is the
 *                  children's comm)
 *   odd children   rename themselves "hostile_child" (prctl), spin a
 *                  little in main -> hf_spawn -> hf_child and _exit(0)
 * With K and GO: once the first K children have exited, prints
 * "hostile_forker: checkpoint K" and waits until the file GO exists.
 * Prints "hostile_forker: N children, E exec'd, F forked only, X failed"
 * and exits 0 when every child exited with status 0.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "rec_common.h"

REC_FN void hf_child(int i)
{
	volatile unsigned long x = (unsigned long)i;

	prctl(PR_SET_NAME, "hostile_child", 0, 0, 0);
	for (int k = 0; k < 20000; k++)
		x = x * 6364136223846793005UL + 1;
	/* exit_group() itself, not exit(): the stack of the call is ours */
	syscall(SYS_exit_group, (int)(x & 0));
	rec_sink++;
}

REC_FN pid_t hf_spawn(int i, const char *true_path)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (i % 2 == 0) {
			execl(true_path, true_path, (char *)NULL);
			_exit(127);
		}
		hf_child(i);
		_exit(126);
	}
	rec_sink++;
	return pid;
}

int main(int argc, char **argv)
{
	int n, maps, rate, check, alive = 0, failed = 0, status;
	struct timespec t0, now;
	long page = sysconf(_SC_PAGESIZE);
	struct stat st;
	char *area;
	int fd;

	if (argc != 4 && argc != 5 && argc != 7) {
		fprintf(stderr, "usage: hostile_forker N MAPS TRUE [RATE [K GO]]\n");
		return 2;
	}
	n = atoi(argv[1]);
	maps = atoi(argv[2]);
	rate = argc > 4 ? atoi(argv[4]) : 0;
	check = argc > 6 ? atoi(argv[5]) : -1;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || st.st_size < page) {
		perror("hostile_forker: /proc/self/exe");
		return 1;
	}
	/* one reservation, then a page of the file every other page */
	area = mmap(NULL, 2 * page * (size_t)(maps + 1), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED) {
		perror("hostile_forker: mmap");
		return 1;
	}
	for (int i = 0; i < maps; i++)
		if (mmap(area + 2 * page * (size_t)i, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
			 fd, 0) == MAP_FAILED) {
			perror("hostile_forker: mmap of itself");
			return 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		if (i == check) {
			while (alive > 0 && wait(&status) >= 0) {
				alive--;
				failed += !WIFEXITED(status) || WEXITSTATUS(status);
			}
			printf("hostile_forker: checkpoint %d\n", i);
			fflush(stdout);
			rec_wait_for(argv[6]);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			t0.tv_sec -= i / (rate > 0 ? rate : 1);
		}
		/* child i not before t0 + i / RATE */
		while (rate > 0) {
			double ahead;

			clock_gettime(CLOCK_MONOTONIC, &now);
			ahead = (double)i / rate - ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9);
			if (ahead <= 0)
				break;
			nanosleep(&(struct timespec){ 0, (long)(ahead * 1e9) }, NULL);
		}
		while (alive >= 4) {
			if (wait(&status) < 0)
				break;
			alive--;
			failed += !WIFEXITED(status) || WEXITSTATUS(status);
		}
		if (hf_spawn(i, argv[3]) < 0) {
			perror("hostile_forker: fork");
			failed++;
			continue;
		}
		alive++;
	}
	while (alive > 0 && wait(&status) >= 0) {
		alive--;
		failed += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	printf("hostile_forker: %d children, %d exec'd, %d forked only, %d failed\n", n, (n + 1) / 2,
	       n / 2, failed);
	return failed ? 1 : 0;
}
