package codegen_test

import (
	"testing"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/syntax"
)

// FuzzGenerate runs code generation on every program the checker
// accepts; BEGIN and END need no kernel to resolve. It must never panic.
func FuzzGenerate(f *testing.F) {
	seeds := []string{
		"struct s { int a[2][3]; union { char c; long l; }; unsigned b : 3, : 5; struct s *n; } typedef int i_t; BEGIN { $p = (struct s *)0; @a = $p->a; @k[$p->a[1]] = 1; @e = $p->a == $p->a; @r = *$p; print(($p->a[0], sizeof(i_t))); }",
		"extern int n; int f(int, ...); static inline int g(void) { return '}'; } struct fl { float f; double d[2]; int b; } v; typedef void h_t(int); BEGIN { $p = (struct fl *)0; @b = $p->b; @r = *$p; @k[*$p] = sizeof(h_t *); @x = $p->d[1]; }",
		"BEGIN { printf(\"%d %s\\n\", 1 + 2, \"x\"); @[1, \"a\"] = count(); exit(); }",
		"BEGIN { $t = (1, \"a\"); @t = $t; @u = $t.1; @v = $t.0 ? -1 : ~2; @w[$t] = hist(5); }",
		"BEGIN { $i = 0; while ($i < 5) { $i++; if ($i == 3) { continue; } } unroll(3) { @c++ } }",
		"END { @m = min(-1); @n = max(5); @a = avg(3); @s = stats(4); time(); print(@m); clear(@n); }",
		"BEGIN { @x = (uint8)300 / 3; @y = \"a\" == \"b\"; @z = strncmp(\"ab\", \"ac\", 1); @w = $1 + $#; }",
		"BEGIN { @s = str(\"abc\", 2); @l = lhist(-5, 0, 10, 2); @x -= 3; @x *= 2; print((1, \"x\")); }",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		prog, err := syntax.Parse("fuzz", []byte(src))
		if err != nil {
			return
		}
		checked, err := check.Check(prog, &check.Config{Params: []string{"1", "x"}})
		if err != nil {
			return
		}
		if _, err := codegen.Generate(checked, &codegen.Options{}); err != nil {
			if _, ok := err.(syntax.ErrorList); !ok {
				t.Fatalf("error is %T, not positioned: %v", err, err)
			}
		}
	})
}
