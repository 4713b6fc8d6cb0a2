// SPDX-License-Identifier: MIT
/*
 * A small protobuf encoder and a pprof profile builder (see out_pprof.h).
 *
 * Why not protobuf-c: the profile is one fixed message of a dozen field
 * kinds, all varints, strings and packed varints, written once; a generated
 * protobuf-c module would add a build-time compiler, a runtime library and a
 * second copy of every string and id for ~150 lines of encoding. The wire
 * format is simple and stable (https://protobuf.dev/programming-guides/encoding/).
 *
 * Field numbers below are those of perftools.profiles in
 * github.com/google/pprof proto/profile.proto.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <ustack/hashmap.h>
#include "cli/cli.h"
#include "cli/out_names.h"
#include "cli/out_pprof.h"

/* ---- wire format ---------------------------------------------------------- */

static void pb_reserve(struct pb_buf *b, size_t more)
{
	void *p = b->p;

	if (b->oom || (more > SIZE_MAX - b->len) || cli_grow(&p, &b->cap, b->len + more))
		b->oom = 1;
	b->p = p;
}

static void pb_raw(struct pb_buf *b, const void *p, size_t n)
{
	pb_reserve(b, n);
	if (b->oom || !n)
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void pb_varint(struct pb_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	/* seven bits per byte, least significant first, high bit = more */
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	pb_raw(b, tmp, n);
}

static void pb_tag(struct pb_buf *b, uint32_t field, enum pb_wire wt)
{
	pb_varint(b, (uint64_t)field << 3 | wt);
}

void pb_field_varint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_tag(b, field, PB_VARINT);
	pb_varint(b, v);
}

