package main

import (
	"os"
	"path/filepath"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestImport: a program imports a file and a folder relative to its own
// folder, not the working directory; an error in an imported file
// names that file.
func TestImport(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	for name, text := range map[string]string{
		"prog/main.bt":   "import \"lib\";\nbegin { printf(\"%d\\n\", twice(21)); exit(); }\n",
		"prog/lib/a.bt":  "macro twice(x) { x * 2 }\n",
		"prog/lib/b.bt":  "end { printf(\"end\\n\"); }\n",
		"prog/broken.bt": "import \"bad.bt\";\nbegin { exit(); }\n",
		"prog/bad.bt":    "macro f() { 0 }\nmacro f() { 1 }\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	def := []string{"KINST_COMPAT="}
	kinstEnv(t, def, "-q", filepath.Join(dir, "prog/main.bt")).want(t, 0, "42\nend\n\n\n", "")
	bad := filepath.Join(dir, "prog/bad.bt")
	kinstEnv(t, def, "-q", filepath.Join(dir, "prog/broken.bt")).want(t, 1, "",
		bad+":2:7: macro f with 0 parameters is defined twice; the first definition is at "+bad+":1:7\nmacro f() { 1 }\n      ^\n")
}
