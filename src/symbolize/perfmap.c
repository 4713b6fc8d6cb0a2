// SPDX-License-Identifier: MIT
/*
 * Parser and address lookup for perf JIT maps (perfmap.h). The text comes
 * from a file another process is still appending to, or from a trace: every
 * line is checked and a bad one is skipped with a warning, never trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "symbolize/perfmap_pid.h"
#include <ustack/perfmap.h>

struct ustack_perfmap {
	struct ustack_perfmap_entry *e; /* in the order added: index = age */
	size_t n, cap;
	/* lookup index, rebuilt after additions: entry indices sorted by start
	 * (then age), and the largest end among sorted[0..i] */
	uint32_t *sorted;
	uint64_t *max_end;
	int dirty;
	unsigned long bad;
};

struct ustack_perfmap *ustack_perfmap__new(void)
{
	struct ustack_perfmap *m = calloc(1, sizeof(*m));

	if (!m)
		errno = ENOMEM;
	return m;
}

void ustack_perfmap__free(struct ustack_perfmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free((char *)m->e[i].name);
	free(m->e);
	free(m->sorted);
	free(m->max_end);
	free(m);
}

size_t ustack_perfmap__count(const struct ustack_perfmap *m)
{
	return m ? m->n : 0;
}

const struct ustack_perfmap_entry *ustack_perfmap__entry(const struct ustack_perfmap *m, size_t i)
{
	return m && i < m->n ? &m->e[i] : NULL;
}

unsigned long ustack_perfmap__bad_lines(const struct ustack_perfmap *m)
{
	return m ? m->bad : 0;
}

static int add_n(struct ustack_perfmap *m, uint64_t start, uint64_t size, const char *name,
		 size_t nlen)
{
	char *copy;

	if (!size || start + size < start || !nlen)
		return -EINVAL;
	if (m->n >= USTACK_PERFMAP_MAX_ENTRIES)
		return -E2BIG;
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 64;
		void *np = realloc(m->e, ncap * sizeof(*m->e));

		if (!np)
			return -ENOMEM;
		m->e = np;
		m->cap = ncap;
	}
	if (nlen > USTACK_PERFMAP_MAX_NAME) {
		/* cut, and say so: a prefix shown as the whole name would be a
		 * wrong name (and a cut inside a UTF-8 sequence invalid text) */
		size_t keep = USTACK_PERFMAP_MAX_NAME - USTACK_PERFMAP_CUT_MARK_LEN;

		for (int k = 0; k < 3 && ((unsigned char)name[keep] & 0xc0) == 0x80; k++)
			keep--;
		copy = malloc(keep + USTACK_PERFMAP_CUT_MARK_LEN + 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, name, keep);
		memcpy(copy + keep, USTACK_PERFMAP_CUT_MARK, USTACK_PERFMAP_CUT_MARK_LEN + 1);
	} else {
		copy = malloc(nlen + 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, name, nlen);
		copy[nlen] = 0;
	}
	m->e[m->n++] = (struct ustack_perfmap_entry){ start, size, copy };
	m->dirty = 1;
	return 0;
}

int ustack_perfmap__add(struct ustack_perfmap *m, uint64_t start, uint64_t size, const char *name)
{
	if (!m || !name)
		return -EINVAL;
	return add_n(m, start, size, name, strnlen(name, USTACK_PERFMAP_MAX_NAME + 1));
}

/* A hex number at *p (optional 0x), at most 64 bits. 0 or -1. */
static int get_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int digits = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (x >> 60)
			return -1; /* more than 64 bits */
		x = x << 4 | (uint64_t)d;
		digits++;
	}
	if (!digits)
		return -1;
	*p = s;
	*v = x;
	return 0;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* One line without its '\n'. NULL if well-formed, else why not. */
static const char *parse_line(struct ustack_perfmap *m, const char *p, const char *end, int *err)
{
	uint64_t start, size;
	const char *q;

	*err = 0;
	if (memchr(p, 0, (size_t)(end - p)))
		return "NUL byte in the line";
	if (end > p && end[-1] == '\r')
		end--;
	p = skip_blanks(p, end);
	if (get_hex(&p, end, &start))
		return "bad start address";
	q = skip_blanks(p, end);
	if (q == p)
		return "no blank after the start address";
	p = q;
	if (get_hex(&p, end, &size))
		return "bad size";
	q = skip_blanks(p, end);
	if (q == p || q == end)
		return "no symbol name";
	if (!size)
		return "size 0";
	if (start + size < start)
		return "start + size past the end of the address space";
	*err = add_n(m, start, size, q, (size_t)(end - q));
	return NULL;
}

