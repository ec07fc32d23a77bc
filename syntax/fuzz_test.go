package syntax

import "testing"

// FuzzParse checks that no input makes the parser panic, and that any
// program it accepts prints to source that parses to the same text.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"BEGIN { printf(\"%d\\n\", 1 + 2); exit(); }",
		"t:syscalls:sys_enter_openat /pid == 1/ { @[comm] = count(); }",
		"uprobe:/bin/sh:main { $x = arg0; if ($x) { @a[$x, 1] = hist($x); } else { @b = lhist($x, 0, 10, 1) } }",
		"i:s:1 { unroll(2) { @x++ } while ($i < 3) { $i++; } }",
		"BEGIN { $t = (1, \"a\"); @ = $t.0 ? -1 : ~2; @s = (uint8)(*args->p); }",
		"k:vfs_read+0x10, kr:vfs_read { @[kstack(5)] = sum(retval); }",
		"BEGIN { @ = sizeof(struct file) + offsetof(struct file, f_mode) }",
		"/* */ // x\nEND{}",
		"struct s { int a[2][3]; union { char c; long l; }; unsigned b : 3, : 5; struct s *next; } BEGIN { @ = ((struct s *)0)->a[1]; }",
		"typedef struct { void (*f)(int); } t, *pt; enum e { A, B = 1 << 2 }; struct fwd; END {}",
		"struct a { int x __attribute__((cold, aligned(8))); } __attribute__((section(\"x\"))); BEGIN { if 1 { } while $i < 2) { } unroll (2 { } }",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		prog, err := Parse("fuzz", []byte(src))
		if err != nil {
			for _, e := range err.(ErrorList) {
				_ = e.Detail()
			}
			return
		}
		out := String(prog)
		prog2, err := Parse("fuzz", []byte(out))
		if err != nil {
			t.Fatalf("printed program does not parse: %v\ninput: %q\nprinted: %q", err, src, out)
		}
		if out2 := String(prog2); out2 != out {
			t.Fatalf("printing not stable:\n%q\n%q", out, out2)
		}
	})
}
