// SPDX-License-Identifier: MIT
/* Replays a fuzz target's corpus without libFuzzer: each argument is a file
 * (or a directory of files) fed once to LLVMFuzzerTestOneInput. Built with
 * ASan+UBSan by make check, so a crash or UB in any input fails the test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f) { perror(path); return -1; }
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n > 0 ? n : 1);
	if (!buf || fread(buf, 1, n, f) != (size_t)n) { fclose(f); free(buf); return -1; }
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) { perror(argv[i]); return 1; }
		if (S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *de;
			char path[4096];

			while (d && (de = readdir(d))) {
				if (de->d_name[0] == '.')
					continue;
				snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
				if (run_file(path)) return 1;
				files++;
			}
			if (d) closedir(d);
		} else {
			if (run_file(argv[i])) return 1;
			files++;
		}
	}
	printf("replayed %d inputs\n", files);
	return files ? 0 : 1;
}
