// SPDX-License-Identifier: MIT
/*
 * Where the probe events attach (rec.h, rec_probes_resolve). Placeholder
 * of the contract commit: probe events are refused until the resolver
 * lands (src/probe/).
 */
#include <errno.h>
#include <stdlib.h>

#include "record/core.h"
#include "record/rec.h"

int rec_probes_resolve(struct rec *r)
{
	for (int i = 0; i < r->nr_events; i++) {
		enum rec_attach a = r->events[i].kind->attach;

		if (a == REC_ATTACH_UPROBE || a == REC_ATTACH_ALLOC) {
			rec_set_err(r, "event %s: probes are not resolved yet%s",
				    r->events[i].perf.name, "");
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

void rec_probes_free(struct rec *r)
{
	free(r->probes.v);
	r->probes.v = NULL;
	r->probes.nr = 0;
}
