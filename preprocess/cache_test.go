package preprocess

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kinst.dev/kinst/syntax"
)

// cacheHeaders are a small system include tree: a header that includes
// another twice (the second time kept out by its #pragma once), one that
// is absent, a macro made from the built-in <limits.h>, a macro whose
// body does not parse, and one that depends on what the program defined
// before its #include.
var cacheHeaders = map[string]string{
	"sys/net.h": "#ifndef NET_H\n#define NET_H\n#include <bits.h>\n#include <bits.h>\n#include <absent.h>\n#include <limits.h>\n" +
		"#define AF_INET PF_INET\n#define BIG INT_MAX\n#define BROKEN (1 ])\n#undef GONE\n" +
		"#ifdef WANT_MORE\n#define MORE 7\n#else\n#define MORE 6\n#endif\nstruct sockaddr { int family; };\n#endif\n",
	"sys/bits.h": "#pragma once\n#define PF_INET 2\n",
}

// cacheSetup writes files as setup does, dated an hour ago: headers as
// old as a system's, which the cache keeps entries for (see racyMargin).
func cacheSetup(t testing.TB, files map[string]string) string {
	t.Helper()
	dir, _ := setup(t, files)
	for name := range files {
		age(t, filepath.Join(dir, name))
	}
	return dir
}

// age dates the file at path an hour ago.
func age(t testing.TB, path string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// cacheRun preprocesses src as dir/prog.bt with the cache in dir/cache
// and the system headers in dir/sys (after dir/first, which the tests
// fill to move a header earlier in the search).
func cacheRun(t *testing.T, dir, src string) *Result {
	t.Helper()
	res, err := Preprocess(filepath.Join(dir, "prog.bt"), []byte(src), &Config{
		SystemDirs: []string{filepath.Join(dir, "first"), filepath.Join(dir, "sys")},
		BTF:        func() bool { return true },
		CacheDir:   filepath.Join(dir, "cache"),
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return res
}

const cacheProg = "#define GONE 1\n#include <net.h>\nBEGIN { @ = AF_INET + MORE + BIG; @g = GONE; }\n"

// summary is what a run produced: its text, warnings and macros.
func summary(r *Result) string {
	return string(r.File.Src) + "\n" + strings.Join(r.Warnings, "\n") + "\n" + strings.Join(r.Names(), " ")
}

func TestCacheHit(t *testing.T) {
	dir := cacheSetup(t, cacheHeaders)
	first := cacheRun(t, dir, cacheProg)
	if first.hits != 0 {
		t.Fatalf("first run: %d hits in an empty cache", first.hits)
	}
	want := "BEGIN { @ = 2 + 6 + 2147483647; @g = GONE; }"
	if got := string(first.File.Src); got != want {
		t.Fatalf("first run:\n%s\nwant\n%s", got, want)
	}
	second := cacheRun(t, dir, cacheProg)
	if second.hits != 1 {
		t.Fatalf("second run: %d hits, want 1", second.hits)
	}
	if a, b := summary(first), summary(second); a != b {
		t.Errorf("the cached run differs:\n%s\nwant\n%s", b, a)
	}
	// Positions in a cached header's macros still name the header's line.
	bad := "#include <net.h>\nBEGIN { @ = BROKEN; }\n"
	var msgs []string
	for range 2 {
		res := cacheRun(t, dir, bad)
		_, err := syntax.ParseFile(res.File)
		if err == nil {
			t.Fatal("BROKEN parsed")
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || !strings.Contains(msgs[0], filepath.Join(dir, "sys", "net.h")+":9:") {
		t.Errorf("errors through a cached macro:\n%s\nwant the same as\n%s\nat net.h:9", msgs[1], msgs[0])
	}
}

// TestCacheKey: what the program defined before an #include is part of
// the key, as are the other search directories.
func TestCacheKey(t *testing.T) {
	dir := cacheSetup(t, cacheHeaders)
	more := "#define WANT_MORE\n" + cacheProg
	for range 2 {
		if got := string(cacheRun(t, dir, cacheProg).File.Src); !strings.Contains(got, "2 + 6 +") {
			t.Errorf("without WANT_MORE: %s", got)
		}
		if got := string(cacheRun(t, dir, more).File.Src); !strings.Contains(got, "2 + 7 +") {
			t.Errorf("with WANT_MORE: %s", got)
		}
	}
	if r := cacheRun(t, dir, more); r.hits != 1 {
		t.Errorf("%d hits, want 1", r.hits)
	}
	// A program elsewhere shares the entry of its <...> include.
	other, err := Preprocess(filepath.Join(dir, "sys", "prog.bt"), []byte(more), &Config{
		SystemDirs: []string{filepath.Join(dir, "first"), filepath.Join(dir, "sys")},
		BTF:        func() bool { return true },
		CacheDir:   filepath.Join(dir, "cache"),
	})
	if err != nil || other.hits != 1 {
		t.Errorf("a program in another folder: %d hits, %v", other.hits, err)
	}
	res, err := Preprocess(filepath.Join(dir, "prog.bt"), []byte(cacheProg), &Config{
		SystemDirs: []string{filepath.Join(dir, "sys")},
		BTF:        func() bool { return true },
		CacheDir:   filepath.Join(dir, "cache"),
	})
	if err != nil || res.hits != 0 {
		t.Errorf("other search directories: %d hits, %v", res.hits, err)
	}
}

// TestCacheStale changes the headers between runs: every change is a
// miss that sees the change, and the run after it a hit.
func TestCacheStale(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string
	}{
		{"edited", func(t *testing.T, dir string) {
			writeOld(t, filepath.Join(dir, "sys/bits.h"), "#pragma once\n#define PF_INET 10\n")
		}, "@ = 10 + 6"},
		{"same size", func(t *testing.T, dir string) {
			writeOld(t, filepath.Join(dir, "sys/bits.h"), "#pragma once\n#define PF_INET 3\n")
		}, "@ = 3 + 6"},
		{"re-dated", func(t *testing.T, dir string) {
			// Its times set anew, a moment after setup set them.
			age(t, filepath.Join(dir, "sys/bits.h"))
		}, "@ = 2 + 6"},
		{"earlier in the search", func(t *testing.T, dir string) {
			writeOld(t, filepath.Join(dir, "first/bits.h"), "#define PF_INET 4\n")
		}, "@ = 4 + 6"},
		{"appeared", func(t *testing.T, dir string) {
			writeOld(t, filepath.Join(dir, "sys/absent.h"), "#define WANT_MORE\n")
		}, "@ = 2 + 7"},
		{"removed", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "sys/bits.h")); err != nil {
				t.Fatal(err)
			}
		}, "@ = PF_INET + 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := cacheSetup(t, cacheHeaders)
			cacheRun(t, dir, cacheProg)
			tt.change(t, dir)
			res := cacheRun(t, dir, cacheProg)
			if res.hits != 0 || !strings.Contains(string(res.File.Src), tt.want) {
				t.Fatalf("after the change: %d hits, %q; want a miss with %q", res.hits, res.File.Src, tt.want)
			}
			again := cacheRun(t, dir, cacheProg)
			if again.hits != 1 || summary(again) != summary(res) {
				t.Errorf("the run after: %d hits\n%s\nwant\n%s", again.hits, summary(again), summary(res))
			}
		})
	}
}

