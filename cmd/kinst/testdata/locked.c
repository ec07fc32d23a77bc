/*
 * locked has a function whose first instruction has a lock prefix, where
 * the kernel puts no uprobe, beside one it probes: each called 5 times.
 *
 *	locked            call each 5 times
 *	locked sleep MS   sleep MS milliseconds: the kernel looks at a
 *	                  probed instruction only in a file some process maps
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

__attribute__((naked, noinline)) void kinst_locked(long *p)
{
	__asm__("lock incq (%rdi)\n\tret");
}

__attribute__((noinline)) long kinst_plain(long *p)
{
	__asm__ volatile("");
	return ++*p;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "sleep") == 0) {
		long ms = atol(argv[2]);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
		return nanosleep(&ts, NULL) != 0;
	}
	long n = 0;
	for (int i = 0; i < 5; i++) {
		kinst_locked(&n);
		kinst_plain(&n);
	}
	return n != 10;
}
