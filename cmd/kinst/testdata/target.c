/*
 * target is the workload of kinst's end-to-end tests: a single-threaded
 * process, with no runtime of its own making system calls, that calls
 * functions for uprobes and makes write(2) calls of chosen sizes for
 * tracepoints.
 *
 *	target add N          kinst_add(i, -2*i) for i = 1..N, summed in
 *	                      the global kinst_sum
 *	target greet WORD...  kinst_greet(WORD) for each WORD
 *	target move N         kinst_move(p, i) for i = 1..N, p two structs in turn
 *	target linger MS WORD kinst_greet(WORD), then sleep MS milliseconds, so
 *	                      that the process is alive when its symbols are read
 *	target later MS WORD  sleep MS milliseconds, then kinst_greet(WORD), so
 *	                      that probes attached by -p meanwhile see the call
 *	target stack N        kinst_stack(i, ..., 8*i) of eight arguments for
 *	                      i = 1..N: the last two go on the stack
 *	target writes A B     write(2) of i bytes to /dev/null for i = A..B
 *	target write SIZE...  write(2) of each SIZE bytes to /dev/null
 *	target sleep MS       sleep MS milliseconds
 *	target touch N        write to N fresh pages, between kinst_phase(1)
 *	                      and kinst_phase(0): N page faults and no other
 *	target watch N        write kinst_watched N times, then read it N times
 *	target watcharg N     kinst_watch(&a, &b), kinst_fence(&c), then write
 *	                      a N times and b 2N times
 *	target unwatch N      kinst_watch(&a, &b), write a once,
 *	                      kinst_watch(&b, &b), then write a N-1 times more
 *	target watchmany N    for j = 0..5: kinst_watch(&v[j], &b), then
 *	                      write v[j] N times
 *	target watchloop N    for ever: kinst_watch(&a, &b), write a N times,
 *	                      sleep 10 milliseconds
 *	target usdt N         fire the USDT probes kinst:tick, kinst:small,
 *	                      kinst:mem, kinst:twice (two sites), other:tick
 *	                      and, when enabled, kinst:gated for i = 1..N
 *	target usdtloop       fire them for i = 1 every millisecond, for ever
 *	target getppid N      N getppid(2) calls
 *	target int80 N        one getppid(2) call, then N through int $0x80, the
 *	                      32-bit system call entry, where getppid's number
 *	                      (64) is semget's in x86-64's table
 *
 * It is built static, so that the QEMU guests can run it too:
 *	gcc -O1 -g -static -o kinst-target target.c
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/* kinst_sum is a global whose value a debugger reading a core can check. */
long kinst_sum;

/* A struct argument for DWARF tests: kinst_move(p, dx) for move N. */
struct kinst_point {
	int x, y;
	char name[8];
	unsigned int flags : 3, level : 5;
	struct kinst_point *next;
};

__attribute__((noinline)) int kinst_move(struct kinst_point *p, int dx)
{
	__asm__ volatile("");
	p->x += dx;
	return p->x;
}

/* kinst_phase marks the part of a run a probe should count. */
__attribute__((noinline)) void kinst_phase(int on)
{
	__asm__ volatile("" : : "r"(on));
}

/*
 * touch faults in n fresh anonymous pages, one fault each: huge pages are
 * refused, and everything else the loop uses is touched before phase 1.
 */
static int touch(long n)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("target: mmap");
		return 1;
	}
	madvise(p, (size_t)(n * page), MADV_NOHUGEPAGE);
	kinst_phase(0);
	kinst_phase(1);
	for (long i = 0; i < n; i++)
		p[i * page] = 1;
	kinst_phase(0);
	return 0;
}

/* kinst_watched is the variable watchpoint tests watch. */
volatile long kinst_watched;

static int watch(long n)
{
	long sum = 0;
	for (long i = 1; i <= n; i++)
		kinst_watched = i;
	for (long i = 1; i <= n; i++)
		sum += kinst_watched;
	return sum == n * n ? 0 : 1;
}

/*
 * kinst_watch hands watchpoint:kinst_watch+argN probes the addresses to
 * watch; kinst_fence hands another, never written: a synchronous
 * watchpoint on it holds the process until the records sent before are
 * handled.
 */
__attribute__((noinline)) void kinst_watch(volatile long *a, volatile int *b)
{
	__asm__ volatile("" : : "r"(a), "r"(b));
}

__attribute__((noinline)) void kinst_fence(volatile long *c)
{
	__asm__ volatile("" : : "r"(c));
}

static int watcharg(long n)
{
	static volatile long a, c;
	static volatile int b;
	kinst_watch(&a, &b);
	kinst_fence(&c);
	for (long i = 1; i <= n; i++) {
		a = i;
		b = (int)i;
		b = -(int)i;
	}
	return a == n && b == -n ? 0 : 1;
}

static int unwatch(long n)
{
	static volatile long a;
	static volatile int b;
	kinst_watch(&a, &b);
	a = 1;
	kinst_watch((volatile long *)&b, &b);
	for (long i = 2; i <= n; i++)
		a = i;
	return a == n ? 0 : 1;
}

static int watchmany(long n)
{
	static volatile long v[6];
	static volatile int b;
	for (int j = 0; j < 6; j++) {
		kinst_watch(&v[j], &b);
		for (long i = 1; i <= n; i++)
			v[j] = i;
	}
	return v[5] == n ? 0 : 1;
}

