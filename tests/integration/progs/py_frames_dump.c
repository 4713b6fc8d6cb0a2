// SPDX-License-Identifier: MIT
/*
 * py_frames_dump PID: the CPython frames of every thread of PID through
 * the internal reader (src/python/pyframes.h), printed one line each:
 *   T <native tid>
 *   F <qualname>|<file>|<line>|<flags>     innermost first
 *   S <stop>                               when the chain ended early
 * The process is stopped (SIGSTOP, every thread seen in state T) while it
 * is read and continued after, whatever happened. A refusal: one line on
 * stderr, exit status the errno (ENOTSUP: 95).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "python/pyframes.h"

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = *(pid_t *)ctx;
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int all_stopped(pid_t pid)
{
	char path[64], buf[512];
	struct dirent *de;
	DIR *d;
	int ok = 1;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while (ok && (de = readdir(d))) {
		FILE *f;
		char *p;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* the thread ended */
		if (!fgets(buf, sizeof(buf), f) || !(p = strrchr(buf, ')')) || p[1] != ' ' || p[2] != 'T')
			ok = 0;
		fclose(f);
	}
	closedir(d);
	return ok;
}

int main(int argc, char **argv)
{
	struct ustack_py_thread *th = NULL;
	struct ustack_py_proc *p = NULL;
	char err[512] = "";
	pid_t pid;
	int nr = 0, e;

	if (argc != 2) {
		fprintf(stderr, "usage: py_frames_dump PID\n");
		return 2;
	}
	pid = atoi(argv[1]);
	if (kill(pid, SIGSTOP)) {
		perror("kill");
		return 2;
	}
	for (int i = 0; i < 5000 && all_stopped(pid) == 0; i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	e = ustack_py_proc__find(pid, NULL, read_mem, &pid, &p, err, sizeof(err));
	if (!e)
		e = ustack_py_proc__threads(p, read_mem, &pid, &th, &nr, err, sizeof(err));
	kill(pid, SIGCONT);
	if (e) {
		fprintf(stderr, "py_frames_dump: %s (%s)\n", err, strerror(-e));
		ustack_py_proc__free(p);
		return -e;
	}
	fprintf(stderr, "# %s\n", ustack_py_proc__describe(p));
	for (int i = 0; i < nr; i++) {
		printf("T %llu\n", (unsigned long long)th[i].native_tid);
		for (int j = 0; j < th[i].nr; j++)
			printf("F %s|%s|%d|%u\n", th[i].frames[j].func, th[i].frames[j].file,
			       th[i].frames[j].line, th[i].frames[j].flags);
		if (th[i].stop)
			printf("S %d\n", th[i].stop);
	}
	ustack_py_threads_free(th, nr);
	ustack_py_proc__free(p);
	return 0;
}
