// throw throws and catches N exceptions, which libstdc++ marks with its
// USDT probes libstdcxx:throw and libstdcxx:catch.
#include <cstdlib>

int main(int argc, char **argv)
{
	long n = argc > 1 ? std::atol(argv[1]) : 0, caught = 0;
	for (long i = 0; i < n; i++) {
		try {
			throw i;
		} catch (long v) {
			caught += v == i;
		}
	}
	return caught == n ? 0 : 1;
}
