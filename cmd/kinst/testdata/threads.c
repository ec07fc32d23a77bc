/*
 * threads starts N threads with pthread_create, each joined before the
 * next starts, for tests of uprobes in the C library's thread functions:
 *
 *	threads N
 */
#include <pthread.h>
#include <stdlib.h>

static void *run(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	for (long i = atol(argv[1]); i > 0; i--) {
		pthread_t t;
		if (pthread_create(&t, NULL, run, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 1;
	}
	return 0;
}
