package preprocess

import (
	"os"
	"path/filepath"
	"testing"

	"kinst.dev/kinst/syntax"
)

// FuzzPreprocess checks that no input makes the preprocessor panic, that
// every error renders with its line, that every byte of the output
// resolves to a position, and that text without directives comes out
// unchanged.
func FuzzPreprocess(f *testing.F) {
	for _, s := range []string{
		"#define N 5\nBEGIN { @x = N; }",
		"#define MAX(a, b) ((a) > (b) ? (a) : (b))\nBEGIN { @x = MAX(1, MAX(2, 3)); }",
		"#define S(x) #x\n#define CAT(a, b) a ## b\nBEGIN { printf(S(a \"q\")); @ = CAT(co, mm); }",
		"#define P(f, ...) printf(f, __VA_ARGS__)\nBEGIN { P(\"%d\", 1); }",
		"#if defined(A) || 1 << 3 > 'a' ? 1 : 0\nx\n#elif 1\n#else\n#endif",
		"#ifndef BPFTRACE_HAVE_BTF\n#include <linux/sched.h>\n#endif\nk:f { @[$x] = TASK_RUNNING }",
		"#define A B\n#define B A\nA",
		"#define L \\\n __LINE__ /* c */ // d\nL",
		"BEGIN { printf(\"#x\"); } // plain",
		"#define F(a, b) a\nBEGIN { @ = F(1); @y = F(1, 2, 3) + F(4, 5) }",
	} {
		f.Add(s)
	}
	conf := &Config{SystemDirs: []string{}, BTF: func() bool { return true }}
	f.Fuzz(func(t *testing.T, src string) {
		res, err := Preprocess("/nonexistent/fuzz.bt", []byte(src), conf)
		if err != nil {
			for _, e := range err.(syntax.ErrorList) {
				_ = e.Detail()
			}
			return
		}
		if !hasDirective([]byte(src)) && string(res.File.Src) != src {
			t.Fatalf("text without directives changed: %q became %q", src, res.File.Src)
		}
		for off := range res.File.Src {
			pos, _ := res.File.Locate(res.File.Pos(off))
			if pos.Line < 1 || pos.Column < 1 {
				t.Fatalf("offset %d resolves to %v", off, pos)
			}
		}
	})
}

// FuzzCacheEntry checks that no cache file makes decoding panic: a
// damaged entry is a miss. The seeds are a real entry, damaged ones,
// and an entry whose checksum covers garbage.
func FuzzCacheEntry(f *testing.F) {
	dir := cacheSetup(f, cacheHeaders)
	p := newPP(&Config{SystemDirs: []string{dir + "/sys"}, CacheDir: dir + "/cache"})
	p.run(&source{file: syntax.NewFile("prog.bt", []byte(cacheProg)), text: []byte(cacheProg), dir: dir, found: -1})
	entries, _ := filepath.Glob(dir + "/cache/*")
	if len(entries) == 0 {
		f.Fatal("the preprocessor kept no cache entry to seed the corpus with")
	}
	for _, e := range entries {
		data, err := os.ReadFile(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(sealed(data[:len(data)/2]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeEntry(data)
		decodeEntry(sealed(data))
	})
}
