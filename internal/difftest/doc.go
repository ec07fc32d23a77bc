// Package difftest holds kinst's differential tests against bpftrace 0.17:
// a corpus of small deterministic programs in testdata, each run under both
// tools with the same options and parameters, whose standard output must be
// byte-identical once the "Attaching N probes..." line (or its JSON record)
// is removed. A second test loads every program with kinst --dry-run, so a
// machine without bpftrace still proves that the kernel's verifier accepts
// the whole corpus.
//
// A corpus program is a .bt file whose leading comment block says what it
// covers and, optionally, how to run it:
//
//	// lhist with values below, inside and above its range
//	// run: -c "{workload} getppid 7" -f json
//	// args: 5 abc
//	// env: BPFTRACE_STRLEN=16
//
// The first line is the description. "run:" takes the options -c CMD,
// -f text|json and -I DIR, "args:" the positional parameters ($1, $2, ...) and "env:"
// BPFTRACE_* settings for both tools. Words split as a shell splits them,
// with single and double quotes. In option and parameter values, {workload}
// stands for the path of the internal/workload command and {testdata} for
// the corpus folder. Both tools get the same command line: the options,
// "--", the file and the parameters.
//
// Programs must be deterministic under both tools: probes other than BEGIN
// and END filter on cpid, and keyed maps whose entries bpftrace sorts by
// value avoid ties, which 0.17 leaves in the kernel's hash order.
package difftest
