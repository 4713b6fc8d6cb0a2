/* SPDX-License-Identifier: MIT */
/*
 * pprof output: a gzipped perftools.profiles.Profile (profile.proto of
 * github.com/google/pprof), as `go tool pprof`, Pyroscope and Parca read it.
 *
 * Three layers:
 *  - pb_*: the few protobuf wire-format pieces the profile needs (varints,
 *    length-delimited fields, packed repeated varints);
 *  - pprof_*: a profile builder that interns strings, mappings, functions,
 *    locations and samples (equal ones are stored once; equal samples add
 *    their values) and writes the gzipped message;
 *  - report_pprof_* / snapshot_pprof_*: a trace, or a live snapshot, turned
 *    into a profile (out_pprof_report.c, out_pprof_snapshot.c).
 * It lives in the CLI because only the CLI writes profiles; the library
 * keeps producing frames and names.
 */
#ifndef USTACK_CLI_OUT_PPROF_H
#define USTACK_CLI_OUT_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <ustack/perfmap.h>
#include <ustack/snapshot.h>
#include <ustack/symbolize.h>
#include <ustack/trace.h>

/* ---- protobuf wire format ------------------------------------------------ */

struct pb_buf {
	uint8_t *p;
	size_t len, cap;
	int oom; /* sticky: an allocation failed, the contents are incomplete */
};

enum pb_wire { PB_VARINT = 0, PB_LEN = 2 };

void pb_varint(struct pb_buf *b, uint64_t v);
/* field @field as a varint (int64 values go as their two's complement u64) */
void pb_field_varint(struct pb_buf *b, uint32_t field, uint64_t v);
/* field @field as length-delimited bytes (strings, embedded messages) */
void pb_field_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n);
/* repeated varint field @field in packed form (one length-delimited run);
 * nothing at all when @n is 0 */
void pb_field_packed(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n);
void pb_buf_free(struct pb_buf *b);

/* ---- profile builder ------------------------------------------------------- */

struct pprof;

/* One line of a location: function and its source line (0: unknown). */
struct pprof_line {
	uint64_t function_id;
	int64_t line;
};

/* A sample label: string (str != NULL) or number. */
struct pprof_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit; /* NULL: none */
};

struct pprof *pprof__new(void);
void pprof__free(struct pprof *p);
/* index of @s in the string table (added at first use; "" is 0) */
int64_t pprof__string(struct pprof *p, const char *s);
/* append a sample type; all must come before the first sample */
int pprof__add_sample_type(struct pprof *p, const char *type, const char *unit);
size_t pprof__nr_sample_types(const struct pprof *p);
void pprof__set_period(struct pprof *p, const char *type, const char *unit, int64_t period);
/* default_sample_type: the type readers show first (unset: the last one) */
void pprof__set_default_type(struct pprof *p, const char *type);
void pprof__set_times(struct pprof *p, int64_t time_nanos, int64_t duration_nanos);
void pprof__add_comment(struct pprof *p, const char *text);
/*
 * The mapping of caller key @key (a file id, a VMA start), created at first
 * use with the given range; later calls only widen memory_limit to cover
 * @addr (pass 0 to leave it). @debug_info: DWARF was read for it (the
 * inline frames are complete wherever lines are). has_functions,
 * has_filenames, has_line_numbers are computed from its locations at write.
 * @return the mapping id (> 0), 0 on allocation failure
 */
uint64_t pprof__mapping(struct pprof *p, uint64_t key, uint64_t start, uint64_t limit,
			uint64_t file_offset, const char *path, const char *build_id, int debug_info,
			uint64_t addr);
/* function id of (name, system_name, filename, start_line); 0: no memory */
uint64_t pprof__function(struct pprof *p, const char *name, const char *system_name,
			 const char *filename, int64_t start_line);
/* id of the location of caller key (@k1, @k2), or 0 when not added yet */
uint64_t pprof__location_find(struct pprof *p, uint64_t k1, uint64_t k2);
/* add the location of key (@k1, @k2): @lines innermost first (several when
 * functions were inlined at @address); @return its id, 0 on no memory */