void pb_field_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n)
{
	pb_tag(b, field, PB_LEN);
	pb_varint(b, n);
	pb_raw(b, p, n);
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void pb_field_packed(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	size_t bytes = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		bytes += varint_size(v[i]);
	pb_tag(b, field, PB_LEN);
	pb_varint(b, bytes);
	for (size_t i = 0; i < n; i++)
		pb_varint(b, v[i]);
}

void pb_buf_free(struct pb_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* a proto3 scalar: the default (0) is not written */
static void pb_opt(struct pb_buf *b, uint32_t field, uint64_t v)
{
	if (v)
		pb_field_varint(b, field, v);
}

/* embedded message @m as field @field of @b; @m is emptied for reuse */
static void pb_msg(struct pb_buf *b, uint32_t field, struct pb_buf *m)
{
	if (m->oom)
		b->oom = 1;
	pb_field_bytes(b, field, m->p, m->len);
	m->len = 0;
	m->oom = 0;
}

/* ---- interned keys ----------------------------------------------------------- */

/* A set of byte strings, each numbered in order of addition. */
struct keyset {
	struct ustack_u64map *idx; /* hash (probed) -> number + 1 */
	struct pb_buf arena;       /* the keys, back to back */
	size_t *off;               /* key n is arena[off[n] .. off[n + 1]) */
	size_t n, cap;
};

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

static int keyset_init(struct keyset *ks)
{
	memset(ks, 0, sizeof(*ks));
	ks->idx = ustack_u64map__new();
	ks->off = malloc(sizeof(*ks->off));
	if (!ks->idx || !ks->off)
		return -ENOMEM;
	ks->cap = 1;
	ks->off[0] = 0;
	return 0;
}

static void keyset_fini(struct keyset *ks)
{
	ustack_u64map__free(ks->idx);
	pb_buf_free(&ks->arena);
	free(ks->off);
}

static const void *keyset_key(const struct keyset *ks, size_t i, size_t *len)
{
	*len = ks->off[i + 1] - ks->off[i];
	return ks->arena.p + ks->off[i];
}

/* number of key @k (added when new: *isnew = 1); -1 on no memory */
static long keyset_intern(struct keyset *ks, const void *k, size_t len, int *isnew)
{
	uint64_t h = hash_bytes(k, len), v;

	*isnew = 0;
	/* equal hashes of different keys: probe the next hash values */
	for (;; h++) {
		size_t l;
		const void *e;

		if (!ustack_u64map__get(ks->idx, h, &v))
			break;
		e = keyset_key(ks, v - 1, &l);
		/* the empty key lives at a NULL arena: no memcmp on it */
		if (l == len && (!len || !memcmp(e, k, len)))
			return (long)(v - 1);
	}
	if (ks->n + 2 > ks->cap) {
		size_t ncap = ks->cap * 2 + 8;
		size_t *np = realloc(ks->off, ncap * sizeof(*np));

		if (!np)
			return -1;
		ks->off = np;
		ks->cap = ncap;
	}
	pb_raw(&ks->arena, k, len);
	if (ks->arena.oom || ustack_u64map__put(ks->idx, h, ks->n + 1))
		return -1;
	ks->off[ks->n + 1] = ks->arena.len;
	*isnew = 1;
	return (long)ks->n++;
}

/* ---- the profile --------------------------------------------------------------- */

struct pp_mapping {
	uint64_t start, limit, offset;
	int64_t filename, build_id;
	int debug_info;
	/* locations, and those with a function / a file / every line number */
	size_t nlocs, with_func, with_file, with_line;
};

struct pp_function {
	int64_t name, system_name, filename, start_line;
};

struct pp_location {
	uint64_t mapping_id, address;
	size_t first_line, nlines; /* in lines[] */
};

struct pp_sample {
	size_t first_loc, nlocs;   /* in sample_locs[] */
	size_t first_label, nlabels; /* in labels[] */
};

struct pp_label {
	int64_t key, str, num, num_unit;
};

#define GROW(arr, n, cap)                                                           \
	({                                                                          \
		int ok_ = 1;                                                        \
		if ((n) == (cap)) {                                                 \
			size_t nc_ = (cap) ? 2 * (cap) : 16;                        \
			void *np_ = realloc((arr), nc_ * sizeof(*(arr)));           \
			if (np_) {                                                  \
				(arr) = np_;                                        \
				(cap) = nc_;                                        \
			} else {                                                    \
				ok_ = 0;                                            \
			}                                                           \
		}                                                                   \
		ok_;                                                                \
	})

struct pprof {
	struct keyset strings, mapkeys, funckeys, lockeys, samplekeys;
	struct { int64_t type, unit; } *stypes;
	size_t nstypes, stypes_cap;
	int64_t period_type, period_unit, period;
	int64_t default_type; /* string index; 0: unset (the last type, for readers) */
	int64_t time_nanos, duration_nanos;
	int64_t *comments;
	size_t ncomments, comments_cap;

	struct pp_mapping *maps;
	size_t nmaps, maps_cap;
	struct pp_function *funcs;
	size_t nfuncs, funcs_cap;
	struct pp_location *locs;
	size_t nlocs, locs_cap;
	struct pprof_line *lines;
	size_t nlines, lines_cap;
	struct pp_sample *samples;
	size_t nsamples, samples_cap;
	uint64_t *sample_locs;
	size_t nsample_locs, sample_locs_cap;
	struct pp_label *labels;
	size_t nlabels, labels_cap;
	int64_t *values; /* nsamples * nstypes */
	size_t values_cap;
	int oom;
};

struct pprof *pprof__new(void)
{
	struct pprof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (keyset_init(&p->strings) || keyset_init(&p->mapkeys) || keyset_init(&p->funckeys) ||
	    keyset_init(&p->lockeys) || keyset_init(&p->samplekeys) || pprof__string(p, "") != 0) {
		pprof__free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void pprof__free(struct pprof *p)
{
	if (!p)
		return;
	keyset_fini(&p->strings);
	keyset_fini(&p->mapkeys);
	keyset_fini(&p->funckeys);
	keyset_fini(&p->lockeys);
	keyset_fini(&p->samplekeys);
	free(p->stypes);
	free(p->comments);
	free(p->maps);
	free(p->funcs);
	free(p->locs);
	free(p->lines);
	free(p->samples);
	free(p->sample_locs);
	free(p->labels);
	free(p->values);
	free(p);
}

int64_t pprof__string(struct pprof *p, const char *s)
{
	int isnew;
	long i;
	size_t n, clean;

	if (!s)
		s = "";
	n = strlen(s);
	/* protobuf's string must be UTF-8 (parsers of proto3 refuse a
	 * message with another one): a name that is not gets U+FFFD for each
	 * byte that is not (out_names.h) */
	clean = out_name_clean(OUT_NAME_UTF8, s, n);
	if (clean == n) {
		i = keyset_intern(&p->strings, s, n, &isnew);
	} else {
		size_t len = out_name_escape(OUT_NAME_UTF8, s, n, NULL);
		char *u = malloc(len ? len : 1);

		if (!u) {
			p->oom = 1;
			return 0;
		}
		out_name_escape(OUT_NAME_UTF8, s, n, u);
		i = keyset_intern(&p->strings, u, len, &isnew);
		free(u);
	}
	if (i < 0) {
		p->oom = 1;
		return 0;
	}
	return i;
}

int pprof__add_sample_type(struct pprof *p, const char *type, const char *unit)
{
	if (p->nsamples)
		return -EINVAL;
	if (!GROW(p->stypes, p->nstypes, p->stypes_cap))
		return -ENOMEM;
	p->stypes[p->nstypes].type = pprof__string(p, type);
	p->stypes[p->nstypes].unit = pprof__string(p, unit);
	p->nstypes++;
	return p->oom ? -ENOMEM : 0;
}

size_t pprof__nr_sample_types(const struct pprof *p)
{
	return p->nstypes;
}

void pprof__set_period(struct pprof *p, const char *type, const char *unit, int64_t period)
{
	p->period_type = pprof__string(p, type);
	p->period_unit = pprof__string(p, unit);
	p->period = period;
}

void pprof__set_default_type(struct pprof *p, const char *type)
{
	p->default_type = pprof__string(p, type);
}

void pprof__set_times(struct pprof *p, int64_t time_nanos, int64_t duration_nanos)
{
	p->time_nanos = time_nanos;
	p->duration_nanos = duration_nanos;
}

void pprof__add_comment(struct pprof *p, const char *text)
{
	int64_t s = pprof__string(p, text);

	if (!GROW(p->comments, p->ncomments, p->comments_cap)) {
		p->oom = 1;
		return;
	}
	p->comments[p->ncomments++] = s;
}

uint64_t pprof__mapping(struct pprof *p, uint64_t key, uint64_t start, uint64_t limit,
			uint64_t file_offset, const char *path, const char *build_id, int debug_info,
			uint64_t addr)
{
	int isnew;
	long i = keyset_intern(&p->mapkeys, &key, sizeof(key), &isnew);
	struct pp_mapping *m;

	if (i < 0) {
		p->oom = 1;
		return 0;
	}
	if (isnew) {
		if (!GROW(p->maps, p->nmaps, p->maps_cap)) {
			p->oom = 1;
			return 0;
		}
		m = &p->maps[p->nmaps++];
		memset(m, 0, sizeof(*m));
		m->start = start;
		m->limit = limit > start ? limit : start + 1;
		m->offset = file_offset;
		m->filename = pprof__string(p, path);
		m->build_id = pprof__string(p, build_id);
		m->debug_info = debug_info;
	}
	m = &p->maps[i];
	if (addr && addr >= m->limit)
		m->limit = addr + 1;
	return (uint64_t)i + 1;
}

uint64_t pprof__function(struct pprof *p, const char *name, const char *system_name,
			 const char *filename, int64_t start_line)
{
	struct pp_function f = {
		.name = pprof__string(p, name),
		.system_name = pprof__string(p, system_name),
		.filename = pprof__string(p, filename),
		.start_line = start_line,
	};
	int isnew;
	long i = keyset_intern(&p->funckeys, &f, sizeof(f), &isnew);

	if (i < 0 || p->oom) {
		p->oom = 1;
		return 0;
	}
	if (isnew) {
		if (!GROW(p->funcs, p->nfuncs, p->funcs_cap)) {
			p->oom = 1;
			return 0;
		}
		p->funcs[p->nfuncs++] = f;
	}
	return (uint64_t)i + 1;
}

uint64_t pprof__location_find(struct pprof *p, uint64_t k1, uint64_t k2)
{
	uint64_t k[2] = { k1, k2 }, h = hash_bytes(k, sizeof(k)), v;

	for (;; h++) {
		size_t l;
		const void *e;

		if (!ustack_u64map__get(p->lockeys.idx, h, &v))
			return 0;
		e = keyset_key(&p->lockeys, v - 1, &l);
		if (l == sizeof(k) && !memcmp(e, k, l))
			return v;
	}
}

uint64_t pprof__py_location(struct pprof *p, const char *name, const char *file,
			    int64_t start_line, uint32_t line)
{
	struct pprof_line l = { .line = line };
	uint64_t loc;
	size_t n = strlen(name);
	char *sys = malloc(n + 5);

	/* system_name "py::QUALNAME", never the name itself: where the two
	 * are equal, go tool pprof takes the name for a C++ symbol and strips
	 * every "<...>" from it: "<module>" became "<unknown>",
	 * "f.<locals>.<lambda>" "f.." */
	if (!sys) {
		p->oom = 1;
		return 0;
	}
	memcpy(sys, "py::", 4);
	memcpy(sys + 4, name, n + 1);
	l.function_id = pprof__function(p, name, sys, file ? file : "", start_line);
	free(sys);
	if (!l.function_id)
		return 0;
	/* bit 63: no native key (an address, a file id) has it */
	loc = pprof__location_find(p, 1ull << 63 | l.function_id, line);
	return loc ? loc : pprof__location_add(p, 1ull << 63 | l.function_id, line, 0, 0, &l, 1);
}

uint64_t pprof__location_add(struct pprof *p, uint64_t k1, uint64_t k2, uint64_t mapping_id,
			     uint64_t address, const struct pprof_line *lines, size_t nlines)
{
	uint64_t k[2] = { k1, k2 };
	int isnew;
	long i = keyset_intern(&p->lockeys, k, sizeof(k), &isnew);
	struct pp_location *l;

	if (i < 0) {
		p->oom = 1;
		return 0;
	}
	if (!isnew)
		return (uint64_t)i + 1;
	if (!GROW(p->locs, p->nlocs, p->locs_cap)) {
		p->oom = 1;
		return 0;
	}
	l = &p->locs[p->nlocs++];
	l->mapping_id = mapping_id <= p->nmaps ? mapping_id : 0;
	l->address = address;
	l->first_line = p->nlines;
	l->nlines = 0;
	for (size_t j = 0; j < nlines; j++) {
		if (!lines[j].function_id)
			continue;
		if (!GROW(p->lines, p->nlines, p->lines_cap)) {
			p->oom = 1;
			break;
		}
		p->lines[p->nlines++] = lines[j];
		l->nlines++;
	}
	if (l->mapping_id) {
		struct pp_mapping *m = &p->maps[l->mapping_id - 1];
		int file = l->nlines > 0, line = l->nlines > 0;

		for (size_t j = 0; j < l->nlines; j++) {
			const struct pprof_line *ln = &p->lines[l->first_line + j];

			file &= p->funcs[ln->function_id - 1].filename != 0;
			line &= ln->line > 0;
		}
		m->nlocs++;
		m->with_func += l->nlines > 0;
		m->with_file += file;
		m->with_line += line;
	}
	return (uint64_t)i + 1;
}

int64_t *pprof__sample(struct pprof *p, const uint64_t *locs, size_t nlocs,
		       const struct pprof_label *labels, size_t nlabels)
{
	struct pb_buf key = { 0 };
	struct pp_sample *s;
	int isnew;
	long i;

	/* the key: location ids, then each label as interned numbers */
	pb_varint(&key, nlocs);
	for (size_t j = 0; j < nlocs; j++)
		pb_varint(&key, locs[j]);
	for (size_t j = 0; j < nlabels; j++) {
		pb_varint(&key, (uint64_t)pprof__string(p, labels[j].key));
		pb_varint(&key, labels[j].str ? (uint64_t)pprof__string(p, labels[j].str) + 1 : 0);
		pb_varint(&key, (uint64_t)labels[j].num);
		pb_varint(&key, (uint64_t)pprof__string(p, labels[j].num_unit));
	}
	if (key.oom || p->oom) {
		pb_buf_free(&key);
		p->oom = 1;
		return NULL;
	}
	i = keyset_intern(&p->samplekeys, key.p, key.len, &isnew);
	pb_buf_free(&key);
	if (i < 0) {
		p->oom = 1;
		return NULL;
	}
	if (!isnew)
		return &p->values[(size_t)i * p->nstypes];
	if (!GROW(p->samples, p->nsamples, p->samples_cap)) {
		p->oom = 1;
		return NULL;
	}
	if ((p->nsamples + 1) * p->nstypes > p->values_cap) {
		size_t ncap = 2 * (p->nsamples + 1) * (p->nstypes ? p->nstypes : 1);
		int64_t *nv = realloc(p->values, ncap * sizeof(*nv));

		if (!nv) {
			p->oom = 1;
			return NULL;
		}
		p->values = nv;
		p->values_cap = ncap;
	}
	s = &p->samples[p->nsamples];
	s->first_loc = p->nsample_locs;
	s->nlocs = nlocs;
	s->first_label = p->nlabels;
	s->nlabels = nlabels;
	for (size_t j = 0; j < nlocs; j++) {
		if (!GROW(p->sample_locs, p->nsample_locs, p->sample_locs_cap)) {
			p->oom = 1;
			return NULL;
		}
		p->sample_locs[p->nsample_locs++] = locs[j];
	}
	for (size_t j = 0; j < nlabels; j++) {
		struct pp_label *l;

		if (!GROW(p->labels, p->nlabels, p->labels_cap)) {
			p->oom = 1;
			return NULL;
		}
		l = &p->labels[p->nlabels++];
		l->key = pprof__string(p, labels[j].key);
		l->str = labels[j].str ? pprof__string(p, labels[j].str) : 0;
		l->num = labels[j].str ? 0 : labels[j].num;
		l->num_unit = labels[j].str ? 0 : pprof__string(p, labels[j].num_unit);
	}
	memset(&p->values[p->nsamples * p->nstypes], 0, p->nstypes * sizeof(int64_t));
	return &p->values[p->nsamples++ * p->nstypes];
}

size_t pprof__nr_samples(const struct pprof *p)
{
	return p->nsamples;
}

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12, PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3, LABEL_NUM_UNIT = 4,
	MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

int pprof__encode(struct pprof *p, struct pb_buf *out)
{
	struct pb_buf m = { 0 }, sub = { 0 };
	uint64_t *tmp = NULL;
	size_t tmp_cap = 0;

	if (p->oom)
		return -ENOMEM;
	for (size_t i = 0; i < p->nstypes; i++) {
		pb_opt(&m, VALUETYPE_TYPE, (uint64_t)p->stypes[i].type);
		pb_opt(&m, VALUETYPE_UNIT, (uint64_t)p->stypes[i].unit);
		pb_msg(out, PROFILE_SAMPLE_TYPE, &m);
	}
	if (p->nstypes) {
		tmp_cap = p->nstypes;
		tmp = malloc(tmp_cap * sizeof(*tmp));
		if (!tmp)
			out->oom = 1;
	}
	for (size_t i = 0; i < p->nsamples && !out->oom; i++) {
		const struct pp_sample *s = &p->samples[i];

		pb_field_packed(&m, SAMPLE_LOCATION_ID, p->sample_locs + s->first_loc, s->nlocs);
		for (size_t j = 0; j < p->nstypes; j++)
			tmp[j] = (uint64_t)p->values[i * p->nstypes + j];
		pb_field_packed(&m, SAMPLE_VALUE, tmp, p->nstypes);
		for (size_t j = 0; j < s->nlabels; j++) {
			const struct pp_label *l = &p->labels[s->first_label + j];

			pb_opt(&sub, LABEL_KEY, (uint64_t)l->key);
			pb_opt(&sub, LABEL_STR, (uint64_t)l->str);
			if (!l->str)
				pb_field_varint(&sub, LABEL_NUM, (uint64_t)l->num);
			pb_opt(&sub, LABEL_NUM_UNIT, (uint64_t)l->num_unit);
			pb_msg(&m, SAMPLE_LABEL, &sub);
		}
		pb_msg(out, PROFILE_SAMPLE, &m);
	}
	free(tmp);
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct pp_mapping *mp = &p->maps[i];
		int all = mp->nlocs > 0;

		pb_field_varint(&m, MAPPING_ID, i + 1);
		pb_opt(&m, MAPPING_MEMORY_START, mp->start);
		pb_opt(&m, MAPPING_MEMORY_LIMIT, mp->limit);
		pb_opt(&m, MAPPING_FILE_OFFSET, mp->offset);
		pb_opt(&m, MAPPING_FILENAME, (uint64_t)mp->filename);
		pb_opt(&m, MAPPING_BUILD_ID, (uint64_t)mp->build_id);
		/* "has X" promises every location of the mapping has it: a
		 * consumer then does not symbolize the mapping again */
		pb_opt(&m, MAPPING_HAS_FUNCTIONS, all && mp->with_func == mp->nlocs);
		pb_opt(&m, MAPPING_HAS_FILENAMES, all && mp->with_file == mp->nlocs);
		pb_opt(&m, MAPPING_HAS_LINE_NUMBERS, all && mp->with_line == mp->nlocs);
		pb_opt(&m, MAPPING_HAS_INLINE_FRAMES,
		       all && mp->debug_info && mp->with_line == mp->nlocs);
		pb_msg(out, PROFILE_MAPPING, &m);
	}
	for (size_t i = 0; i < p->nlocs; i++) {
		const struct pp_location *l = &p->locs[i];

		pb_field_varint(&m, LOCATION_ID, i + 1);
		pb_opt(&m, LOCATION_MAPPING_ID, l->mapping_id);
		pb_opt(&m, LOCATION_ADDRESS, l->address);
		for (size_t j = 0; j < l->nlines; j++) {
			const struct pprof_line *ln = &p->lines[l->first_line + j];

			pb_opt(&sub, LINE_FUNCTION_ID, ln->function_id);
			pb_opt(&sub, LINE_LINE, (uint64_t)ln->line);
			pb_msg(&m, LOCATION_LINE, &sub);
		}
		pb_msg(out, PROFILE_LOCATION, &m);
	}
	for (size_t i = 0; i < p->nfuncs; i++) {
		const struct pp_function *f = &p->funcs[i];

		pb_field_varint(&m, FUNCTION_ID, i + 1);
		pb_opt(&m, FUNCTION_NAME, (uint64_t)f->name);
		pb_opt(&m, FUNCTION_SYSTEM_NAME, (uint64_t)f->system_name);
		pb_opt(&m, FUNCTION_FILENAME, (uint64_t)f->filename);
		pb_opt(&m, FUNCTION_START_LINE, (uint64_t)f->start_line);
		pb_msg(out, PROFILE_FUNCTION, &m);
	}
	/* every string is interned by now: "" first, as the format requires */
	for (size_t i = 0; i < p->strings.n; i++) {
		size_t len;
		const void *s = keyset_key(&p->strings, i, &len);

		pb_field_bytes(out, PROFILE_STRING_TABLE, s, len);
	}
	pb_opt(out, PROFILE_TIME_NANOS, (uint64_t)p->time_nanos);
	pb_opt(out, PROFILE_DURATION_NANOS, (uint64_t)p->duration_nanos);
	if (p->period_type || p->period_unit) {
		pb_opt(&m, VALUETYPE_TYPE, (uint64_t)p->period_type);
		pb_opt(&m, VALUETYPE_UNIT, (uint64_t)p->period_unit);
		pb_msg(out, PROFILE_PERIOD_TYPE, &m);
	}
	pb_opt(out, PROFILE_PERIOD, (uint64_t)p->period);
	if (p->ncomments) {
		uint64_t *c = malloc(p->ncomments * sizeof(*c));

		if (!c) {
			out->oom = 1;
		} else {
			for (size_t i = 0; i < p->ncomments; i++)
				c[i] = (uint64_t)p->comments[i];
			pb_field_packed(out, PROFILE_COMMENT, c, p->ncomments);
			free(c);
		}
	}
	pb_opt(out, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)p->default_type);
	pb_buf_free(&m);
	pb_buf_free(&sub);
	return out->oom || p->oom ? -ENOMEM : 0;
}

int pprof__write(struct pprof *p, FILE *f)
{
	struct pb_buf msg = { 0 };
	z_stream zs;
	uint8_t obuf[1 << 16];
	int ret = pprof__encode(p, &msg), zr;

	if (!ret && msg.len > UINT32_MAX)
		ret = -EFBIG; /* one deflate call takes at most 4 GiB */
	if (ret) {
		pb_buf_free(&msg);
		return ret;
	}
	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: a gzip wrapper, as the format asks on disk */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		pb_buf_free(&msg);
		return -ENOMEM;
	}
	zs.next_in = msg.p;
	zs.avail_in = (uInt)msg.len;
	do {
		zs.next_out = obuf;
		zs.avail_out = sizeof(obuf);
		zr = deflate(&zs, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			ret = -EIO;
			break;
		}
		if (fwrite(obuf, 1, sizeof(obuf) - zs.avail_out, f) != sizeof(obuf) - zs.avail_out) {
			ret = -EIO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&zs);
	pb_buf_free(&msg);
	if (!ret && (fflush(f) || ferror(f)))
		ret = -EIO;
	return ret;
}
