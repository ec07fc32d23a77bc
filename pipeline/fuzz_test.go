package pipeline_test

import (
	"errors"
	"io"
	"os"
	"testing"

	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/session"
	"kinst.dev/kinst/syntax"
)

// FuzzPipeline takes programs the whole way --dry-run does: preprocessing,
// parsing, checking against the running kernel, code generation, and
// loading, where the kernel's verifier judges every instruction kinst
// wrote. Whatever the source, the end is a loaded program, positioned
// errors, or a verifier refusal pointed at the source; never a panic and
// never an error that names no place in the program.
func FuzzPipeline(f *testing.F) {
	if os.Geteuid() != 0 {
		f.Skip("loading BPF programs needs root")
	}
	seeds := []string{
		"BEGIN { printf(\"%d %s\\n\", 1 + 2, \"x\"); @[1, \"a\"] = count(); exit(); }",
		"#define N 3\nstruct s { int a[N]; char c; };\nBEGIN { $p = (struct s *)0; @a = $p->a[1]; @n = sizeof(struct s); }",
		"tracepoint:syscalls:sys_enter_openat /pid == $1/ { @[comm] = count(); @s[str(args->filename)] = hist(args->flags); }",
		"BEGIN { $i = 0; while ($i < 5) { $i++; if ($i == 3) { continue; } } unroll(3) { @c++ } @t = ($i, \"a\"); print(@t); }",
		"interval:ms:10 { @ = lhist(nsecs % 100, 0, 100, 10); print(@, 5, 2); clear(@); zero(@); delete(@); }",
		"END { @m = min(-1); @n = max(5); @a = avg(3); @s = stats(4); time(); @b = bswap((uint32)7); @e = strerror(2); }",
		"BEGIN { @x = (uint8)300 / 0; @y = \"a\" == \"bc\"; @z = strncmp(\"ab\", \"ac\", 1); @w = strcontains(\"abc\", \"b\"); @p = pton(\"1.2.3.4\"); }",
		"software:page-faults:100 { @[kstack(3)] = count(); } profile:hz:99 { @u[ustack(2)] = count(); }",
		"iter:task /ctx->task->pid == 1/ { printf(\"%s\\n\", ctx->task->comm); }",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := pipeline.Compile("fuzz", []byte(src), &pipeline.Options{Params: []string{"1", "x"}, Unsafe: true})
		if err != nil {
			var list syntax.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("compile error is %T, not positioned: %v", err, err)
			}
			return
		}
		err = session.Load(out, &session.Options{Stderr: io.Discard})
		var ve *session.VerifierError
		if err != nil && !errors.As(err, &ve) {
			t.Fatalf("load error is %T, not pointed at the source: %v", err, err)
		}
	})
}