// TestCacheRacy edits a header as soon as a run has read it, keeping
// its size: a file's time may not have moved, so the run must not have
// kept an entry, and the next run must see the edit.
func TestCacheRacy(t *testing.T) {
	dir, _ := setup(t, cacheHeaders)
	cacheRun(t, dir, cacheProg)
	if entries, _ := os.ReadDir(filepath.Join(dir, "cache")); len(entries) != 0 {
		t.Errorf("cache holds %v after reading headers written just now", entries)
	}
	write(t, filepath.Join(dir, "sys/bits.h"), "#pragma once\n#define PF_INET 3\n")
	if res := cacheRun(t, dir, cacheProg); res.hits != 0 || !strings.Contains(string(res.File.Src), "@ = 3 + 6") {
		t.Errorf("after the edit: %d hits, %q; want a miss with PF_INET 3", res.hits, res.File.Src)
	}
}

// writeOld writes a file and dates it an hour ago.
func writeOld(t *testing.T, path, text string) {
	t.Helper()
	write(t, path, text)
	age(t, path)
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCacheCorrupt damages the entry: each damage is a miss with the
// right result, and the entry written then serves the next run.
func TestCacheCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		damage func(path string, data []byte) error
	}{
		{"empty", func(path string, _ []byte) error { return os.WriteFile(path, nil, 0o600) }},
		{"truncated", func(path string, data []byte) error { return os.WriteFile(path, data[:len(data)/2], 0o600) }},
		{"a byte changed", func(path string, data []byte) error {
			data[len(data)/3] ^= 0x40
			return os.WriteFile(path, data, 0o600)
		}},
		{"checksum of garbage", func(path string, _ []byte) error {
			var w encoder
			w.str(cacheMagic)
			w.int(1 << 40) // a count past the end
			return os.WriteFile(path, sealed(w.b), 0o600)
		}},
		{"writable by others", func(path string, _ []byte) error { return os.Chmod(path, 0o666) }},
		{"a directory", func(path string, _ []byte) error {
			if err := os.Remove(path); err != nil {
				return err
			}
			return os.Mkdir(path, 0o700)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := cacheSetup(t, cacheHeaders)
			want := summary(cacheRun(t, dir, cacheProg))
			entries, _ := filepath.Glob(filepath.Join(dir, "cache", "*"))
			if len(entries) != 1 {
				t.Fatalf("cache holds %q, want one entry", entries)
			}
			data, err := os.ReadFile(entries[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.damage(entries[0], data); err != nil {
				t.Fatal(err)
			}
			res := cacheRun(t, dir, cacheProg)
			if res.hits != 0 || summary(res) != want {
				t.Fatalf("damaged entry: %d hits\n%s\nwant a miss with\n%s", res.hits, summary(res), want)
			}
			if tt.name == "a directory" {
				return // the entry cannot be replaced; it stays a miss
			}
			if again := cacheRun(t, dir, cacheProg); again.hits != 1 || summary(again) != want {
				t.Errorf("rewritten entry: %d hits\n%s", again.hits, summary(again))
			}
		})
	}
}

// TestCacheConcurrent runs many preprocessors on one empty cache at
// once: each sees whole entries or none.
func TestCacheConcurrent(t *testing.T) {
	dir := cacheSetup(t, cacheHeaders)
	want := "BEGIN { @ = 2 + 6 + 2147483647; @g = GONE; }"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				res, err := Preprocess(filepath.Join(dir, "prog.bt"), []byte(cacheProg), &Config{
					SystemDirs: []string{filepath.Join(dir, "first"), filepath.Join(dir, "sys")},
					BTF:        func() bool { return true },
					CacheDir:   filepath.Join(dir, "cache"),
				})
				if err != nil || string(res.File.Src) != want {
					t.Errorf("%v: %q", err, res.File.Src)
				}
			}
		})
	}
	wg.Wait()
	entries, _ := os.ReadDir(filepath.Join(dir, "cache"))
	if len(entries) != 1 || strings.HasPrefix(entries[0].Name(), ".tmp") {
		t.Errorf("cache holds %v, want one entry and no temporary file", entries)
	}
}

