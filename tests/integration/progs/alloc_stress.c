// SPDX-License-Identifier: MIT
/*
 * libustack-alloc.so under stress (tests/integration/alloc.sh, case
 * stress): THREADS threads allocate with every function of the malloc
 * family, fill each block with a pattern, hand half of them to the next
 * thread through a ring to free (a free in another thread than the
 * allocation), grow blocks with realloc and check the pattern survived;
 * one thread forks now and then, and the child allocates and exits with
 * _exit. Exits 0 and prints "ok CALLS" when every check held; any broken
 * block or failed allocation is a message and status 1.
 * usage: alloc_stress THREADS ROUNDS
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RING 256
static int nthreads, rounds;
static atomic_long calls;
static atomic_int bad;

struct ring {
	pthread_mutex_t mu;
	void *v[RING];
	size_t n[RING];
	int nr;
} rings[64];

static void fill(unsigned char *p, size_t n, unsigned char seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static int intact(const unsigned char *p, size_t n, unsigned char seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7))
			return 0;
	return 1;
}

static void *one_alloc(unsigned k, size_t n)
{
	void *p = NULL;

	switch (k % 8) {
	case 0: p = malloc(n); break;
	case 1: p = calloc(1, n); break;
	case 2: p = realloc(NULL, n); break;
	case 3: if (posix_memalign(&p, 64, n)) p = NULL; break;
	case 4: p = aligned_alloc(32, (n + 31) & ~(size_t)31); break;
	case 5: p = memalign(128, n); break;
	case 6: p = valloc(n); break;
	default: p = reallocarray(NULL, 1, n); break;
	}
	atomic_fetch_add(&calls, 1);
	return p;
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct ring *mine = &rings[id], *next = &rings[(id + 1) % nthreads];
	unsigned seed = (unsigned)id * 7919u + 1;

	for (int r = 0; r < rounds; r++) {
		size_t n = 16 + (rand_r(&seed) % 3000);
		unsigned char *p = one_alloc(rand_r(&seed), n);

		if (!p) {
			fprintf(stderr, "allocation of %zu failed\n", n);
			atomic_store(&bad, 1);
			return NULL;
		}
		fill(p, n, (unsigned char)r);
		if (r % 5 == 0) { /* grow it: the old bytes kept */
			unsigned char *q = realloc(p, n * 2);

			atomic_fetch_add(&calls, 1);
			if (!q || !intact(q, n, (unsigned char)r)) {
				fprintf(stderr, "realloc lost the block's bytes\n");
				atomic_store(&bad, 1);
				return NULL;
			}
			p = q;
		}
		if (r % 2) { /* to the next thread, which frees it */
			pthread_mutex_lock(&next->mu);
			if (next->nr < RING) {
				next->v[next->nr] = p;
				next->n[next->nr++] = n;
				p = NULL;
			}
			pthread_mutex_unlock(&next->mu);
		}
		free(p);
		pthread_mutex_lock(&mine->mu);
		while (mine->nr) {
			mine->nr--;
			free(mine->v[mine->nr]);
		}
		pthread_mutex_unlock(&mine->mu);
		if (id == 0 && r % 500 == 250) {
			pid_t c = fork();
			int st;

			if (c == 0) {
				void *x = malloc(100);

				free(x);
				_exit(x ? 0 : 1);
			}
			if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "forked child failed\n");
				atomic_store(&bad, 1);
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[64];

	nthreads = argc > 1 ? atoi(argv[1]) : 4;
	rounds = argc > 2 ? atoi(argv[2]) : 20000;
	if (nthreads < 1 || nthreads > 64)
		return 2;
	for (int i = 0; i < nthreads; i++)
		pthread_mutex_init(&rings[i].mu, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < nthreads; i++)
		while (rings[i].nr)
			free(rings[i].v[--rings[i].nr]);
	if (atomic_load(&bad))
		return 1;
	printf("ok %ld\n", atomic_load(&calls));
	return 0;
}
