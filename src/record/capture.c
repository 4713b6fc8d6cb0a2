// SPDX-License-Identifier: MIT
/* The capture thread and its queues (capture.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "record/capture.h"

struct cap_node {
	struct cap_node *next;
	union {
		struct rec_capture_req req;
		struct rec_capture_res res;
	};
};

struct cap_list {
	struct cap_node *head, *tail;
};

struct rec_capture {
	struct ustack_bidcache *cache;
	uint64_t max_size;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t work, progress;
	struct cap_list todo, done;
	int quit, abandon, busy;
	struct rec_capture_stats st; /* under lock */
};

static void list_push(struct cap_list *l, struct cap_node *n)
{
	n->next = NULL;
	if (l->tail)
		l->tail->next = n;
	else
		l->head = n;
	l->tail = n;
}

static struct cap_node *list_pop(struct cap_list *l)
{
	struct cap_node *n = l->head;

	if (n && !(l->head = n->next))
		l->tail = NULL;
	return n;
}

static void req_close(struct rec_capture_req *q)
{
	if (q->fd >= 0)
		close(q->fd);
	if (q->root_fd >= 0)
		close(q->root_fd);
	q->fd = q->root_fd = -1;
}

/* ---- separate debug files, looked for inside the process's root -------------------- */

/* @path inside the root held by @root_fd: symlinks resolve against that
 * root, never the host's ("/" of the container), and no /proc magic link
 * leads out. */
static int open_in_root(int root_fd, const char *path)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };

	while (*path == '/')
		path++;
	return (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
}

static int file_crc(int fd, uint32_t *crc)
{
	static __thread uint8_t buf[65536];
	uint64_t off = 0;
	ssize_t n;

	*crc = 0;
	while ((n = pread(fd, buf, sizeof(buf), (off_t)off)) > 0) {
		*crc = ustack_crc32(*crc, buf, (size_t)n);
		off += (uint64_t)n;
	}
	return n < 0 ? -errno : 0;
}

