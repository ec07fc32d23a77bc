// Package cconst knows the values of the C constants tools compare
// kernel values with (AF_INET, O_RDONLY, SIGKILL, EPERM, TASK_RUNNING,
// …), for machines without kernel or libc headers.
//
// Most come from a table generated from Debian's libc6-dev and
// linux-libc-dev headers by gen.go ("go generate"), kept in the
// repository so that kinst needs no headers where it runs; the rest are
// values internal to the kernel that no header exports, listed in
// kernel.go with where each is defined. The checker asks here last,
// after the program's macros and the kernel's BTF enumerators.
package cconst

//go:generate go run gen.go