long ustack_perfmap__parse(struct ustack_perfmap *m, const char *buf, size_t len,
			   const char *fname, unsigned long first_line)
{
	const char *p = buf, *end = buf + len;
	unsigned long line = first_line;

	if (!m || (!buf && len))
		return -EINVAL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *why;
		int err;

		if (!nl)
			break; /* a partial last line: the writer is still at it */
		if (nl == p || (nl - p == 1 && *p == '\r')) {
			p = nl + 1;
			line++;
			continue; /* blank line */
		}
		why = parse_line(m, p, nl, &err);
		if (err == -ENOMEM || err == -E2BIG) {
			if (err == -E2BIG)
				pr_warn("%s:%lu: more than %u symbols: the rest is ignored\n",
					fname ? fname : "perf map", line, USTACK_PERFMAP_MAX_ENTRIES);
			return err;
		}
		if (why) {
			if (m->bad < 10)
				pr_warn("%s:%lu: malformed perf map line skipped: %s\n",
					fname ? fname : "perf map", line, why);
			else if (m->bad == 10)
				pr_warn("%s: more malformed lines skipped (not listed)\n",
					fname ? fname : "perf map");
			m->bad++;
		}
		p = nl + 1;
		line++;
	}
	return (long)(p - buf);
}

/* The map is a file in /tmp that anyone could have put there: read only a
 * regular file (a FIFO would block the reader forever, a device could do
 * anything on open), and with @uid != -1 only one owned by @uid, by root or
 * by the reader itself (perf's rule for its /tmp/perf-PID.map, which checks
 * the owner against its own euid or root, widened to the process's uid so
 * that root can read a map the profiled user wrote). Symbolic links are not
 * followed (perf's fopen() does; a link in sticky /tmp is the classic way
 * to point a root reader elsewhere). The reason is logged once per call. */
static int check_map_fd(int fd, const char *path, uint32_t uid)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		pr_warn("%s: not a regular file: not read as a JIT map\n", path);
		return -EINVAL;
	}
	if (uid != (uint32_t)-1 && st.st_uid != 0 && st.st_uid != uid && st.st_uid != geteuid()) {
		pr_warn("%s: owned by uid %u, not by the process's uid %u or root: not read as a JIT map\n",
			path, (unsigned int)st.st_uid, (unsigned int)uid);
		return -EPERM;
	}
	return 0;
}

#define MAP_OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)

static int open_map(const char *path, uint32_t uid)
{
	int fd = open(path, MAP_OPEN_FLAGS), ret;

	if (fd < 0)
		return -errno;
	ret = check_map_fd(fd, path, uid);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int ustack_perfmap__read_file(struct ustack_perfmap *m, const char *path)
{
	return ustack_perfmap__read_file_owned(m, path, (uint32_t)-1);
}

/* The whole file (at most USTACK_PERFMAP_MAX_FILE bytes) into *bufp, from
 * offset 0. 0 or -errno; *bufp is the caller's to free either way. */
static int slurp(int fd, const char *path, char **bufp, size_t *lenp)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);

	*bufp = buf;
	*lenp = 0;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t got;

		if (len == cap) {
			char *nb;

			if (cap >= USTACK_PERFMAP_MAX_FILE) {
				pr_warn("%s: larger than %u MiB: the rest is ignored\n", path,
					USTACK_PERFMAP_MAX_FILE >> 20);
				break;
			}
			nb = realloc(buf, cap * 2);
			if (!nb)
				return -ENOMEM;
			*bufp = buf = nb;
			cap *= 2;
		}
		got = pread(fd, buf + len, cap - len, (off_t)len);
		if (got < 0 && errno == EINTR)
			continue;
		/* a regular file never says EAGAIN, but O_NONBLOCK stays on */
		if (got < 0)
			return -errno;
		if (!got)
			break;
		len += (size_t)got;
		*lenp = len;
	}
	return 0;
}

/* How many of the @len bytes first read from @fd the file still holds at
 * the same offsets (read again now). */
static size_t same_prefix(int fd, const char *buf, size_t len)
{
	char chunk[1 << 14];
	size_t off = 0;

	while (off < len) {
		size_t want = len - off < sizeof(chunk) ? len - off : sizeof(chunk);
		ssize_t got = pread(fd, chunk, want, (off_t)off);
		size_t i = 0;

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (!memcmp(chunk, buf + off, (size_t)got)) {
			off += (size_t)got;
			continue;
		}
		while (chunk[i] == buf[off + i])
			i++;
		off += i;
		if (i < (size_t)got)
			break;
	}
	return off;
}

