package codegen_test

import (
	"testing"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/syntax"
)

// A map lookup returns a pointer, not an error number: under -k its
// misses are reported once, where the value is read, and no error check
// of negative results follows the call, which would take a kernel
// address for an error (and which 6.12's verifier refuses once the
// pointer has been through a record).
func TestLookupNotCheckedAsError(t *testing.T) {
	prog, err := syntax.Parse("k.bt", []byte(`interval:ms:1 { @[1] = 1; printf("%d\n", @[2]); }`))
	if err != nil {
		t.Fatal(err)
	}
	checked, err := check.Check(prog, &check.Config{Resolver: &attach.Resolver{}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := codegen.Generate(checked, &codegen.Options{EventsSize: 1 << 16, MapEntries: 64, HelperChecks: 2})
	if err != nil {
		t.Fatal(err)
	}
	var helperErrors []string
	for _, a := range out.Actions {
		if a.Kind == codegen.ActHelperError {
			helperErrors = append(helperErrors, a.Text)
		}
	}
	// The update's check, and the read's miss.
	if len(helperErrors) != 2 || helperErrors[0] != "map_update_elem" || helperErrors[1] != "map_lookup_elem" {
		t.Errorf("helper error reports %q, want [map_update_elem map_lookup_elem]", helperErrors)
	}
}
