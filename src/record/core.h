/* SPDX-License-Identifier: MIT */
/*
 * The recorder's core, split in two files: setup.c (everything up to the
 * events running) and recorder.c (the public ustack_recorder API, the
 * poll loop, the end). Nothing below the core includes this.
 */
#ifndef USTACK_RECORD_CORE_H
#define USTACK_RECORD_CORE_H

#include <stdio.h>

#include "record/rec.h"

/* The caller's error buffer gets the message (@fmt takes two strings). */
static inline void rec_set_err(struct rec *r, const char *fmt, const char *a, const char *b)
{
	if (r->o->errbuf && r->o->errbuf_sz)
		snprintf(r->o->errbuf, r->o->errbuf_sz, fmt, a, b);
}

/* Everything up to the events running: 0, or -errno with the message set. */
int rec_setup(struct rec *r);

/* The command is what is recorded (-- CMD alone), not only the timer of
 * a recording of -a or of pids. */
static inline int rec_cmd_traced(const struct ustack_record_opts *o)
{
	return o->argv && o->argv[0] && !o->system_wide && o->nr_pids <= 0;
}

#endif
