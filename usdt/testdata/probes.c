/*
 * probes.c holds USDT probes for package usdt's tests: one with a
 * semaphore, one without, and one fired from two sites.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short test_gated_semaphore __attribute__((section(".probes")));
unsigned short test_plain_semaphore __attribute__((section(".probes")));
unsigned short test_twice_semaphore __attribute__((section(".probes")));

volatile long test_counter;

int main(int argc, char **argv)
{
	if (test_gated_semaphore)
		STAP_PROBE1(test, gated, argc);
	STAP_PROBE3(test, plain, argc, 5, test_counter);
	STAP_PROBE(test, twice);
	if (argc > 1)
		STAP_PROBE(test, twice);
	return 0;
}
