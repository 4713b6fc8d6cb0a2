// SPDX-License-Identifier: MIT
/*
 * bench/procmaps: resolve the same stacks (real return addresses sampled
 * from a live process) to (file offset, file id) three ways, in one run:
 *   ioctl        PROCMAP_QUERY, one query per mapping change in a stack
 *   text-once    /proc/PID/maps read and parsed once, binary search per pc
 *   text-reread  /proc/PID/maps re-read and re-parsed for every stack
 *                (and, as a last row, for every address)
 * Files are registered (path, build ID) in a warm-up pass first, so the
 * timed loops measure the steady state of a profiler.
 *
 * usage: bench_procmaps PID STACKS_FILE [SECONDS_PER_MODE]
 *   STACKS_FILE: one stack per line, hex addresses separated by blanks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ustack/procmaps.h>

struct stack {
	uint64_t *pcs;
	size_t n;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int load(const char *path, struct stack **out, size_t *nr, size_t *naddr)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	size_t cap = 0;

	if (!f)
		return -errno;
	*out = NULL;
	*nr = *naddr = 0;
	while (fgets(line, sizeof(line), f)) {
		struct stack s = { malloc(256 * sizeof(uint64_t)), 0 };
		char *p = line, *e;

		while (s.n < 256) {
			unsigned long long v = strtoull(p, &e, 16);

			if (e == p)
				break;
			s.pcs[s.n++] = v;
			p = e;
		}
		if (!s.n) {
			free(s.pcs);
			continue;
		}
		if (*nr == cap) {
			cap = cap ? cap * 2 : 64;
			*out = realloc(*out, cap * sizeof(**out));
		}
		(*out)[(*nr)++] = s;
		*naddr += s.n;
	}
	fclose(f);
	return 0;
}

enum mode { M_IOCTL, M_TEXT_ONCE, M_REREAD_STACK, M_REREAD_ADDR };

static const char *const mode_names[] = { "ioctl (PROCMAP_QUERY)", "text, read once + binary search",
					  "text, re-read per stack", "text, re-read per address" };

/* One pass over every stack; returns the number of resolved addresses. */
static long pass(struct ustack_procmaps *pm, enum mode m, const struct stack *st, size_t nr,
		 struct ustack_resolved *res, uint64_t *check)
{
	long found = 0;

	for (size_t i = 0; i < nr; i++) {
		int r;

		if (m == M_REREAD_ADDR) {
			for (size_t k = 0; k < st[i].n; k++) {
				if (ustack_procmaps__reload(pm, NULL, 0))
					return -1;
				r = ustack_procmaps__resolve(pm, &st[i].pcs[k], 1, &res[k]);
				if (r < 0)
					return r;
				found += r;
			}
		} else {
			if (m == M_REREAD_STACK && ustack_procmaps__reload(pm, NULL, 0))
				return -1;
			r = ustack_procmaps__resolve(pm, st[i].pcs, st[i].n, res);
			if (r < 0)
				return r;
			found += r;
		}
		for (size_t k = 0; k < st[i].n; k++)
			*check += res[k].offset ^ res[k].file_id;
	}
	return found;
}

int main(int argc, char **argv)
{
	struct ustack_procmaps_opts text = { .sz = sizeof(text),
		.flags = USTACK_PROCMAPS_FORCE_TEXT | USTACK_PROCMAPS_NO_AUTO_REFRESH };
	struct ustack_resolved res[256];
	struct stack *st;
	size_t nr, naddr;
	double secs = argc > 3 ? atof(argv[3]) : 1.0, base = 0;
	uint64_t checks[4] = { 0 };
	int pid;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PID STACKS_FILE [SECONDS_PER_MODE]\n", argv[0]);
		return 2;
	}
	pid = atoi(argv[1]);
	if (load(argv[2], &st, &nr, &naddr) || !nr) {
		fprintf(stderr, "bench_procmaps: %s: no stacks\n", argv[2]);
		return 1;
	}
	printf("%zu stacks, %zu addresses, pid %d\n\n", nr, naddr, pid);
	printf("%-34s %12s %10s %12s\n", "method", "ns/address", "vs ioctl", "passes");
	for (int m = M_IOCTL; m <= M_REREAD_ADDR; m++) {
		struct ustack_procmaps *pm = ustack_procmaps__open(pid, m == M_IOCTL ? NULL : &text);
		double t0, t1;
		long passes = 0, found, warm;

		if (!pm) {
			fprintf(stderr, "bench_procmaps: pid %d: %s\n", pid, strerror(errno));
			return 1;
		}
		if (m == M_IOCTL && !ustack_procmaps__uses_ioctl(pm)) {
			fprintf(stderr, "bench_procmaps: PROCMAP_QUERY missing (ENOTTY)\n");
			return 77;
		}
		/* the untimed first pass registers every file and keeps a checksum */
		warm = pass(pm, m, st, nr, res, &checks[m]);
		t0 = now();
		do {
			uint64_t sink = 0;

			found = pass(pm, m, st, nr, res, &sink);
			if (found < 0) {
				fprintf(stderr, "bench_procmaps: resolve failed: %s\n", strerror((int)-found));
				return 1;
			}
			passes++;
			t1 = now();
		} while (t1 - t0 < secs);
		{
			double ns = (t1 - t0) * 1e9 / ((double)passes * (double)naddr);

			if (m == M_IOCTL)
				base = ns;
			printf("%-34s %12.1f %9.2fx %12ld\n", mode_names[m], ns, ns / base, passes);
		}
		if (found != warm) {
			fprintf(stderr, "bench_procmaps: %s resolved %ld addresses, warm-up %ld\n",
				mode_names[m], found, warm);
			return 1;
		}
		ustack_procmaps__close(pm);
	}
	/* all methods must have produced the same (offset, file id) pairs */
	if (checks[M_IOCTL] != checks[M_TEXT_ONCE] || checks[M_IOCTL] != checks[M_REREAD_STACK] ||
	    checks[M_IOCTL] != checks[M_REREAD_ADDR]) {
		fprintf(stderr, "bench_procmaps: methods disagree on the results\n");
		return 1;
	}
	printf("\nall methods returned identical (file offset, file id) for every address\n");
	return 0;
}