uint64_t pprof__location_add(struct pprof *p, uint64_t k1, uint64_t k2, uint64_t mapping_id,
			     uint64_t address, const struct pprof_line *lines, size_t nlines);
/* The location of a Python frame (snapshot's and report's alike): no
 * mapping, no address, one line of the function (@name, @file,
 * @start_line), keyed apart from native locations by that function and
 * @line. Its id, 0 on no memory */
uint64_t pprof__py_location(struct pprof *p, const char *name, const char *file,
			    int64_t start_line, uint32_t line);
/*
 * The values of the sample with these locations (leaf first) and labels,
 * created (zeroed) at first use: the caller adds to them. Samples with the
 * same locations and labels are one sample.
 * @return pprof__nr_sample_types() values, or NULL on allocation failure
 */
int64_t *pprof__sample(struct pprof *p, const uint64_t *locs, size_t nlocs,
		       const struct pprof_label *labels, size_t nlabels);
size_t pprof__nr_samples(const struct pprof *p);
/* the serialized (not compressed) Profile message; NULL + ENOMEM */
int pprof__encode(struct pprof *p, struct pb_buf *out);
/* encode and write gzipped to @f: 0, -ENOMEM, -EIO */
int pprof__write(struct pprof *p, FILE *f);

/* ---- trace -> profile (ustack report --format pprof) ---------------------- */

struct report_pprof;
struct report_alloc;

struct report_py;

struct report_pprof_opts {
	struct ustack_trace_reader *r;
	struct ustack_symbolizer *sym; /* opened with USTACK_SYMBOLIZER_NO_DEMANGLE */
	struct ustack_jitsyms *jit;    /* or NULL */
	struct report_py *py;          /* Python frames (report_python.h), or NULL */
	int demangle;                  /* Function.name demangled (system_name never) */
	int lines;                     /* DWARF lines read (no --no-lines) */
	const char *in_path;
	/* --wall: one more sample type, wall/nanoseconds (the default), each
	 * event weighing report_wall_ns() (cli/report_weight.h) */
	int wall;
	/* allocation events (trace format 1.4): which are live at the
	 * report's time (report_alloc.h), and the default sample type
	 * (alloc_space ... inuse_space: --view) */
	const struct report_alloc *alloc;
	const char *alloc_default;
};

struct report_pprof *report_pprof__new(const struct report_pprof_opts *o);
void report_pprof__free(struct report_pprof *rp);
/* count one stitched event of a thread whose name is @comm (the caller's
 * key of the name the thread had then, given back to the callback of
 * report_pprof__write()); 0 or -ENOMEM */
int report_pprof__event(struct report_pprof *rp, const struct ustack_trace_stitched *s,
			uint32_t comm);
/* a LOST record's count (kept as a comment of the profile) */
void report_pprof__lost(struct report_pprof *rp, uint64_t count);
/* build the profile (thread names through @comm_name, from the keys given
 * to report_pprof__event(): each sample keeps the name its thread had at
 * the event, as `folded` does) and write it gzipped to @out: 0, -ENOMEM,
 * -EIO */
int report_pprof__write(struct report_pprof *rp, FILE *out,
			const char *(*comm_name)(void *ctx, uint32_t comm), void *ctx);

/* ---- snapshot -> profile (ustack snapshot --format pprof) ------------------ */

struct snapshot_pprof;

struct snapshot_pprof *snapshot_pprof__new(int pid);
void snapshot_pprof__free(struct snapshot_pprof *sp);
/* one sample for thread @t; @jit_name(ctx, frame) names JIT frames (or
 * NULL); 0 or -ENOMEM */
int snapshot_pprof__thread(struct snapshot_pprof *sp, const struct ustack_snapshot_thread *t,
			   const struct ustack_perfmap_entry *(*jit_name)(void *ctx,
						const struct ustack_snapshot_frame *f),
			   void *ctx);
/* write the profile gzipped to @out: 0, -ENOMEM, -EIO */
int snapshot_pprof__write(struct snapshot_pprof *sp, FILE *out);

#endif