/* Read and parse the checked map open at @fd (closed here). */
static int read_map_fd(struct ustack_perfmap *m, int fd, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int ret = 0;
	long used;

	/* A JIT only appends to its map, but a file truncated and written
	 * anew while we read it (a writer starting over, a pid reused) would
	 * make us glue the start of an old line to the end of a new one: a
	 * well-formed line with a wrong name. So the text is read again and
	 * kept only if the file still begins with it (appended since is
	 * fine); otherwise read once more, and at the third time keep only
	 * the part both reads agree on (the parser takes its complete lines). */
	for (int attempt = 1;; attempt++) {
		size_t same;

		free(buf);
		ret = slurp(fd, path, &buf, &len);
		if (ret)
			break;
		same = same_prefix(fd, buf, len);
		if (same == len)
			break;
		if (attempt == 3) {
			pr_warn("%s: rewritten while being read: only its first %zu bytes are used\n",
				path, same);
			len = same;
			break;
		}
	}
	close(fd);
	if (!ret) {
		used = ustack_perfmap__parse(m, buf, len, path, 1);
		if (used < 0 && used != -E2BIG)
			ret = (int)used;
	}
	free(buf);
	return ret;
}

int ustack_perfmap__read_file_owned(struct ustack_perfmap *m, const char *path, uint32_t uid)
{
	int fd;

	if (!m || !path)
		return -EINVAL;
	fd = open_map(path, uid);
	if (fd < 0)
		return fd;
	return read_map_fd(m, fd, path);
}

