/* SPDX-License-Identifier: MIT */
/*
 * Where the commands that read traces (report, flamegraph) look for files:
 * --symfs, --buildid-dir, --no-buildid-cache, the trace's FILE_CONTENT
 * records, and what --stats / symbolize -v say about each file (the image's
 * place, the files refused and why).
 */
#ifndef USTACK_CLI_REPORT_LOOKUP_H
#define USTACK_CLI_REPORT_LOOKUP_H

#include <stdint.h>
#include <stdio.h>

#include <ustack/symbolize.h>
#include <ustack/trace.h>

#define REPORT_BUILDID_DIRS_MAX 16

struct report_lookup {
	const char *symfs;
	int no_buildid_cache;
	const char *given[REPORT_BUILDID_DIRS_MAX]; /* --buildid-dir, in order */
	int ngiven;
	const char *archive_dir; /* the trace's extracted archive (report_archive.h), or NULL */
	/* what the symbolizer gets: NULL-terminated, with what to call each */
	const char *dirs[REPORT_BUILDID_DIRS_MAX + 2];
	const char *labels[REPORT_BUILDID_DIRS_MAX + 1];
	int ndirs;
	uint64_t content_late, content_conflict; /* FILE_CONTENT records not applied */
};

/**
 * Parse argv[*i] when it is one of the options above (moving *i past a
 * value). @cmd names the command in errors.
 * @return 1 taken, 0 not one of them, -1 bad (said on stderr)
 */
int report_lookup__option(struct report_lookup *lk, const char *cmd, int argc, char **argv,
			  int *i);

/** Append the options given to argv (for a command run through report);
 *  room for 2 * REPORT_BUILDID_DIRS_MAX + 3. @return the new argc */
int report_lookup__argv(const struct report_lookup *lk, char **argv, int argc);

/** Fill @so's buildid_dirs, symfs and flags from the options. @return 0,
 *  -1 (said on stderr) */
int report_lookup__apply(struct report_lookup *lk, struct ustack_symbolizer_opts *so,
			 const char *trace);

/** A FILE_CONTENT record: the symbolizer names that file id from that
 *  content only. */
void report_lookup__content(struct report_lookup *lk, struct ustack_symbolizer *sym,
			    const struct ustack_trace_file_content *c);

/**
 * Read @trace's FILE_CONTENT records (and the FILE_MAP records they name)
 * before its events: the recorder writes a file's content record once its
 * capture has hashed it, off the event path, so usually after the file's
 * first frames. Without this, those frames would be named from the first
 * file the lookup finds with the build ID alone (a build ID any process can
 * forge), not from the content that was really mapped.
 * @return 0 (a damaged trace included: the main pass says so), -ENOMEM,
 *         -errno of opening @trace
 */
int report_lookup__preload(struct report_lookup *lk, struct ustack_symbolizer *sym,
			   const char *trace);

/** After the records: one warning for content records that came too late
 *  or contradicted each other. */
void report_lookup__finish(const struct report_lookup *lk);

/**
 * The lines of report --stats for one file id: where its image came from,
 * then each file found for it and not used, and why:
 *   image: file ID PATH: PLACE (FILE)
 *   refused: file ID PATH: FILE (PLACE): build ID differs|content differs
 * With @rec_path NULL (symbolize -v, one file), the same without
 * "file ID PATH:": "image: PLACE FILE", "refused: FILE (PLACE): ...".
 * PLACE: ustack_image_source_name(), or the label of a given directory
 * ("archive", "buildid-dir DIR").
 */
void report_lookup__stats(FILE *out, const struct report_lookup *lk,
			  struct ustack_symbolizer *sym, uint64_t file_id, const char *rec_path);

/** Help lines of the options. */
extern const char report_lookup_usage[];

#endif
