/*
 * target is the workload of kinst's end-to-end tests: a single-threaded
 * process, with no runtime of its own making system calls, that calls
 * functions for uprobes and makes write(2) calls of chosen sizes for
 * tracepoints.
 *
 *	target add N          kinst_add(i, -2*i) for i = 1..N
 *	target greet WORD...  kinst_greet(WORD) for each WORD
 *	target linger MS WORD kinst_greet(WORD), then sleep MS milliseconds, so
 *	                      that the process is alive when its symbols are read
 *	target stack N        kinst_stack(i, ..., 8*i) of eight arguments for
 *	                      i = 1..N: the last two go on the stack
 *	target writes A B     write(2) of i bytes to /dev/null for i = A..B
 *	target write SIZE...  write(2) of each SIZE bytes to /dev/null
 *	target sleep MS       sleep MS milliseconds
 *
 * It is built static, so that the QEMU guests can run it too:
 *	gcc -O1 -g -static -o kinst-target target.c
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The empty asm keeps the compiler from folding the calls away. */
__attribute__((noinline)) long kinst_add(long a, long b)
{
	__asm__ volatile("");
	return a + b;
}

__attribute__((noinline)) int kinst_greet(const char *word)
{
	__asm__ volatile("");
	return (int)strlen(word);
}

/* Past six arguments, x86-64 passes them on the stack: g and h. */
__attribute__((noinline)) long kinst_stack(long a, long b, long c, long d, long e, long f, long g, long h)
{
	__asm__ volatile("");
	return a + b + c + d + e + f + g + h;
}

static char buf[1 << 16];

/* write_size writes size bytes to fd and returns 0, or 1 on failure. */
static int write_size(int fd, long size)
{
	if (size < 0 || size > (long)sizeof buf) {
		fprintf(stderr, "target: size %ld out of range\n", size);
		return 1;
	}
	if (write(fd, buf, (size_t)size) != size) {
		perror("target: write");
		return 1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: target add N | stack N | greet WORD... | linger MS WORD | writes A B | write SIZE... | sleep MS\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	if (strcmp(cmd, "add") == 0 && argc == 3) {
		long n = atol(argv[2]), sum = 0;
		for (long i = 1; i <= n; i++)
			sum += kinst_add(i, -2 * i);
		return sum == -n * (n + 1) / 2 ? 0 : 1;
	}
	if (strcmp(cmd, "stack") == 0 && argc == 3) {
		long n = atol(argv[2]), sum = 0;
		for (long i = 1; i <= n; i++)
			sum += kinst_stack(i, 2 * i, 3 * i, 4 * i, 5 * i, 6 * i, 7 * i, 8 * i);
		return sum == 36 * n * (n + 1) / 2 ? 0 : 1;
	}
	if (strcmp(cmd, "linger") == 0 && argc == 4) {
		long ms = atol(argv[2]);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
		kinst_greet(argv[3]);
		return nanosleep(&ts, NULL) == 0 ? 0 : 1;
	}
	if (strcmp(cmd, "greet") == 0) {
		for (int i = 2; i < argc; i++)
			kinst_greet(argv[i]);
		return 0;
	}
	int range = strcmp(cmd, "writes") == 0 && argc == 4;
	if (range || strcmp(cmd, "write") == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd < 0) {
			perror("target: /dev/null");
			return 1;
		}
		if (range) {
			for (long i = atol(argv[2]), end = atol(argv[3]); i <= end; i++)
				if (write_size(fd, i))
					return 1;
			return 0;
		}
		for (int i = 2; i < argc; i++)
			if (write_size(fd, atol(argv[i])))
				return 1;
		return 0;
	}
	if (strcmp(cmd, "sleep") == 0 && argc == 3) {
		long ms = atol(argv[2]);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
		return nanosleep(&ts, NULL) == 0 ? 0 : 1;
	}
	return usage();
}
