/*
 * inlined fires the USDT probe kinst:inlined from code the compiler
 * inlined twice over, as bpftrace's usdt_inlined test program does:
 * probe is inlined into wrapper_inlined, which is inlined into wrapper,
 * which loop calls every 10 milliseconds, for ever. The tests know the
 * lines below by number.
 *	gcc -O2 -g -static -o inlined inlined.c
 */
#include <sys/sdt.h>
#include <time.h>

__attribute__((always_inline)) static inline void probe(int n)
{
	volatile int v = n;
	STAP_PROBE1(kinst, inlined, v);
}

__attribute__((always_inline)) static inline void wrapper_inlined(void)
{
	probe(100);
}

__attribute__((noinline)) void wrapper(void)
{
	wrapper_inlined();
	__asm__ volatile("");
}

/* forever keeps the compiler from seeing that loop never returns. */
volatile int forever = 1;

__attribute__((noinline)) void loop(void)
{
	struct timespec pause = {0, 10000000};
	while (forever) {
		wrapper();
		nanosleep(&pause, NULL);
	}
}

int main(void)
{
	loop();
	return 0;
}
