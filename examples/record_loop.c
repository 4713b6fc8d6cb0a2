// SPDX-License-Identifier: MIT
/*
 * Recording from inside an event loop: the program's own loop polls the
 * recorder's fd next to its own timer (a once-per-100 ms "tick" standing
 * for whatever else the program does), with the non-blocking recorder of
 * <ustack/record.h>. It records one command:
 *
 *   record_loop [-b auto|bpf|copy] TRACE EVENT -- CMD [ARGS...]
 *
 * and prints how many ticks its own timer saw while recording, the longest
 * ustack_recorder__read() call (the time the loop could not serve its
 * other fds), then the recorder's totals and which backend ran.
 *
 * The longest call is also given without the time the thread waited for a
 * CPU meanwhile (its run-queue wait, /proc/thread-self/schedstat): on a
 * loaded machine any call may be preempted for a while; what is left is
 * the call's own work and any time it slept in the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <ustack/record.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Time this thread has waited for a CPU so far, in ms (-1: not known). */
static double runq_wait_ms(int fd)
{
	unsigned long long run, wait;
	char buf[96];
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = 0;
	return sscanf(buf, "%llu %llu", &run, &wait) == 2 ? wait / 1e6 : -1;
}

int main(int argc, char **argv)
{
	struct itimerspec it = { .it_interval = { 0, 100000000 }, .it_value = { 0, 100000000 } };
	char err[512] = "";
	const char *events[1];
	struct ustack_record_opts o = { .sz = sizeof(o) };
	struct ustack_record_stats st;
	struct ustack_recorder *rec;
	unsigned long ticks = 0;
	double longest = 0, longest_running = 0;
	int tfd, ret, sfd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);

	if (argc > 2 && !strcmp(argv[1], "-b")) {
		o.backend = !strcmp(argv[2], "bpf")    ? USTACK_RECORD_BPF
			    : !strcmp(argv[2], "copy") ? USTACK_RECORD_COPY
						       : USTACK_RECORD_AUTO;
		argv += 2;
		argc -= 2;
	}
	if (argc < 5 || strcmp(argv[3], "--")) {
		fprintf(stderr, "usage: record_loop [-b auto|bpf|copy] TRACE EVENT -- CMD [ARGS...]\n");
		return 2;
	}
	events[0] = argv[2];
	o.output = argv[1];
	o.events = events;
	o.nr_events = 1;
	o.argv = argv + 4;
	o.errbuf = err;
	o.errbuf_sz = sizeof(err);
	rec = ustack_recorder__new(&o);
	if (!rec) {
		fprintf(stderr, "record_loop: %s\n", err[0] ? err : strerror(errno));
		return 1;
	}
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tfd < 0 || timerfd_settime(tfd, 0, &it, NULL)) {
		perror("timerfd");
		ustack_recorder__free(rec);
		return 1;
	}
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = ustack_recorder__fd(rec), .events = POLLIN },
			{ .fd = tfd, .events = POLLIN },
		};
		uint64_t n;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if ((p[1].revents & POLLIN) && read(tfd, &n, sizeof(n)) == sizeof(n))
			ticks += n; /* the program's own work */
		if (p[0].revents & POLLIN) {
			double t0 = now_ms(), w0 = runq_wait_ms(sfd), t, w;

			ret = ustack_recorder__read(rec); /* never blocks */
			t = now_ms() - t0;
			w = runq_wait_ms(sfd);
			if (t > longest)
				longest = t;
			if (w0 >= 0 && w >= w0 && t - (w - w0) > longest_running)
				longest_running = t - (w - w0);
			if (ret)
				break; /* 1: over; < 0: failed */
		}
	}
	ret = ustack_recorder__stop(rec);
	ustack_recorder__stats(rec, &st, sizeof(st));
	ustack_recorder__free(rec);
	close(tfd);
	if (sfd >= 0)
		close(sfd);
	if (ret) {
		fprintf(stderr, "record_loop: %s\n", err);
		return 1;
	}
	printf("record_loop: %lu ticks of our own timer while recording\n", ticks);
	printf("record_loop: longest ustack_recorder__read() %.1f ms\n", longest);
	if (sfd >= 0)
		printf("record_loop: longest ustack_recorder__read() not counting waits for a CPU %.1f ms\n",
		       longest_running);
	printf("record_loop: %llu events, %llu user stacks, %llu lost, command status %d, backend %s\n",
	       (unsigned long long)st.events, (unsigned long long)st.user_stacks,
	       (unsigned long long)st.lost, st.child_status,
	       st.backend == USTACK_RECORD_BPF ? "bpf" : "copy");
	return 0;
}