// TestCacheNotKept: an #include that makes text or reports something is
// run each time.
func TestCacheNotKept(t *testing.T) {
	dir := cacheSetup(t, map[string]string{
		"decl.h": "struct pair { int a; };\n#define N 1\n",
		"warn.h": "#warning careful\n",
	})
	for _, src := range []string{"#include \"decl.h\"\nBEGIN { @ = N; }\n", "#include \"warn.h\"\nBEGIN {}\n"} {
		var runs []string
		for range 2 {
			res := cacheRun(t, dir, src)
			if res.hits != 0 {
				t.Errorf("%q: a hit", src)
			}
			runs = append(runs, summary(res))
		}
		if runs[0] != runs[1] {
			t.Errorf("%q: runs differ:\n%s\n%s", src, runs[0], runs[1])
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "cache")); len(entries) != 0 {
		t.Errorf("cache holds %v", entries)
	}
}

// TestCachePrune: the cache keeps the newest maxEntries entries.
func TestCachePrune(t *testing.T) {
	dir := cacheSetup(t, cacheHeaders)
	cache := filepath.Join(dir, "cache")
	old := time.Now().Add(-time.Hour)
	for i := range maxEntries + 5 {
		path := filepath.Join(cache, fmt.Sprintf("old%02d", i))
		write(t, path, "x")
		if err := os.Chtimes(path, old, old.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	cacheRun(t, dir, cacheProg)
	entries, _ := os.ReadDir(cache)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != maxEntries || slices.Contains(names, "old05") || !slices.Contains(names, "old06") {
		t.Errorf("after a store the cache holds %d entries: %v; want the %d newest", len(names), names, maxEntries)
	}
	if r := cacheRun(t, dir, cacheProg); r.hits != 1 {
		t.Errorf("the new entry was pruned: %d hits", r.hits)
	}
}
