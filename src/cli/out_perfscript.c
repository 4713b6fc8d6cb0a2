// SPDX-License-Identifier: MIT
/*
 * The text `perf script` prints for samples with call graphs, so that tools
 * written for it (FlameGraph's stackcollapse-perf.pl, the Firefox
 * Profiler's importer) read ustack traces unchanged:
 *
 *   comm PID/TID [CPU] SECS.USECS: PERIOD EVENT:
 *   \t<addr> <func>+0x<off> (<dso>)        one line per frame, innermost first
 *   <blank line>
 *
 * What those readers rely on: the header starts with a non-blank comm and
 * has "PID/TID", a time followed by ':', and "PERIOD EVENT:" at its end (the
 * period is the sample's weight for stackcollapse-perf.pl); a frame line is
 * a word (the address), the function with an optional "+0x..." suffix, and
 * the module in parentheses holding no ')'; an empty line ends a sample.
 * Unknown functions are "[unknown]" (stackcollapse then shows the module's
 * base name), unknown modules "([unknown])". Names keep to those rules
 * whatever they hold (out_names.h: OUT_NAME_PS_*).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/hashmap.h>
#include "cli/out_names.h"
#include "cli/out_viewers.h"

struct cli_perfscript {
	FILE *out;
	struct ustack_u64map *idx; /* caller key -> index in text */
	char **text;               /* frame lines of each stack */
	size_t n, cap;
};

struct cli_perfscript *cli_perfscript__new(FILE *out)
{
	struct cli_perfscript *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->out = out;
	p->idx = ustack_u64map__new();
	if (!p->idx) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void cli_perfscript__free(struct cli_perfscript *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->text[i]);
	free(p->text);
	ustack_u64map__free(p->idx);
	free(p);
}

int cli_perfscript__has_stack(struct cli_perfscript *p, uint64_t key)
{
	return ustack_u64map__get(p->idx, key, NULL);
}

/* the module field: no '(' or ')' inside (both readers end it at the
 * first ')' and start it at the last " (") */
static void put_dso(FILE *m, const char *dso, int kernel)
{
	/* perf names kernel modules "[name]" */
	int br = kernel && dso && *dso && *dso != '[';

	fputs(br ? "([" : "(", m);
	if (!dso || !*dso)
		dso = "[unknown]";
	out_name_put(m, OUT_NAME_PS_DSO, dso);
	fputs(br ? "])" : ")", m);
}

/* a function name on one line; the readers cut the module at " (" from
 * the right, so a name may hold anything but a line break, a '(' first
 * (a frame the readers skip) and "->" (frames to stackcollapse) */
static void put_name(FILE *m, const char *s)
{
	out_name_put(m, OUT_NAME_PS_FUNC, s);
}

int cli_perfscript__add_stack(struct cli_perfscript *p, uint64_t key,
			      const struct cli_frame *frames, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	uint64_t *slot;
	int isnew;

	if (p->n == p->cap) {
		size_t ncap = p->cap ? 2 * p->cap : 64;
		char **np = realloc(p->text, ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		p->text = np;
		p->cap = ncap;
	}
	m = open_memstream(&buf, &len);
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct cli_frame *f = &frames[i];

		/* perf script prints machine frames; inlined functions only
		 * with --inline, which stackcollapse-perf.pl does not expect */
		if (f->inlined)
			continue;
		fprintf(m, "\t%16" PRIx64 " ", f->addr);
		if (f->name) {
			if (f->python)
				fputs("py::", m);
			put_name(m, f->name);
			if (f->has_off)
				fprintf(m, "+0x%" PRIx64, f->sym_off);
		} else {
			fputs("[unknown]", m);
		}
		fputc(' ', m);
		/* a kernel address without a symbol: perf has no map for it */
		put_dso(m, f->kernel && !f->name ? NULL : f->dso, f->kernel);
		fputc('\n', m);
	}
	if (fclose(m) || !buf) {
		free(buf);
		return -ENOMEM;
	}
	slot = ustack_u64map__slot(p->idx, key, &isnew);
	if (!slot) {
		free(buf);
		return -ENOMEM;
	}
	if (!isnew) {
		free(buf);
		return 0;
	}
	p->text[p->n] = buf;
	*slot = p->n++;
	return 0;
}

int cli_perfscript__sample(struct cli_perfscript *p, const struct cli_perfscript_sample *s,
			   uint64_t key)
{
	uint64_t i;
	const char *comm = s->comm && *s->comm ? s->comm : ":-1";

	if (!ustack_u64map__get(p->idx, key, &i))
		return -ENOENT;
	/* readers want the header to start with a non-blank, be one line, and
	 * find the pid after the comm (OUT_NAME_PS_COMM). stackcollapse's
	 * "^(\S.+?)\s+(\d+)" takes a comm of one character only when two
	 * blanks follow it: perf's "%5d" gives them to pids below 10000 only */
	out_name_put(p->out, OUT_NAME_PS_COMM, comm);
	if (out_name_escape(OUT_NAME_PS_COMM, comm, strlen(comm), NULL) == 1)
		putc(' ', p->out);
	/* perf's own layout with call graphs: "%s %5d/%-5d [%03d] %5lu.%06lu: %10lu %s: " */
	fprintf(p->out, " %5" PRIu32 "/%-5" PRIu32 " [%03d] %5" PRIu64 ".%06" PRIu64 ": %10" PRIu64 " ",
		s->pid, s->tid, s->cpu == UINT32_MAX ? -1 : (int)s->cpu, s->time / 1000000000u,
		s->time % 1000000000u / 1000u, s->period);
	/* the event is the header's last word */
	out_name_put(p->out, OUT_NAME_PS_EVENT, s->event ? s->event : "event");
	fprintf(p->out, ": %s\n%s\n", s->args ? s->args : "", p->text[i]);
	return ferror(p->out) ? -EIO : 0;
}
