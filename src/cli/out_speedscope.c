// SPDX-License-Identifier: MIT
/*
 * The speedscope file format (https://www.speedscope.app/file-format-schema.json):
 * one shared frame table, one "sampled" profile per thread and name (and
 * event kind, when a file mixes kinds), samples as lists of frame indexes root
 * first. Everything is kept in memory until the end because the frame
 * table must come before the profiles and is only known once every stack
 * has been seen; stacks are interned, so memory grows with distinct stacks
 * plus 12 bytes per sample.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/hashmap.h>
#include <ustack/ustack.h>
#include "cli/cli.h"
#include "cli/out_names.h"
#include "cli/out_viewers.h"

struct ss_frame {
	char *name, *file;
	uint32_t line;
};

struct ss_profile {
	uint32_t tid, event;
	size_t prev; /* the profile of the same thread and event made before, + 1 (0: none) */
	char comm[32];
	const char *unit;
	uint32_t *stacks;   /* stack index per sample */
	uint64_t *weights;
	size_t n, cap;
	uint64_t total;
};

struct cli_speedscope {
	char *name;
	struct ss_frame *frames;
	size_t nframes, frames_cap;
	struct ustack_u64map *frame_idx; /* hash (+ probe) -> frame index */
	uint32_t *pool;                  /* frame indexes of all stacks, root first */
	size_t npool, pool_cap;
	struct { size_t off; uint32_t n; } *stacks;
	size_t nstacks, stacks_cap;
	struct ustack_u64map *stack_idx; /* caller key -> stack index */
	struct ss_profile *profiles;
	size_t nprofiles, profiles_cap;
	struct ustack_u64map *profile_idx; /* tid << 32 | event -> its newest profile */
	char **events;
	size_t nevents;
};

/* grow array *p of *cap elements of @sz bytes to hold @need */
static int grow(void *p, size_t *cap, size_t need, size_t sz)
{
	void **pp = p, *np;
	size_t ncap = *cap ? *cap : 16;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*pp, ncap * sz);
	if (!np)
		return -ENOMEM;
	*pp = np;
	*cap = ncap;
	return 0;
}

