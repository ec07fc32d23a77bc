package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// perfettoSchema is where Perfetto's schema lies, beside the repository
// (../shared/schemas from its root) or beside a folder holding it.
const perfettoSchema = "shared/schemas/perfetto_trace.proto"

// PerfettoDecode decodes a Perfetto trace into protobuf text with protoc
// and Perfetto's own schema, found above the working directory. It skips
// t where protoc or the schema is missing, and fails it where the trace
// does not decode.
func PerfettoDecode(t testing.TB, trace []byte) string {
	t.Helper()
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("no protoc to decode the trace (make deps installs protobuf-compiler)")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	schema := ""
	for ; ; dir = filepath.Dir(dir) {
		if p := filepath.Join(dir, perfettoSchema); isRegular(p) {
			schema = p
			break
		}
		if dir == filepath.Dir(dir) {
			t.Skipf("no %s in any folder above the tests", perfettoSchema)
		}
	}
	cmd := exec.Command(protoc, "--proto_path="+filepath.Dir(schema), "--decode=perfetto.protos.Trace", filepath.Base(schema))
	cmd.Stdin = bytes.NewReader(trace)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc --decode=perfetto.protos.Trace: %v\n%s", err, stderr.String())
	}
	return string(out)
}

func isRegular(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
