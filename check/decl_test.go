package check

import (
	"testing"

	"kinst.dev/kinst/syntax"
)

// declSrc declares the types the layout tests measure. Sizes and offsets
// are what GCC gives on x86-64 and arm64.
const declSrc = `
struct in { int x; short y; };
union u { long l; int i[2]; char c; };
enum color { RED, GREEN = 5, BLUE, WIDE = GREEN << 4 };
typedef unsigned short u16x, *pu16x;
struct out {
	struct in a;
	char name[4];
	unsigned int b1 : 3, b2 : 5, : 0, b3 : 30;
	union u un;
	struct { int p; } anon;
	union { char tag; long wide; };
	enum color col;
	u16x small[2][3];
	struct out *next;
	void (*fn)(int);
	struct later *fwd;
};
struct packed_bits { unsigned char a : 4, b : 4, c : 4; unsigned long long d : 60; };
struct later { int v; };
struct empty {};
struct spellings { short unsigned int a; long unsigned int b; signed char c; long long int d; };
struct holds_empty { struct empty e; int y; };
struct floats { char c; float f; double d; int i; long double ld; short s; float v[3]; int last; };
typedef void handler_fn(int sig);
struct hooks { handler_fn *h; char n; };
struct nosemi { char c; unsigned long x }
struct nosemi_nested { struct { int m[1] } y; char z }
`

func TestDeclLayout(t *testing.T) {
	tests := []struct {
		expr string
		want int64
	}{
		{"sizeof(struct in)", 8},
		{"sizeof(union u)", 8},
		{"offsetof(struct out, name)", 8},
		{"offsetof(struct out, b1)", 12},
		{"offsetof(struct out, b3)", 16},
		{"offsetof(struct out, un)", 24},
		{"offsetof(struct out, anon)", 32},
		{"offsetof(struct out, tag)", 40},
		{"offsetof(struct out, wide)", 40},
		{"offsetof(struct out, col)", 48},
		{"offsetof(struct out, small)", 52},
		{"offsetof(struct out, next)", 64},
		{"offsetof(struct out, fn)", 72},
		{"sizeof(struct out)", 88},
		{"sizeof(struct packed_bits)", 16},
		{"offsetof(struct packed_bits, c)", 1},
		{"offsetof(struct packed_bits, d)", 8},
		{"sizeof(struct later)", 4},
		{"sizeof(struct empty)", 0},
		{"sizeof(struct spellings)", 32},
		{"offsetof(struct spellings, d)", 24},
		{"sizeof(struct holds_empty)", 4},
		{"BLUE", 6},
		{"WIDE", 80},
		{"sizeof(u16x)", 2},
		{"sizeof(pu16x)", 8},
		{"sizeof(((struct out *)0)->small)", 12},
		{"sizeof(((struct out *)0)->small[1])", 6},
		{"((struct out *)0)->fwd->v", 0},
		{"offsetof(struct floats, f)", 4},
		{"offsetof(struct floats, d)", 8},
		{"offsetof(struct floats, i)", 16},
		{"offsetof(struct floats, ld)", 32},
		{"offsetof(struct floats, s)", 48},
		{"offsetof(struct floats, v)", 52},
		{"offsetof(struct floats, last)", 64},
		{"sizeof(struct floats)", 80},
		{"sizeof(((struct floats *)0)->v)", 12},
		{"offsetof(struct hooks, n)", 8},
		{"sizeof(struct hooks)", 16},
		{"offsetof(struct nosemi, x)", 8},
		{"sizeof(struct nosemi)", 16},
		{"offsetof(struct nosemi_nested, z)", 4},
		{"sizeof(struct nosemi_nested)", 8},
	}
	for _, tt := range tests {
		prog, err := checkSrc(t, declSrc+"BEGIN { @x = "+tt.expr+" }", &Config{Kernel: fakeKernel{}})
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		if tt.expr == "((struct out *)0)->fwd->v" {
			if got := prog.Map("x").Value.String(); got != "int32" {
				t.Errorf("%s has type %s, want int32", tt.expr, got)
			}
			continue
		}
		p := prog.Probes[0]
		v, ok := p.Consts[p.Syntax.Body.Stmts[0].(*syntax.AssignStmt).Rhs]
		if !ok || int64(v.Int) != tt.want {
			t.Errorf("%s = %d (constant %v), want %d", tt.expr, int64(v.Int), ok, tt.want)
		}
	}
}

// TestDeclAttributes checks packed and aligned against what GCC gives
// for the same declarations on x86-64.
func TestDeclAttributes(t *testing.T) {
	const src = `
struct p1 { char a; int b; short c; } __attribute__((packed));
struct __attribute__((packed)) p2 { char a; long b; };
struct al { char a; int b __attribute__((aligned(16))); char c; };
struct al2 { char a; } __attribute__((__aligned__(8)));
struct pb { unsigned char a : 4; unsigned int b : 12; unsigned int c: 20; } __attribute__((packed));
struct outer { char x; struct p1 in; struct al2 z; }
`
	tests := []struct {
		expr string
		want int64
	}{
		{"sizeof(struct p1)", 7}, {"offsetof(struct p1, c)", 5}, {"sizeof(struct p2)", 9},
		{"sizeof(struct al)", 32}, {"offsetof(struct al, b)", 16}, {"offsetof(struct al, c)", 20},
		{"sizeof(struct al2)", 8}, {"sizeof(struct pb)", 5}, {"sizeof(struct outer)", 16},
	}
	for _, tt := range tests {
		prog, err := checkSrc(t, src+"BEGIN { @x = "+tt.expr+" }", nil)
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		p := prog.Probes[0]
		if v := p.Consts[p.Syntax.Body.Stmts[0].(*syntax.AssignStmt).Rhs]; int64(v.Int) != tt.want {
			t.Errorf("%s = %d, want %d", tt.expr, int64(v.Int), tt.want)
		}
	}
}

func TestDeclFields(t *testing.T) {
	prog, err := checkSrc(t, declSrc+`kprobe:f {
	$o = (struct out *)arg0;
	@a = $o->a; @n = $o->name; @s = $o->small; @row = $o->small[1]; @b = $o->b2;
	@k[$o->a, $o->small] = 1;
	@t = ($o->a, 1);
	@eq = $o->small == $o->small;
	$i = 1;
	@v = $o->small[$i][2];
}`, &Config{Kernel: fakeKernel{}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"a": "struct in", "n": "string[4]", "s": "uint16[3][2]", "row": "uint16[3]",
		"b": "uint32", "t": "(struct in, int8)", "eq": "bool", "v": "uint16",
	} {
		if got := prog.Map(name).Value.String(); got != want {
			t.Errorf("@%s holds %s, want %s", name, got, want)
		}
	}
	b2 := findField(t, "struct out", "b2")
	if b2.Offset != 12 || b2.BitOffset != 3 || b2.Bits != 5 {
		t.Errorf("b2 at byte %d bit %d width %d, want 12, 3, 5", b2.Offset, b2.BitOffset, b2.Bits)
	}
}

// findField lays out declSrc and returns a field of one of its structs.
func findField(t *testing.T, tag, name string) *Field {
	t.Helper()
	parsed, err := syntax.Parse("t", []byte(declSrc+"BEGIN {}"))
	if err != nil {
		t.Fatal(err)
	}
	c := checker{conf: &Config{Kernel: fakeKernel{}}, file: parsed.File}
	c.declare(parsed)
	if len(c.errs) > 0 {
		t.Fatal(c.errs)
	}
	return c.decls.tags[tag].Field(name)
}
