// SPDX-License-Identifier: MIT
/* ustack_version() against the header's three numbers: the library and the
 * headers it was built with must agree (tests/integration/version.sh checks
 * the Makefile, the CLI and the trace header against the same numbers). */
#include <stdio.h>

#include <ustack/ustack.h>

#include "test.h"

static void test_version_matches_header(void)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", USTACK_VERSION_MAJOR, USTACK_VERSION_MINOR,
		 USTACK_VERSION_PATCH);
	CHECK_STR(ustack_version(), want);
	CHECK_STR(USTACK_VERSION_STRING, want);
}

int main(void)
{
	RUN(test_version_matches_header);
	TEST_EXIT();
}
