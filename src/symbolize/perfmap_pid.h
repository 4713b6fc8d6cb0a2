/* SPDX-License-Identifier: MIT */
/* Where a process's JIT map is: its pid in its own PID namespace. */
#ifndef USTACK_PERFMAP_PID_H
#define USTACK_PERFMAP_PID_H

#include <stddef.h>
#include <stdint.h>

struct ustack_perfmap;

/* Where process @pid's JIT map is, learnt while it runs (a process that
 * exited has no root to look in any more) and usable after it is gone. */
struct ustack_perfmap_where {
	int pid;       /* as our /proc sees it */
	int nspid;     /* its pid in its own PID namespace: names the file */
	int rootfd;    /* O_PATH fd of its root directory, or -1 */
	int host_view; /* same pid, root and mount namespace as ours */
};

/* Learn where (reads /proc/PID/status, opens /proc/PID/root). 0, -ESRCH
 * (gone, or a zombie), -EBADMSG (status without a good NStgid: warned),
 * -errno. @w is closeable either way. */
int ustack_perfmap_where__open(int pid, struct ustack_perfmap_where *w);
void ustack_perfmap_where__close(struct ustack_perfmap_where *w);
/* The map's name for messages: /tmp/perf-PID.map for a process that sees
 * what we see, else /proc/PID/root/tmp/perf-NSPID.map */
void ustack_perfmap_where__name(const struct ustack_perfmap_where *w, char *name, size_t name_sz);
/* ustack_perfmap__read_file_owned() of the map found through @w. */
int ustack_perfmap__read_where(struct ustack_perfmap *m, const struct ustack_perfmap_where *w,
			       uint32_t uid);

/*
 * The innermost pid of the NStgid line of /proc/PID/status text @buf
 * (@len bytes, not NUL-terminated). The text is the kernel's, but a
 * process renames itself (Name:) and a line could be made to look like
 * another: only a line that starts "NStgid:" at the beginning of a line
 * counts, its fields are tab-separated decimals in 1..2^22 (PID_MAX_LIMIT)
 * without signs or leading zeros, at most 32 of them (the kernel nests PID
 * namespaces 32 deep), and the first must be @pid (the pid as our /proc
 * sees it).
 * @return 0 with *nspid set; -ENOENT: no NStgid line; -EBADMSG: malformed
 */
int ustack_status__nstgid(const char *buf, size_t len, int pid, int *nspid);

#endif
