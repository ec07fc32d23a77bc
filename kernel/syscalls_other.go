//go:build !amd64

package kernel

// syscallNumbers is empty where kinst has no table of the architecture's
// system call numbers.
var syscallNumbers map[string]int