struct cli_speedscope *cli_speedscope__new(const char *name)
{
	struct cli_speedscope *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->name = strdup(name ? name : "ustack");
	s->frame_idx = ustack_u64map__new();
	s->stack_idx = ustack_u64map__new();
	s->profile_idx = ustack_u64map__new();
	if (!s->name || !s->frame_idx || !s->stack_idx || !s->profile_idx) {
		cli_speedscope__free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void cli_speedscope__free(struct cli_speedscope *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nframes; i++) {
		free(s->frames[i].name);
		free(s->frames[i].file);
	}
	for (size_t i = 0; i < s->nprofiles; i++) {
		free(s->profiles[i].stacks);
		free(s->profiles[i].weights);
	}
	for (size_t i = 0; i < s->nevents; i++)
		free(s->events[i]);
	free(s->events);
	free(s->frames);
	free(s->pool);
	free(s->stacks);
	free(s->profiles);
	free(s->name);
	ustack_u64map__free(s->frame_idx);
	ustack_u64map__free(s->stack_idx);
	ustack_u64map__free(s->profile_idx);
	free(s);
}

static uint64_t fnv(uint64_t h, const char *p)
{
	for (; p && *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull; /* end mark: "ab"+"c" != "a"+"bc" */
}

static int streq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p;
}

/* index of frame (name, file, line) in the shared table, added if new */
static long frame_index(struct cli_speedscope *s, const char *name, const char *file,
			uint32_t line)
{
	uint64_t h = fnv(fnv(0xcbf29ce484222325ull, name), file) ^ line, v;

	/* distinct frames with one hash take the next free hash values */
	for (;; h++) {
		const struct ss_frame *f;

		if (!ustack_u64map__get(s->frame_idx, h, &v))
			break;
		f = &s->frames[v];
		if (streq(f->name, name) && streq(f->file, file) && f->line == line)
			return (long)v;
	}
	if (grow(&s->frames, &s->frames_cap, s->nframes + 1, sizeof(*s->frames)))
		return -ENOMEM;
	s->frames[s->nframes].name = strdup(name);
	s->frames[s->nframes].file = file ? strdup(file) : NULL;
	s->frames[s->nframes].line = line;
	if (!s->frames[s->nframes].name || (file && !s->frames[s->nframes].file)) {
		free(s->frames[s->nframes].name);
		free(s->frames[s->nframes].file);
		return -ENOMEM;
	}
	{
		uint64_t *slot = ustack_u64map__slot(s->frame_idx, h, NULL);

		if (!slot)
			return -ENOMEM;
		*slot = s->nframes;
	}
	return (long)s->nframes++;
}

int cli_speedscope__has_stack(struct cli_speedscope *s, uint64_t key)
{
	return ustack_u64map__get(s->stack_idx, key, NULL);
}

int cli_speedscope__add_stack(struct cli_speedscope *s, uint64_t key,
			      const struct cli_frame *frames, size_t n)
{
	uint64_t *slot;
	int isnew;
	size_t off = s->npool;
	char unk[300];

	if (n > UINT32_MAX || grow(&s->pool, &s->pool_cap, s->npool + n, sizeof(*s->pool)) ||
	    grow(&s->stacks, &s->stacks_cap, s->nstacks + 1, sizeof(*s->stacks)))
		return -ENOMEM;
	for (size_t k = n; k-- > 0;) { /* root first */
		const struct cli_frame *f = &frames[k];
		const char *name = f->name, *file = f->file;
		long idx;

		if (!name) {
			/* as folded output names them: the file, else unknown */
			const char *b = f->dso && !f->kernel ? base_name(f->dso) : NULL;

			snprintf(unk, sizeof(unk), cli_is_bracketed(b) ? "%s" : "[%s]",
				 b && *b ? b : "unknown");
			name = unk;
		}
		if (!file)
			file = f->dso; /* where the code is, when no source file is known */
		idx = frame_index(s, name, file, file == f->file ? f->line : 0);
		if (idx < 0) {
			s->npool = off;
			return (int)idx;
		}
		s->pool[s->npool++] = (uint32_t)idx;
	}
	slot = ustack_u64map__slot(s->stack_idx, key, &isnew);
	if (!slot) {
		s->npool = off;
		return -ENOMEM;
	}
	if (!isnew) { /* defined twice: the first one stays */
		s->npool = off;
		return 0;
	}
	s->stacks[s->nstacks].off = off;
	s->stacks[s->nstacks].n = (uint32_t)n;
	*slot = s->nstacks++;
	return 0;
}

static long event_index(struct cli_speedscope *s, const char *event)
{
	char **np;

	for (size_t i = 0; i < s->nevents; i++)
		if (!strcmp(s->events[i], event))
			return (long)i;
	np = realloc(s->events, (s->nevents + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	s->events = np;
	if (!(s->events[s->nevents] = strdup(event)))
		return -ENOMEM;
	return (long)s->nevents++;
}

static int profile_is(const struct ss_profile *p, uint32_t tid, uint32_t ev, const char *comm)
{
	return p->tid == tid && p->event == ev && !strncmp(p->comm, comm, sizeof(p->comm) - 1);
}

/* the names of one thread and event searched before another profile is
 * made: a trace whose thread cycles through more names costs at most
 * this many compares per event (and gets profiles of the same name) */
#define SS_NAMES_SEARCHED 16

int cli_speedscope__add_sample(struct cli_speedscope *s, uint32_t tid, const char *comm,
			       const char *event, const char *unit, uint64_t key, uint64_t weight)
{
	uint64_t st, *slot;
	long ev = event_index(s, event ? event : "event");
	struct ss_profile *p;
	size_t i = SIZE_MAX;
	int isnew;

	if (ev < 0)
		return (int)ev;
	if (!ustack_u64map__get(s->stack_idx, key, &st))
		return -ENOENT;
	if (!comm || !*comm)
		comm = "<...>";
	/* A profile per thread and name: a thread that took another name
	 * (exec, prctl) has its samples before an exec apart from the
	 * program it became, as folded output's "comm" frames. The map
	 * holds the thread's newest profile (of this event); each links to
	 * the one made before it. */
	slot = ustack_u64map__slot(s->profile_idx, (uint64_t)tid << 32 | (uint64_t)ev, &isnew);
	if (!slot)
		return -ENOMEM;
	if (!isnew) {
		size_t j = (size_t)*slot;

		for (int k = 0; k < SS_NAMES_SEARCHED; k++) {
			if (profile_is(&s->profiles[j], tid, (uint32_t)ev, comm)) {
				i = j;
				break;
			}
			if (!s->profiles[j].prev)
				break;
			j = s->profiles[j].prev - 1;
		}
	}
	if (i == SIZE_MAX) {
		if (grow(&s->profiles, &s->profiles_cap, s->nprofiles + 1, sizeof(*s->profiles))) {
			if (isnew)
				ustack_u64map__delete(s->profile_idx,
						      (uint64_t)tid << 32 | (uint64_t)ev, NULL);
			return -ENOMEM;
		}
		p = &s->profiles[s->nprofiles];
		memset(p, 0, sizeof(*p));
		p->tid = tid;
		p->event = (uint32_t)ev;
		p->unit = unit;
		p->prev = isnew ? 0 : *slot + 1;
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
		i = s->nprofiles++;
		*slot = i;
	}
	p = &s->profiles[i];
	if (p->n == p->cap) {
		size_t c1 = p->cap, c2 = p->cap;

		if (grow(&p->stacks, &c1, p->n + 1, sizeof(*p->stacks)) ||
		    grow(&p->weights, &c2, p->n + 1, sizeof(*p->weights)))
			return -ENOMEM;
		p->cap = c1 < c2 ? c1 : c2;
	}
	p->stacks[p->n] = (uint32_t)st;
	p->weights[p->n++] = weight;
	p->total += weight;
	return 0;
}

int cli_speedscope__write(struct cli_speedscope *s, FILE *o)
{
	fprintf(o, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n");
	fprintf(o, "\"exporter\":\"ustack %s\",\n\"name\":", ustack_version());
	out_name_json(o, s->name);
	fprintf(o, ",\n\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[");
	for (size_t i = 0; i < s->nframes; i++) {
		const struct ss_frame *f = &s->frames[i];

		fprintf(o, "%s\n{\"name\":", i ? "," : "");
		out_name_json(o, f->name);
		if (f->file) {
			fprintf(o, ",\"file\":");
			out_name_json(o, f->file);
		}
		if (f->line)
			fprintf(o, ",\"line\":%" PRIu32, f->line);
		fputc('}', o);
	}
	fprintf(o, "]},\n\"profiles\":[");
	for (size_t i = 0; i < s->nprofiles; i++) {
		const struct ss_profile *p = &s->profiles[i];
		char name[128];

		/* "comm (tid)"; with several event kinds in the file, each
		 * thread has a profile per kind, named after it too */
		if (s->nevents > 1)
			snprintf(name, sizeof(name), "%s (%" PRIu32 ") %s", p->comm, p->tid,
				 s->events[p->event]);
		else
			snprintf(name, sizeof(name), "%s (%" PRIu32 ")", p->comm, p->tid);
		fprintf(o, "%s\n{\"type\":\"sampled\",\"name\":", i ? "," : "");
		out_name_json(o, name);
		fprintf(o, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
			p->unit, p->total);
		for (size_t k = 0; k < p->n; k++) {
			uint32_t st = p->stacks[k];

			fprintf(o, "%s[", k ? "," : "");
			for (uint32_t j = 0; j < s->stacks[st].n; j++)
				fprintf(o, "%s%" PRIu32, j ? "," : "", s->pool[s->stacks[st].off + j]);
			fputc(']', o);
		}
		fprintf(o, "],\n\"weights\":[");
		for (size_t k = 0; k < p->n; k++)
			fprintf(o, "%s%" PRIu64, k ? "," : "", p->weights[k]);
		fprintf(o, "]}");
	}
	fprintf(o, "]}\n");
	return ferror(o) ? -EIO : 0;
}
