// Package guestinit is the /init of a bench guest: the code a static Go
// binary runs when the kernel starts it as PID 1 from a vm initramfs.
//
// Main mounts the kernel file systems before anything reads them, clears
// output post-processing on the console so that lines end in a bare newline,
// makes busybox's applets usable by name when busybox was passed, runs the
// command described by the vm.Spec as a child, writes its vm.Status to the
// status port and powers the machine off. The command runs as a child rather
// than by exec so that libraries which inspect mounts when they start see
// the mounted file systems.
package guestinit
