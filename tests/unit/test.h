/* SPDX-License-Identifier: MIT */
/*
 * A tiny test harness. Each test file defines test functions and a main()
 * that runs them with RUN(fn). Each test prints one line that
 * tests/run-tests.sh counts:
 *   PASS <name>
 *   FAIL <name>: <file>:<line>: <what>
 *   SKIP <name>: <reason>
 * A test fails at its first failed CHECK (the rest of it is not run).
 */
#ifndef USTACK_TEST_H
#define USTACK_TEST_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf test_jmp_;
static int test_failed_, test_skipped_, tests_failed_total_;
static char test_skip_reason_[256];

#define CHECK(cond) do { if (!(cond)) { \
	printf("FAIL %s: %s:%d: CHECK(%s)\n", test_name_, __FILE__, __LINE__, #cond); \
	test_failed_ = 1; longjmp(test_jmp_, 1); } } while (0)

#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) { printf("FAIL %s: %s:%d: %s == %s (%lld != %lld)\n", test_name_, \
		__FILE__, __LINE__, #a, #b, a_, b_); \
	test_failed_ = 1; longjmp(test_jmp_, 1); } } while (0)

#define CHECK_EQ_U64(a, b) do { uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b); \
	if (a_ != b_) { printf("FAIL %s: %s:%d: %s == %s (0x%" PRIx64 " != 0x%" PRIx64 ")\n", \
		test_name_, __FILE__, __LINE__, #a, #b, a_, b_); \
	test_failed_ = 1; longjmp(test_jmp_, 1); } } while (0)

#define CHECK_STR(a, b) do { const char *a_ = (a), *b_ = (b); \
	if (!a_ || !b_ || strcmp(a_, b_)) { printf("FAIL %s: %s:%d: %s == %s (\"%s\" != \"%s\")\n", \
		test_name_, __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	test_failed_ = 1; longjmp(test_jmp_, 1); } } while (0)

/* Skip the current test with a stated reason. */
#define SKIP(...) do { snprintf(test_skip_reason_, sizeof(test_skip_reason_), __VA_ARGS__); \
	test_skipped_ = 1; longjmp(test_jmp_, 1); } while (0)

static const char *test_name_ = "";

#define RUN(fn) do { test_name_ = #fn; test_failed_ = test_skipped_ = 0; \
	if (!setjmp(test_jmp_)) fn(); \
	if (test_skipped_) printf("SKIP %s: %s\n", #fn, test_skip_reason_); \
	else if (test_failed_) tests_failed_total_++; \
	else printf("PASS %s\n", #fn); \
	fflush(stdout); } while (0)

#define TEST_EXIT() return tests_failed_total_ ? 1 : 0

#endif
