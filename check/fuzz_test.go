package check

import (
	"testing"

	"kinst.dev/kinst/syntax"
)

// FuzzCheck feeds the checker every program the parser accepts: whatever
// it is given, it must return a checked program or positioned errors,
// never panic.
func FuzzCheck(f *testing.F) {
	seeds := []string{
		"struct s { int a[2][3]; union { char c; long l; }; unsigned b : 3, : 5; struct s *n; } typedef int i_t; BEGIN { $p = (struct s *)0; @a = $p->a; @k[$p->a[1]] = 1; @e = $p->a == $p->a; @r = *$p; print(($p->a[0], sizeof(i_t))); }",
		"extern int n; int f(int, ...); static inline int g(void) { return '}'; } struct fl { float f; double d[2]; int b; } v; typedef void h_t(int); BEGIN { $p = (struct fl *)0; @b = $p->b; @r = *$p; @k[*$p] = sizeof(h_t *); @x = $p->d[1]; }",
		"BEGIN { printf(\"%d %s\\n\", 1 + 2, \"x\"); @[1, \"a\"] = count(); exit(); }",
		"t:syscalls:sys_enter_openat /pid == 1/ { @[comm] = count(); $f = str(args->filename); @s[$f] = hist(args->flags); }",
		"kprobe:f { @x = arg0 + arg1; @y = ksym(reg(\"ip\")); @z[kstack(perf, 3)] = sum(retval); }",
		"uprobe:/bin/sh:main { $t = (1, \"a\"); @t = $t; @u = $t.1; @v = $t.0 ? -1 : ~2; }",
		"BEGIN { $i = 0; while ($i < 5) { $i++; if ($i == 3) { continue; } } unroll(3) { @c++ } }",
		"interval:s:1 { @ = lhist(nsecs % 100, 0, 100, 10); print(@, 5, 2); clear(@); zero(@); delete(@); }",
		"END { @m = min(-1); @n = max(5); @a = avg(3); @s = stats(4); time(); join(0); }",
		"BEGIN { @x = (uint8)300 / 0; @y = \"a\" == \"b\"; @z = strncmp(\"ab\", \"ac\", 1); @w = $1 + $#; }",
		"BEGIN { printff(\"%d\", nope); @x = printf(\"%d\\n\", \"a\"); system(\"rm %s\", 1 / 0); @y = count() + hist(nope); prnt(@m, @k[nope2]); @z = clear(@m) + exit() }",
		"BEGIN { @a = strftime(1, nope); @m = count(); print(@m, nope4); clear(@m, 1); @h[nope8] = hist(\"a\", nope9); @l[1, x] = lhist(1, 0, y, 0); delete(@h[z], 2) }",
		"struct a { nope_t x; }; struct b { struct a y; int z; }; typedef struct b tb; enum e { A = N, B }; t:syscalls:nope { @x = 1 } BEGIN { @y = sizeof(tb) + B; @z = ((struct a *)0)->x; @w = @x }",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		prog, err := syntax.Parse("fuzz", []byte(src))
		if err != nil {
			return
		}
		_, err = Check(prog, &Config{Resolver: fakeResolver{}, Params: []string{"1", "x"}})
		if err != nil {
			if _, ok := err.(syntax.ErrorList); !ok {
				t.Fatalf("error is %T, not positioned: %v", err, err)
			}
		}
	})
}
