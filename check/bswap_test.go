package check

import (
	"testing"

	"kinst.dev/kinst/syntax"
)

func TestBswapAndBufTypes(t *testing.T) {
	prog, err := checkSrc(t, `kprobe:f {
	@a = bswap((uint16)0x1234); @b = bswap(arg0); @c = bswap((int8)-1);
	$n = arg1; @d = buf(arg0, $n); @e = buf(arg0, 8);
}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "uint16", "b": "uint64", "c": "uint8", "d": "buffer", "e": "buffer"} {
		if got := prog.Map(name).Value.String(); got != want {
			t.Errorf("@%s holds %s, want %s", name, got, want)
		}
	}
	if d, e := prog.Map("d").Value, prog.Map("e").Value; d.Size != maxVarBuf+1 || !d.VarLen || e.Size != 9 || e.VarLen {
		t.Errorf("buf(arg0, $n) is %d bytes (run-time length %v), buf(arg0, 8) %d (%v); want 256 (true), 9 (false)", d.Size, d.VarLen, e.Size, e.VarLen)
	}
	p := prog.Probes[0]
	rhs := func(i int) syntax.Expr { return p.Syntax.Body.Stmts[i].(*syntax.AssignStmt).Rhs }
	if v := p.Consts[rhs(0)]; v.Int != 0x3412 {
		t.Errorf("bswap((uint16)0x1234) folds to %#x, want 0x3412", v.Int)
	}
	if v := p.Consts[rhs(2)]; v.Int != 0xff {
		t.Errorf("bswap((int8)-1) folds to %#x", v.Int)
	}
}
