package vm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cpioEntry is one entry of a newc archive as the test reads it back.
type cpioEntry struct {
	name  string
	mode  uint32
	data  string
	major uint32
	minor uint32
}

func (e cpioEntry) String() string {
	return fmt.Sprintf("%s %06o %q %d,%d", e.name, e.mode, e.data, e.major, e.minor)
}

// readCPIO parses a newc archive, checking magic and alignment.
func readCPIO(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("entry at %d field %d: %v", off, i, err)
		}
		return uint32(v)
	}
	for {
		if off%4 != 0 || string(b[off:off+6]) != "070701" {
			t.Fatalf("no newc header at offset %d", off)
		}
		mode, size, rmaj, rmin, nameSize := field(1), int(field(6)), field(9), field(10), int(field(11))
		name := string(b[off+110 : off+110+nameSize-1])
		off += (110 + nameSize + 3) &^ 3
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, cpioEntry{name, mode, string(b[off : off+size]), rmaj, rmin})
		off += (size + 3) &^ 3
	}
}

func TestCPIOWriter(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "tool"), []byte("#!/bin/sh\necho tool\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(src, "testdata")
	if err := os.MkdirAll(filepath.Join(tree, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "sub", "a.txt"), []byte("abc"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/a.txt", filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	c := newCPIOWriter(&buf)
	c.CharDev("/dev/console", 5, 1)
	c.Dir("/tmp", 0o777|os.ModeSticky)
	c.Bytes("/etc/hostname", 0o644, []byte("vmrun\n"))
	c.File("/vmrun/bin/tool", filepath.Join(src, "tool"))
	c.Tree("/work/pkg/testdata", tree)
	c.Symlink("/bin/sh", "/vmrun/bin/busybox")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range readCPIO(t, buf.Bytes()) {
		got = append(got, e.String())
	}
	want := []string{
		`dev 040755 "" 0,0`,
		`dev/console 020600 "" 5,1`,
		`tmp 041777 "" 0,0`,
		`etc 040755 "" 0,0`,
		`etc/hostname 100644 "vmrun\n" 0,0`,
		`vmrun 040755 "" 0,0`,
		`vmrun/bin 040755 "" 0,0`,
		`vmrun/bin/tool 100755 "#!/bin/sh\necho tool\n" 0,0`,
		`work 040755 "" 0,0`,
		`work/pkg 040755 "" 0,0`,
		`work/pkg/testdata 040750 "" 0,0`,
		`work/pkg/testdata/link 120777 "sub/a.txt" 0,0`,
		`work/pkg/testdata/sub 040750 "" 0,0`,
		`work/pkg/testdata/sub/a.txt 100640 "abc" 0,0`,
		`bin 040755 "" 0,0`,
		`bin/sh 120777 "/vmrun/bin/busybox" 0,0`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("archive:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// GNU cpio, where installed, must read the same names.
	if _, err := exec.LookPath("cpio"); err == nil {
		cmd := exec.Command("cpio", "-it", "--quiet")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cpio -it: %v", err)
		}
		var names []string
		for _, e := range want {
			name, _, _ := strings.Cut(e, " ")
			names = append(names, name)
		}
		if strings.TrimSpace(string(out)) != strings.Join(names, "\n") {
			t.Errorf("cpio -it listed:\n%s", out)
		}
	}
}

func TestCPIOWriterErrors(t *testing.T) {
	var buf bytes.Buffer
	c := newCPIOWriter(&buf)
	c.File("/x", "/nonexistent/file")
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "/nonexistent/file: no such file or directory") {
		t.Errorf("packing a missing file: %v", err)
	}
	c = newCPIOWriter(&buf)
	c.File("/x", t.TempDir())
	if err := c.Close(); err == nil || !strings.HasSuffix(err.Error(), "is not a regular file") {
		t.Errorf("packing a folder as a file: %v", err)
	}
}