static int cmp_idx(const void *a, const void *b, void *ctx)
{
	const struct ustack_perfmap *sort_map = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t sx = sort_map->e[x].start, sy = sort_map->e[y].start;

	if (sx != sy)
		return sx < sy ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int rebuild(struct ustack_perfmap *m)
{
	uint32_t *s = realloc(m->sorted, (m->n ? m->n : 1) * sizeof(*s));
	uint64_t *me;

	if (!s)
		return -ENOMEM;
	m->sorted = s;
	me = realloc(m->max_end, (m->n ? m->n : 1) * sizeof(*me));
	if (!me)
		return -ENOMEM;
	m->max_end = me;
	for (size_t i = 0; i < m->n; i++)
		s[i] = (uint32_t)i;
	qsort_r(s, m->n, sizeof(*s), cmp_idx, m);
	for (size_t i = 0; i < m->n; i++) {
		uint64_t end = m->e[s[i]].start + m->e[s[i]].size;

		me[i] = i && me[i - 1] > end ? me[i - 1] : end;
	}
	m->dirty = 0;
	return 0;
}

const struct ustack_perfmap_entry *ustack_perfmap__lookup(struct ustack_perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi;
	long best = -1;

	if (!m || !m->n || (m->dirty && rebuild(m)))
		return NULL;
	/* hi = number of entries starting at or below addr */
	hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->e[m->sorted[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* walk down while some earlier entry may still reach addr: the
	 * newest (highest index) covering entry wins */
	for (size_t i = lo; i-- > 0;) {
		const struct ustack_perfmap_entry *e;

		if (m->max_end[i] <= addr)
			break;
		e = &m->e[m->sorted[i]];
		if (addr - e->start < e->size && (long)m->sorted[i] > best)
			best = (long)m->sorted[i];
	}
	return best < 0 ? NULL : &m->e[best];
}

/* One decimal field of NStgid; *p past it. 0 or -EBADMSG. */
static int nstgid_field(const char **p, const char *end, long *v)
{
	const char *s = *p;
	long x = 0;

	if (s == end || *s < '1' || *s > '9')
		return -EBADMSG; /* empty, a sign or a leading zero */
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		x = x * 10 + (*s - '0');
		if (x > (1L << 22))
			return -EBADMSG;
	}
	*p = s;
	*v = x;
	return 0;
}

int ustack_status__nstgid(const char *buf, size_t len, int pid, int *nspid)
{
	static const char key[] = "NStgid:";
	const char *p = buf, *end = buf + len;
	long v = 0;

	for (;;) {
		const char *nl;

		if ((size_t)(end - p) >= sizeof(key) - 1 && !memcmp(p, key, sizeof(key) - 1))
			break;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return -ENOENT;
		p = nl + 1;
	}
	p += sizeof(key) - 1;
	for (int i = 0;; i++) {
		if (i == 32 || p == end || *p != '\t')
			return -EBADMSG;
		p++;
		if (nstgid_field(&p, end, &v))
			return -EBADMSG;
		if (!i && v != pid)
			return -EBADMSG;
		if (p < end && *p == '\n')
			break;
		if (p == end || *p != '\t')
			return -EBADMSG;
	}
	*nspid = (int)v;
	return 0;
}

/* The innermost pid of the process open at @procfd (its /proc/PID). */
static int read_nspid(int procfd, int pid, int *nspid)
{
	char buf[8192];
	ssize_t got;
	size_t len = 0;
	int fd = openat(procfd, "status", O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	/* procfs hands out a seq_file a page or so per read */
	while (len < sizeof(buf) && (got = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			ret = -errno;
			close(fd);
			return ret;
		}
		len += (size_t)got;
	}
	close(fd);
	ret = ustack_status__nstgid(buf, len, pid, nspid);
	if (ret)
		pr_warn("/proc/%d/status: %s NStgid line: the JIT map of pid %d not read\n", pid,
			ret == -ENOENT ? "no" : "a malformed", pid);
	return ret ? -EBADMSG : 0;
}

static int same_inode(int dirfd, const char *rel, const char *ours)
{
	struct stat a, b;

	return !fstatat(dirfd, rel, &a, 0) && !stat(ours, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

int ustack_perfmap_where__open(int pid, struct ustack_perfmap_where *w)
{
	char path[32];
	int procfd, ret;

	w->rootfd = -1;
	w->pid = pid;
	w->nspid = 0;
	w->host_view = 0;
	if (pid <= 0)
		return -EINVAL;
	/* status and root through one fd of /proc/PID: a pid reused in
	 * between gives ESRCH, not another process's root */
	snprintf(path, sizeof(path), "/proc/%d", pid);
	procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ret = read_nspid(procfd, pid, &w->nspid);
	if (!ret) {
		/* a zombie has no root any more: ENOENT there is "gone" too */
		w->rootfd = openat(procfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (w->rootfd < 0)
			ret = errno == ENOENT ? -ESRCH : -errno;
	}
	if (!ret)
		w->host_view = w->nspid == pid && same_inode(procfd, "root", "/") &&
			       same_inode(procfd, "ns/mnt", "/proc/self/ns/mnt");
	close(procfd);
	return ret;
}

void ustack_perfmap_where__close(struct ustack_perfmap_where *w)
{
	if (w->rootfd >= 0)
		close(w->rootfd);
	w->rootfd = -1;
}

void ustack_perfmap_where__name(const struct ustack_perfmap_where *w, char *name, size_t name_sz)
{
	if (!name || !name_sz)
		return;
	if (w->host_view)
		snprintf(name, name_sz, "/tmp/perf-%d.map", w->nspid);
	else
		snprintf(name, name_sz, "/proc/%d/root/tmp/perf-%d.map", w->pid, w->nspid);
}

/* The map is opened from the root's fd, never from a path string through
 * /proc/PID/root: the kernel would resolve an absolute symbolic link met
 * on the way against our root, the host's. RESOLVE_IN_ROOT resolves it in
 * the process's root, as the process itself did when it wrote the file. */
int ustack_perfmap__read_where(struct ustack_perfmap *m, const struct ustack_perfmap_where *w,
			       uint32_t uid)
{
	struct open_how how = { .flags = MAP_OPEN_FLAGS,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char rel[32], name[96];
	int fd, ret;

	if (!m || !w || w->rootfd < 0 || w->nspid <= 0)
		return -EINVAL;
	snprintf(rel, sizeof(rel), "tmp/perf-%d.map", w->nspid);
	ustack_perfmap_where__name(w, name, sizeof(name));
	fd = (int)syscall(SYS_openat2, w->rootfd, rel, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	ret = check_map_fd(fd, name, uid);
	if (ret) {
		close(fd);
		return ret;
	}
	return read_map_fd(m, fd, name);
}

int ustack_perfmap__read_pid(struct ustack_perfmap *m, int pid, uint32_t uid, char *name,
			     size_t name_sz)
{
	struct ustack_perfmap_where w;
	int ret;

	if (name && name_sz)
		snprintf(name, name_sz, "/proc/%d/status", pid);
	if (!m)
		return -EINVAL;
	ret = ustack_perfmap_where__open(pid, &w);
	if (!ret) {
		ustack_perfmap_where__name(&w, name, name_sz);
		ret = ustack_perfmap__read_where(m, &w, uid);
	}
	ustack_perfmap_where__close(&w);
	return ret;
}
