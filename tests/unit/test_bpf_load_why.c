// SPDX-License-Identifier: MIT
/* src/bpfload/bpf_backend.c: the one line that says why the program did
 * not load. EACCES means "no permission" only without CAP_BPF/CAP_SYS_ADMIN;
 * with them it is the verifier's rejection, which must not send a root
 * user looking for capabilities he has. */
#include <errno.h>
#include <string.h>

#include "bpfload/bpf_backend.h"
#include "test.h"

static char err[600];

static void why(int ret, int btf, int priv, const char *msg)
{
	memset(err, 0, sizeof(err));
	ustack_bpf__load_why(ret, btf, priv, msg, err, sizeof(err));
}

static void test_permission(void)
{
	why(-EPERM, 1, 0, NULL);
	CHECK(strstr(err, "not permitted"));
	why(-EPERM, 1, 1, "libbpf: failed");
	CHECK(strstr(err, "not permitted")); /* EPERM is permission whoever asks */
	why(-EACCES, 1, 0, "libbpf: prog load failed");
	CHECK(strstr(err, "not permitted"));
	CHECK(!strstr(err, "verifier"));
}

static void test_verifier(void)
{
	why(-EACCES, 1, 1, "libbpf: failed to load program 'ustack_tp'");
	CHECK(strstr(err, "verifier rejected"));
	CHECK(strstr(err, "-v"));
	CHECK(strstr(err, "failed to load program 'ustack_tp'"));
	CHECK(!strstr(err, "not permitted"));
	CHECK(!strstr(err, "need root"));
	why(-EACCES, 1, 1, NULL);
	CHECK(strstr(err, "verifier rejected"));
	CHECK(err[strlen(err) - 1] == ')'); /* no ": " with nothing after it */
}

static void test_others(void)
{
	why(-EACCES, 0, 1, NULL);
	CHECK(strstr(err, "no BTF"));
	why(-E2BIG, 1, 1, "libbpf: too big failed");
	CHECK(strstr(err, "rejected the program (Argument list too long): libbpf: too big"));
	why(-ENOENT, 1, 1, "");
	CHECK(strstr(err, "loading the program failed: No such file or directory"));
	CHECK(err[strlen(err) - 1] == 'y');
	/* a short buffer is cut, never overrun */
	memset(err, 'x', sizeof(err));
	ustack_bpf__load_why(-EACCES, 1, 1, "m", err, 8);
	CHECK_EQ(strlen(err), 7);
	CHECK(err[9] == 'x');
}

int main(void)
{
	RUN(test_permission);
	RUN(test_verifier);
	RUN(test_others);
	return tests_failed_total_ ? 1 : 0;
}
