// Package compat names the releases of bpftrace whose language and
// output kinst follows.
//
// kinst speaks bpftrace 0.26.1 by default. Where 0.26.1 changed the
// meaning or the printed form of something bpftrace 0.17 also had, V017
// gives 0.17's behaviour instead, byte for byte, for the scripts and
// tests written against the bpftrace Debian 12 ships. Syntax that only
// one of the two releases has is accepted in both: the mode decides what
// a program means, not which programs parse.
package compat
