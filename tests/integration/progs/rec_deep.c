// SPDX-License-Identifier: MIT
/*
 * rec_deep wide|many DEPTH: deep stacks, then getppid() x 5 at the bottom.
 *
 *   wide: main -> rec_deep_start -> rec_deep_wide x DEPTH -> rec_deep_leaf
 *         Each rec_deep_wide frame holds a 400-byte local array: with
 *         DEPTH 100 the stack is about 41 KiB deep in about 110 frames,
 *         more than the copy backend's default 16384-byte copy, less than
 *         its largest (--stack-size 65528) and fewer frames than a
 *         recorder keeps (127).
 *   many: main -> rec_deep_start -> rec_deep_many x DEPTH -> rec_deep_leaf
 *         Small frames (32-byte array): with DEPTH 200, more frames than a
 *         recorder keeps, in about 10 KiB.
 */
#include <stdio.h>
#include <string.h>

#include "rec_common.h"

REC_FN void rec_deep_leaf(int n)
{
	rec_marker(n);
	rec_sink++;
}

REC_FN int rec_deep_wide(int left)
{
	volatile char pad[400];

	pad[0] = (char)left;
	pad[sizeof(pad) - 1] = (char)left;
	if (left > 1)
		rec_deep_wide(left - 1);
	else
		rec_deep_leaf(5);
	rec_sink++;
	return pad[0] + pad[sizeof(pad) - 1];
}

REC_FN int rec_deep_many(int left)
{
	volatile char pad[32];

	pad[0] = (char)left;
	pad[sizeof(pad) - 1] = (char)left;
	if (left > 1)
		rec_deep_many(left - 1);
	else
		rec_deep_leaf(5);
	rec_sink++;
	return pad[0] + pad[sizeof(pad) - 1];
}

REC_FN void rec_deep_start(int wide, int depth)
{
	if (wide)
		rec_deep_wide(depth);
	else
		rec_deep_many(depth);
	rec_sink++;
}

int main(int argc, char **argv)
{
	int wide = argc > 1 && !strcmp(argv[1], "wide");
	int depth = rec_arg(argc, argv, 2, 100);

	rec_warm();
	rec_deep_start(wide, depth);
	printf("rec_deep: %s %d\n", wide ? "wide" : "many", depth);
	return 0;
}
