package syntax

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResolveImports imports files and folders from a program in a
// temporary folder, and checks what joins the program and the errors.
func TestResolveImports(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"lib/a.bt":  "macro twice(x) { x * 2 }\n",
		"lib/b.bt":  "end { exit(); }\n",
		"lib/c.txt": "not a program",
		"c1.bt":     "import \"c2.bt\";\nbegin { }\n",
		"c2.bt":     "import \"c1.bt\";\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, src, want string // want: the program printed, or the errors' detail
	}{
		{"a folder and a file of it, which is read once",
			"import \"lib\";\nimport \"lib/a.bt\";\nbegin { print(twice(2)); }",
			"begin\n{\n\tprint(2 * 2);\n}\n\nend\n{\n\texit();\n}\n"},
		{"a missing file",
			"import \"nope.bt\";\nbegin { }",
			"main.bt:1:8: cannot import \"nope.bt\": no such file or folder\nimport \"nope.bt\";\n       ^~~~~~~~~"},
		{"C",
			"import \"vmlinux.h\";\nbegin { }",
			"main.bt:1:8: cannot import \"vmlinux.h\": kinst imports bpftrace programs (.bt), not C\nimport \"vmlinux.h\";\n       ^~~~~~~~~~~"},
		{"a cycle",
			"import \"c1.bt\";\nbegin { }",
			dir + "/c2.bt:1:8: import cycle: c1.bt imports itself through \"c1.bt\"\nimport \"c1.bt\";\n       ^~~~~~~"},
	}
	for _, tt := range tests {
		prog, err := Parse("main.bt", []byte(tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		prog, err = ResolveImports(prog, dir)
		var got string
		if err != nil {
			got = err.(ErrorList).Detail()
		} else if err = Expand(prog, nil); err != nil {
			got = err.(ErrorList).Detail()
		} else {
			got = String(prog)
		}
		if got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
