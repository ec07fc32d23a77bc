package check

import (
	"testing"

	"kinst.dev/kinst/syntax"
)

func TestFunctionTypes(t *testing.T) {
	tests := []struct {
		src  string
		want string // @x's value type
	}{
		{`BEGIN { @x = strftime("%H", nsecs) }`, "timestamp"},
		{`BEGIN { @x = strerror(2) }`, "string"},
		{`BEGIN { @x = macaddr(0) }`, "macaddr"},
		{`BEGIN { @x = cgroup_path(cgroup) }`, "cgroup_path"},
		{`BEGIN { @x = cgroup_path(cgroup, "unified") }`, "cgroup_path"},
		{`BEGIN { @x = pton("1.2.3.4") }`, "uint8[4]"},
		{`BEGIN { @x = pton("::1") }`, "uint8[16]"},
		{`BEGIN { @x = pton("::ffff:1.2.3.4") }`, "uint8[16]"}, // 0.17 refuses an IPv4-mapped address
		{`BEGIN { @x = strcontains(comm, "a") }`, "bool"},
		{`BEGIN { @x = bswap((int16)1) }`, "uint16"},
		{`BEGIN { @x = bswap(1) }`, "uint8"}, // a literal's smallest type
		{`BEGIN { @x = bswap(0x1122334455667788) }`, "uint64"},
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
		{"bswap(-2)", 0xfe},
		{"bswap((int64)-2)", 0xfeffffffffffffff},
		{"bswap(0x1234)", 0x3412},
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

// TestKfuncQueries: kfunc_exist and kfunc_allowed are constants the
// kernel answers, kfunc_allowed for the probe's type; without a kernel
// both are false.
func TestKfuncQueries(t *testing.T) {
	tests := []struct {
		probe, expr string
		kernel      Kernel
		want        uint64
	}{
		{"BEGIN", `kfunc_exist("bpf_task_from_pid")`, fakeKernel{}, 1},
		{"BEGIN", `kfunc_exist("bpf_nope")`, fakeKernel{}, 0},
		{"BEGIN", `kfunc_exist("bpf_task_from_pid")`, nil, 0},
		{"BEGIN", `kfunc_allowed("bpf_task_from_pid")`, fakeKernel{}, 0},
		{"fentry:f", `kfunc_allowed("bpf_task_from_pid")`, fakeKernel{}, 1},
		{"fentry:f", `kfunc_allowed("bpf_nope")`, fakeKernel{}, 0},
	}
	for _, tt := range tests {
		src := tt.probe + " { @x = " + tt.expr + " }"
		prog, err := checkSrc(t, src, &Config{Kernel: tt.kernel})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		p := prog.Probes[0]
		rhs := p.Syntax.Body.Stmts[0].(*syntax.AssignStmt).Rhs
		if v, ok := p.Consts[rhs]; !ok || v.Int != tt.want {
			t.Errorf("%s: %v (constant %v), want %d", src, v.Int, ok, tt.want)
		}
		if typ := p.Types[rhs]; !typ.IsBool() {
			t.Errorf("%s: type %s, want bool", src, typ)
		}
	}
}
