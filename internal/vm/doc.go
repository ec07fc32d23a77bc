// Package vm runs a command inside a Debian kernel under QEMU, the bench on
// which kinst proves the kernel-function features that the host refuses.
//
// Run packs a static command, its arguments, working directory (its small
// files and testdata/), a filtered environment and any extra files into a cpio
// initramfs whose /init is a static Go binary (see package guestinit). The
// guest's console output is streamed to the caller without carriage returns,
// the command's exit status comes back through a separate serial port, and the
// kernel's own log goes to a third one so that it can be shown when the guest
// panics, hangs or runs out of memory.
//
// Kernels come from Debian's apt index: Fetch downloads the newest
// linux-image-*-cloud-amd64 of a series with apt-get download and unpacks it
// with dpkg-deb -x into a cache folder, installing nothing.
//
// The guest sees these serial ports:
//
//	ttyS0  the command's stdout and stderr, streamed to Config.Stdout
//	ttyS1  the kernel console, kept in a file for failure reports
//	ttyS2  one status line written by /init just before power-off
package vm
