package check

import (
	"errors"
	"testing"

	"kinst.dev/kinst/syntax"
)

func TestFunctionTypes(t *testing.T) {
	tests := []struct {
		src  string
		want string // @x's value type
	}{
		{`BEGIN { @x = strftime("%H", nsecs) }`, "timestamp"},
		{`BEGIN { @x = strerror(2) }`, "strerror"},
		{`BEGIN { @x = macaddr(0) }`, "macaddr"},
		{`BEGIN { @x = cgroup_path(cgroup) }`, "cgroup_path"},
		{`BEGIN { @x = cgroup_path(cgroup, "unified") }`, "cgroup_path"},
		{`BEGIN { @x = pton("1.2.3.4") }`, "uint8[4]"},
		{`BEGIN { @x = pton("::1") }`, "uint8[16]"},
		{`BEGIN { @x = strcontains(comm, "a") }`, "int64"},
		{`BEGIN { @x = bswap((int16)1) }`, "uint16"},
		{`BEGIN { @x = bswap(1) }`, "uint64"},
		{`kprobe:f { @x = sarg0 }`, "int64"},
		{`uprobe:/bin/sh:main { @x = sarg12 }`, "int64"},
		{`BEGIN { @x = str($1) }`, "string[3]"},
		{`BEGIN { @x = str(($1), 1) }`, "string[2]"},
		{`fentry:ip_output { @x = skboutput("a.pcap", args->skb, args->skb->len, 14) }`, "uint32"},
		{`kretfunc:ip_output { $s = args->skb; @x = skboutput("a.pcap", $s, 100, 0) }`, "uint32"},
	}
	for _, tt := range tests {
		wantValueOfX(t, tt.src, &Config{Params: []string{"42"}, StrLen: 64}, tt.want)
	}
}

func TestFunctionConstants(t *testing.T) {
	tests := []struct {
		expr string
		want uint64
	}{
		{"bswap((uint16)0x1122)", 0x2211},
		{"bswap((uint32)1)", 1 << 24},
		{"bswap((uint8)7)", 7},
		{"bswap(-2)", 0xfeffffffffffffff},
	}
	for _, tt := range tests {
		prog, err := checkSrc(t, "BEGIN { @x = "+tt.expr+" }", nil)
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		p := prog.Probes[0]
		v, ok := p.Consts[p.Syntax.Body.Stmts[0].(*syntax.AssignStmt).Rhs]
		if !ok || v.Int != tt.want {
			t.Errorf("%s = %#x (constant %v), want %#x", tt.expr, v.Int, ok, tt.want)
		}
	}
}

func TestFunctionErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`BEGIN { @x = strftime(1, 2) }`, "t:1:23: strftime() format must be a constant string"},
		{`BEGIN { @x = strftime("%H", "a") }`, "t:1:29: strftime() takes a timestamp in nanoseconds since boot, not string[2]"},
		{`BEGIN { @x = strerror("a") }`, "t:1:23: strerror() takes an error number, not string[2]"},
		{`BEGIN { @x = macaddr("abcdef") }`, "t:1:22: macaddr() reads 6 bytes of memory; a string literal has no address"},
		{`BEGIN { @x = macaddr(pton("1.2.3.4")) }`, "t:1:22: macaddr() takes a 6-byte array or an address, not uint8[4]"},
		{`BEGIN { @x = cgroup_path(1, comm) }`, "t:1:29: cgroup_path() filter must be a constant string"},
		{`BEGIN { @x = cgroupid("/nonexistent") }`, "t:1:23: cgroupid(): cgroup id of /nonexistent: no such file or directory"},
		{`BEGIN { @x = pton("1.2.3") }`, `t:1:19: pton(): "1.2.3" is not an IPv4 or IPv6 address`},
		{`BEGIN { @x = strcontains(1, "a") }`, "t:1:14: strcontains() looks for a string in a string, not string[2] in int64"},
		{`BEGIN { @x = bswap("a") }`, "t:1:20: bswap() takes an integer, not string[2]"},
		{`BEGIN { @x = path(0) }`, "t:1:14: path() is only available in fentry, fexit, iter probes: the kernel lets only those call bpf_d_path"},
		{`BEGIN { @x = sarg0 }`, "t:1:14: sarg0 is only available in kprobe and uprobe probes: it reads the stack at the function's entry"},
		{`kretprobe:f { @x = sarg1 }`, "t:1:20: sarg1 is only available in kprobe and uprobe probes: it reads the stack at the function's entry"},
		{`BEGIN { @x = uaddr("x") }`, "t:1:14: uaddr() is only available in uprobe, uretprobe, usdt probes: it looks in the probe's binary"},
		{`uprobe:/bin/sh:main { @x = uaddr(comm) }`, "t:1:34: uaddr() symbol must be a constant string"},
		{`BEGIN { @x = sarg }`, "t:1:14: unknown identifier sarg (did you mean sarg0?)"},
		{`kprobe:f { skboutput("a", arg0, 1, 0) }`, "t:1:12: skboutput() is only available in fentry and fexit probes (kfunc, kretfunc): the kernel lets only those call bpf_skb_output"},
		{`fentry:f { skboutput(comm, args->skb, 1, 0) }`, "t:1:22: skboutput() file must be a constant string"},
		{`fentry:f { skboutput("", args->skb, 1, 0) }`, "t:1:22: skboutput() needs a file name"},
		{`fentry:f { skboutput("a", 0, 1, 0) }`, "t:1:27: skboutput() takes a struct sk_buff * the probe was given, not int64"},
		{`fentry:f { skboutput("a", args->skb, "x", 0) }`, "t:1:38: skboutput() takes the bytes to capture as an integer, not string[2]"},
		{`fentry:f { skboutput("a", args->skb, 1, pid) }`, "t:1:41: skboutput() offset must be a constant integer"},
		{`fentry:f { skboutput("a", args->skb, 1, -1) }`, "t:1:41: skboutput() offset must not be negative"},
		{`fentry:f { skboutput("a", args->skb, 1) }`, "t:1:12: skboutput() takes 4 arguments, not 3"},
	}
	for _, tt := range tests {
		_, err := checkSrc(t, tt.src, nil)
		var list syntax.ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%s: got %v, want an error", tt.src, err)
			continue
		}
		if got := list[0].Error(); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}
