// Command target is a process for elfsym's tests to inspect: it prints its
// pid and the address of its function leaf, then waits until its standard
// input closes.
package main

import (
	"fmt"
	"io"
	"os"
	"reflect"
)

//go:noinline
func leaf(n int) int { return n*7 + 3 }

func main() {
	fmt.Printf("%d %#x %d\n", os.Getpid(), reflect.ValueOf(leaf).Pointer(), leaf(1))
	io.Copy(io.Discard, os.Stdin)
}
