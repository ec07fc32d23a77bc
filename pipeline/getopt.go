package pipeline

import "strings"

// splitOptions separates the program's arguments that start with "--",
// its named options for getopt (bpftrace 0.26), from its positional
// parameters; bpftrace 0.17 had no named options.
func splitOptions(args []string) (params, named []string) {
	for _, a := range args {
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			named = append(named, a)
		} else {
			params = append(params, a)
		}
	}
	return params, named
}