static int watchloop(long n)
{
	static volatile long a;
	static volatile int b;
	struct timespec ts = {0, 10000000};
	for (;;) {
		kinst_watch(&a, &b);
		for (long i = 1; i <= n; i++)
			a = i;
		if (nanosleep(&ts, NULL) != 0)
			return 1;
	}
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

/*
 * The USDT probes' semaphores: with _SDT_HAS_SEMAPHORES every probe has
 * one, which the kernel raises while a uprobe with a reference counter
 * is attached; kinst:gated fires only then.
 */
unsigned short kinst_tick_semaphore __attribute__((section(".probes")));
unsigned short kinst_small_semaphore __attribute__((section(".probes")));
unsigned short kinst_mem_semaphore __attribute__((section(".probes")));
unsigned short kinst_twice_semaphore __attribute__((section(".probes")));
unsigned short kinst_gated_semaphore __attribute__((section(".probes")));
unsigned short other_tick_semaphore __attribute__((section(".probes")));

volatile long kinst_total;

/*
 * usdt passes the probes' arguments in registers, as constants, in
 * stack memory and in a global, which the notes record as operands such
 * as -8@%rdx, -4@$-7, -8@8(%rsp) and -8@kinst_total(%rip).
 */
static void usdt(long n)
{
	for (long i = 1; i <= n; i++) {
		kinst_total += i;
		int neg = -(int)i;
		STAP_PROBE3(kinst, tick, i, neg, kinst_total);
		signed char c = (signed char)-i;
		unsigned short s = (unsigned short)(60000 + i);
		STAP_PROBE3(kinst, small, c, s, -7);
		volatile long v = 3 * i;
		volatile int w = -(int)i;
		STAP_PROBE2(kinst, mem, v, w);
		STAP_PROBE1(kinst, twice, i);
		STAP_PROBE1(kinst, twice, (short)(-2 * i));
		if (kinst_gated_semaphore)
			STAP_PROBE1(kinst, gated, i);
		STAP_PROBE(other, tick);
	}
}

/* getppid calls, as the usage above says; each must give the first's
 * answer, or the status is 1. A kernel that runs no 32-bit system calls
 * kills the process with SIGSEGV at the first int $0x80. */
static int getppids(long n, int compat)
{
	long want = syscall(SYS_getppid);
	for (long i = compat ? 0 : 1; i < n; i++) {
		long got = compat ? 64 : SYS_getppid;
		/* int $0x80 clobbers r8-r11 in a 64-bit process. */
		if (compat)
			__asm__ volatile("int $0x80" : "+a"(got) : : "r8", "r9", "r10", "r11", "memory");
		else
			got = syscall(got);
		if (got != want)
			return 1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: target add N | stack N | move N | greet WORD... | linger MS WORD | later MS WORD | writes A B | write SIZE... | sleep MS | touch N | watch N | watcharg N | unwatch N | watchmany N | watchloop N | usdt N | usdtloop | getppid N | int80 N\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	if (strcmp(cmd, "add") == 0 && argc == 3) {
		long n = atol(argv[2]);
		for (long i = 1; i <= n; i++)
			kinst_sum += kinst_add(i, -2 * i);
		return kinst_sum == -n * (n + 1) / 2 ? 0 : 1;
	}
	if (strcmp(cmd, "stack") == 0 && argc == 3) {
		long n = atol(argv[2]), sum = 0;
		for (long i = 1; i <= n; i++)
			sum += kinst_stack(i, 2 * i, 3 * i, 4 * i, 5 * i, 6 * i, 7 * i, 8 * i);
		return sum == 36 * n * (n + 1) / 2 ? 0 : 1;
	}
	if (strcmp(cmd, "move") == 0 && argc == 3) {
		struct kinst_point a = {0, 7, "alpha", 5, 17, NULL}, b = {100, -1, "beta", 2, 31, &a};
		for (long i = 1; i <= atol(argv[2]); i++)
			kinst_move(i % 2 ? &a : &b, (int)i);
		return 0;
	}
	if (strcmp(cmd, "linger") == 0 && argc == 4) {
		long ms = atol(argv[2]);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
		kinst_greet(argv[3]);
		return nanosleep(&ts, NULL) == 0 ? 0 : 1;
	}
	if (strcmp(cmd, "later") == 0 && argc == 4) {
		long ms = atol(argv[2]);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
		if (nanosleep(&ts, NULL) != 0)
			return 1;
		kinst_greet(argv[3]);
		return 0;
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
	if (strcmp(cmd, "touch") == 0 && argc == 3)
		return touch(atol(argv[2]));
	/* One call of usdt, so that the probes' operands stay as they are. */
	int loop = strcmp(cmd, "usdtloop") == 0 && argc == 2;
	if (loop || (strcmp(cmd, "usdt") == 0 && argc == 3)) {
		struct timespec ts = {0, 1000000};
		long n = loop ? 1 : atol(argv[2]);
		do
			usdt(n);
		while (loop && nanosleep(&ts, NULL) == 0);
		return loop;
	}
	if (strcmp(cmd, "watch") == 0 && argc == 3)
		return watch(atol(argv[2]));
	if (strcmp(cmd, "watcharg") == 0 && argc == 3)
		return watcharg(atol(argv[2]));
	if (strcmp(cmd, "unwatch") == 0 && argc == 3)
		return unwatch(atol(argv[2]));
	if (strcmp(cmd, "watchmany") == 0 && argc == 3)
		return watchmany(atol(argv[2]));
	if (strcmp(cmd, "watchloop") == 0 && argc == 3)
		return watchloop(atol(argv[2]));
	if ((strcmp(cmd, "getppid") == 0 || strcmp(cmd, "int80") == 0) && argc == 3)
		return getppids(atol(argv[2]), cmd[0] == 'i');
	return usage();
}
