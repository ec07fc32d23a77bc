// Vmrun runs a command inside a Debian kernel under QEMU and returns its
// output and exit code.
//
// Usage:
//
//	vmrun [flags] [--] COMMAND [ARG...]
//	vmrun kernels [SERIES...]
//
// For example, with a kinst binary and Debian's static busybox:
//
//	vmrun --kernel 6.1 --file ./kinst --file /bin/busybox -- \
//		kinst -e 'kprobe:vfs_read { @ = count(); }' -c 'busybox cat /etc/hostname'
//
// It also serves as the runner of go test, which appends the test binary and
// its flags:
//
//	go test -exec "$PWD/bin/vmrun --kernel 6.12 --file $PWD/bin/kinst --" ./...
//
// Paths given to --file are resolved against the working directory, which go
// test sets to each package's folder, so give them as absolute paths there.
//
// The same static binary is the guest's /init: started as PID 1 it runs
// package guestinit instead of the command line.
//
// Run vmrun -h for the flags and exit codes.
package main
