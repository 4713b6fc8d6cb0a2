/* The host process of container_names.sh's forged build-ID case: it spends
 * its time in the host libc (getppid, an exported function `nm -D` names),
 * while a container process maps a library that claims libc's build ID.
 * Usage: ct_libc_loop SECONDS; prints "ready PID". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile long ct_loop_sink;

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 5);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (time(NULL) < end)
		for (int i = 0; i < 10000; i++)
			ct_loop_sink += getppid();
	return 0;
}