/* The build-ID directory's debug file, if its note says the same build ID. */
static int debug_by_build_id(int root_fd, const uint8_t *bid, uint32_t n)
{
	char path[128];
	uint8_t got[20];
	struct ustack_elf *elf;
	int fd, len, k;

	if (n < 2 || n > sizeof(got))
		return -ENOENT;
	k = snprintf(path, sizeof(path), "usr/lib/debug/.build-id/%02x/", bid[0]);
	for (uint32_t i = 1; i < n; i++)
		k += snprintf(path + k, sizeof(path) - k, "%02x", bid[i]);
	snprintf(path + k, sizeof(path) - k, ".debug");
	fd = open_in_root(root_fd, path);
	if (fd < 0)
		return -ENOENT;
	elf = ustack_elf__open_fd(fd, path);
	len = elf ? ustack_elf__build_id(elf, got, sizeof(got)) : -ENOENT;
	ustack_elf__close(elf);
	if (len != (int)n || memcmp(got, bid, n)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* .gnu_debuglink: the file's directory, its .debug/, /usr/lib/debug/<dir>/,
 * the first whose CRC-32 matches. */
static int debug_by_link(int root_fd, const char *image_path, const char *name, uint32_t crc)
{
	char dir[256], path[600];
	const char *slash = strrchr(image_path, '/');
	static const char *const fmt[] = { "%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s" };

	/* the name is the file's own word: a plain file name, nothing else */
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") || !slash)
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - image_path), image_path);
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		uint32_t got;
		int fd;

		snprintf(path, sizeof(path), fmt[i], dir, name);
		fd = open_in_root(root_fd, path);
		if (fd < 0)
			continue;
		if (!file_crc(fd, &got) && got == crc)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/* Store the separate debug file of the image just stored, when found. */
static int capture_debug(struct rec_capture *c, const struct rec_capture_req *q,
			 struct ustack_elf *elf, struct rec_capture_res *res)
{
	struct ustack_bidcache_stored dst;
	const char *name;
	uint32_t crc;
	int fd = -ENOENT, ret;

	if (q->root_fd < 0 || !elf)
		return 0;
	if (res->build_id_size)
		fd = debug_by_build_id(q->root_fd, res->build_id, res->build_id_size);
	if (fd < 0 && !ustack_elf__debuglink(elf, &name, &crc))
		fd = debug_by_link(q->root_fd, q->path, name, crc);
	if (fd < 0)
		return 0;
	ret = ustack_bidcache__store(c->cache, fd, res->build_id_size ? res->build_id : NULL,
				     res->build_id_size, USTACK_BIDCACHE_DEBUG, res->stored.sha256,
				     c->max_size, &dst);
	close(fd);
	if (!ret && !(dst.flags & USTACK_BIDCACHE_STORED_TOO_BIG))
		res->debug_stored = 1;
	return ret;
}

/* ---- the thread ----------------------------------------------------------------------- */

static void capture_one(struct rec_capture *c, struct rec_capture_req *q, struct rec_capture_res *res)
{
	struct ustack_elf *elf;
	int n;

	memset(res, 0, sizeof(*res));
	res->file_id = q->file_id;
	res->pid = q->pid;
	memcpy(res->path, q->path, sizeof(res->path));
	/* the build ID the content itself carries names the entry: not one a
	 * record or another process claimed for it */
	elf = ustack_elf__open_fd(q->fd, q->path);
	n = elf ? ustack_elf__build_id(elf, res->build_id, sizeof(res->build_id)) : -ENOENT;
	res->build_id_size = n > 0 && n <= (int)sizeof(res->build_id) ? (uint32_t)n : 0;
	res->err = ustack_bidcache__store(c->cache, q->fd, res->build_id_size ? res->build_id : NULL,
					  res->build_id_size, USTACK_BIDCACHE_ELF, NULL, c->max_size,
					  &res->stored);
	if (!res->err && !(res->stored.flags & USTACK_BIDCACHE_STORED_TOO_BIG))
		capture_debug(c, q, elf, res);
	ustack_elf__close(elf);
}

static double thread_cpu(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void account(struct rec_capture *c, const struct rec_capture_res *res)
{
	struct rec_capture_stats *s = &c->st;

	s->done++;
	if (res->err) {
		s->errors++;
		return;
	}
	if (res->stored.flags & USTACK_BIDCACHE_STORED_TOO_BIG) {
		s->too_big++;
		return;
	}
	if (res->stored.flags & USTACK_BIDCACHE_STORED_CONFLICT)
		s->conflicts++;
	if (res->stored.flags & USTACK_BIDCACHE_STORED_NEW) {
		s->new_files++;
		s->bytes += res->stored.size;
	} else {
		s->cached_files++;
	}
	s->debug_files += res->debug_stored;
}

/* The copies compete with the recorded workload for CPU (a 500 MB file is
 * seconds of SHA-256 and copying; measured: the workload got half its
 * samples beside it on a busy 2-CPU machine): this thread runs 10 nice
 * levels below the recorder, so it takes idle CPU while recording and the
 * whole of it only in the wait at the end. Linux nice values are per
 * thread. */
static void capture_lower_priority(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int prio;

	errno = 0;
	prio = getpriority(PRIO_PROCESS, (id_t)tid);
	if (prio == -1 && errno)
		return;
	prio = prio + 10 > 19 ? 19 : prio + 10;
	if (setpriority(PRIO_PROCESS, (id_t)tid, prio))
		pr_debug("capture thread: setpriority: %s\n", strerror(errno));
}

static void *capture_main(void *arg)
{
	struct rec_capture *c = arg;

	capture_lower_priority();
	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct cap_node *n;
		struct rec_capture_req q;

		while (!c->quit && !c->abandon && !c->todo.head)
			pthread_cond_wait(&c->work, &c->lock);
		if (c->abandon || !c->todo.head)
			break;
		n = list_pop(&c->todo);
		c->busy = 1;
		pthread_mutex_unlock(&c->lock);
		q = n->req;
		capture_one(c, &q, &n->res);
		req_close(&q);
		pthread_mutex_lock(&c->lock);
		c->busy = 0;
		account(c, &n->res);
		c->st.cpu_seconds = thread_cpu();
		list_push(&c->done, n);
		pthread_cond_broadcast(&c->progress);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ---- the recorder's side ------------------------------------------------------------- */

struct rec_capture *rec_capture__new(struct ustack_bidcache *cache, uint64_t max_size)
{
	struct rec_capture *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return NULL;
	c->cache = cache;
	c->max_size = max_size;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->progress, NULL);
	err = pthread_create(&c->thread, NULL, capture_main, c);
	if (err) {
		c->cache = NULL; /* the caller's still */
		rec_capture__free(c);
		errno = err;
		return NULL;
	}
	c->started = 1;
	return c;
}

int rec_capture__submit(struct rec_capture *c, const struct rec_capture_req *req)
{
	struct cap_node *n = calloc(1, sizeof(*n));

	if (!n) {
		struct rec_capture_req q = *req;

		req_close(&q);
		return -ENOMEM;
	}
	n->req = *req;
	pthread_mutex_lock(&c->lock);
	list_push(&c->todo, n);
	c->st.submitted++;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int rec_capture__take(struct rec_capture *c, struct rec_capture_res *res)
{
	struct cap_node *n;

	pthread_mutex_lock(&c->lock);
	n = list_pop(&c->done);
	pthread_mutex_unlock(&c->lock);
	if (!n)
		return 0;
	*res = n->res;
	free(n);
	return 1;
}

/* Files not started: their descriptors closed, counted, never captured. */
static void abandon_locked(struct rec_capture *c)
{
	struct cap_node *n;

	c->abandon = 1;
	while ((n = list_pop(&c->todo))) {
		req_close(&n->req);
		c->st.abandoned++;
		free(n);
	}
	pthread_cond_broadcast(&c->work);
}

void rec_capture__wait(struct rec_capture *c, volatile sig_atomic_t *stop)
{
	sig_atomic_t stop0 = stop ? *stop : 0;
	uint64_t t0 = ustack_mono_ns();
	int said = 0;

	pthread_mutex_lock(&c->lock);
	while (c->todo.head || c->busy) {
		struct timespec ts;

		if (stop && *stop != stop0) {
			abandon_locked(c);
			continue; /* the file being read is finished */
		}
		if (!said && ustack_mono_ns() - t0 >= 1000000000ull) {
			uint64_t left = c->st.submitted - c->st.done;

			/* perf says the same while it collects build IDs */
			pr_warn("waiting for the capture of %llu file%s into the build-ID cache "
				"(Ctrl-C again: stop, leaving them out)\n",
				(unsigned long long)left, left == 1 ? "" : "s");
			said = 1;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->progress, &c->lock, &ts);
	}
	pthread_mutex_unlock(&c->lock);
}

void rec_capture__stats(struct rec_capture *c, struct rec_capture_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}

struct ustack_bidcache *rec_capture__cache(struct rec_capture *c)
{
	return c->cache;
}

void rec_capture__free(struct rec_capture *c)
{
	struct cap_node *n;

	if (!c)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->lock);
		abandon_locked(c);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	while ((n = list_pop(&c->done)))
		free(n);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->progress);
	ustack_bidcache__close(c->cache);
	free(c);
}
