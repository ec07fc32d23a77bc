package check

import (
	"maps"
	"strings"
	"testing"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

func TestReadConfig(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		env      map[string]string
		mode     compat.Version
		want     Settings
		warnings []string
		err      string
	}{
		{
			name: "every spelling of a key",
			src:  `config = { max_strlen = 16; MAX_MAP_KEYS = 5; BPFTRACE_MAX_PROBES = 7; missing_probes = "WARN"; print_maps_on_exit = false; stack_mode = perf; license = "Dual BSD/GPL"; cache_user_symbols = NONE; unstable_tseries = enable; } BEGIN { }`,
			want: Settings{"max_strlen": uint64(16), "max_map_keys": uint64(5), "max_probes": uint64(7), "missing_probes": "warn",
				"print_maps_on_exit": false, "stack_mode": "perf", "license": "Dual BSD/GPL", "cache_user_symbols": "none", "unstable_tseries": true},
		},
		{
			name: "the environment overrides the block",
			src:  "config = { max_strlen = 16; log_size = 100 } BEGIN { }",
			env:  map[string]string{"BPFTRACE_MAX_STRLEN": "20"},
			want: Settings{"log_size": uint64(100)},
		},
		{
			name:     "renamed and deprecated keys",
			src:      "config = { strlen = 16; unstable_map_decl = 1 } BEGIN { }",
			want:     Settings{"max_strlen": uint64(16)},
			warnings: []string{"t:1:12: warning: strlen has been renamed, please use max_strlen\nconfig = { strlen = 16; unstable_map_decl = 1 } BEGIN { }\n           ^~~~~~~~~~~", "t:1:25: warning: unstable_map_decl is deprecated and has no effect\nconfig = { strlen = 16; unstable_map_decl = 1 } BEGIN { }\n                        ^~~~~~~~~~~~~~~~~~~~~"},
		},
		{
			name: "str_trunc_trailer",
			src:  `config = { str_trunc_trailer = "..." } BEGIN { }`,
			want: Settings{"str_trunc_trailer": "..."},
		},
		{
			name:     "a key kinst takes without following it in the 0.17 mode",
			src:      `config = { str_trunc_trailer = "..." } BEGIN { }`,
			mode:     compat.V017,
			want:     Settings{"str_trunc_trailer": "..."},
			warnings: []string{"t:1:12: warning: str_trunc_trailer has no effect: kinst truncates strings without a trailer\nconfig = { str_trunc_trailer = \"...\" } BEGIN { }\n           ^~~~~~~~~~~~~~~~~~~~~~~~~"},
		},
		{
			name: "show_debug_info",
			src:  "config = { show_debug_info = 0 } BEGIN { }",
			want: Settings{"show_debug_info": false},
		},
		{
			name:     "show_debug_info in the 0.17 mode",
			src:      "config = { show_debug_info = 0 } BEGIN { }",
			mode:     compat.V017,
			want:     Settings{"show_debug_info": false},
			warnings: []string{"t:1:12: warning: show_debug_info has no effect: bpftrace 0.17 prints no source lines in stacks\nconfig = { show_debug_info = 0 } BEGIN { }\n           ^~~~~~~~~~~~~~~~~~~"},
		},
		{
			name: "unknown key",
			src:  "config = { bad_config = 1 } BEGIN { }",
			err:  "t:1:12: bad_config: not a known configuration option\nconfig = { bad_config = 1 } BEGIN { }\n           ^~~~~~~~~~~~~~",
		},
		{
			name: "environment only",
			src:  "config = { BPFTRACE_VMLINUX = \"/x\" } BEGIN { }",
			err:  "t:1:12: BPFTRACE_VMLINUX: can only be set as an environment variable\nconfig = { BPFTRACE_VMLINUX = \"/x\" } BEGIN { }\n           ^~~~~~~~~~~~~~~~~~~~~~~",
		},
		{
			name: "bad values",
			src:  "config = { max_strlen = big; missing_probes = 1 } BEGIN { }",
			err: "t:1:12: max_strlen: expecting a number, got big\nconfig = { max_strlen = big; missing_probes = 1 } BEGIN { }\n           ^~~~~~~~~~~~~~~~\n" +
				"t:1:30: missing_probes: Invalid value for missing_probes: valid values are ignore, warn, and error.\nconfig = { max_strlen = big; missing_probes = 1 } BEGIN { }\n                             ^~~~~~~~~~~~~~~~~~",
		},
		{
			name: "a string size kinst cannot hold",
			src:  "config = { max_strlen = 70000 } BEGIN { }",
			err:  "t:1:12: max_strlen: kinst's strings hold 1 to 65536 bytes, not 70000\nconfig = { max_strlen = 70000 } BEGIN { }\n           ^~~~~~~~~~~~~~~~~~",
		},
		{
			name: "an unknown stack mode",
			src:  "config = { stack_mode = hex } BEGIN { }",
			err:  "t:1:12: stack_mode: Invalid value for stack_mode: valid values are bpftrace, raw, perf, and build_id.\nconfig = { stack_mode = hex } BEGIN { }\n           ^~~~~~~~~~~~~~~~",
		},
		{
			name: "license",
			src:  `config = { license = "MIT" } BEGIN { }`,
			err:  "t:1:12: license: Invalid value for license. Found: MIT. Valid values: GPL, GPL v2, GPL and additional rights, Dual BSD/GPL, Dual MIT/GPL, Dual MPL/GPL\nconfig = { license = \"MIT\" } BEGIN { }\n           ^~~~~~~~~~~~~~~",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			prog, err := syntax.Parse("t", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			got, err := ReadConfig(prog, tt.mode, func(e *syntax.Error) { warnings = append(warnings, e.Detail()) })
			if tt.err != "" {
				var details []string
				if list, ok := err.(syntax.ErrorList); ok {
					for _, e := range list {
						details = append(details, e.Detail())
					}
				}
				if msg := strings.Join(details, "\n"); msg != tt.err {
					t.Fatalf("error:\n%s\nwant\n%s", msg, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("settings %v, want %v", got, tt.want)
			}
			if strings.Join(warnings, "\n") != strings.Join(tt.warnings, "\n") {
				t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(warnings, "\n"), strings.Join(tt.warnings, "\n"))
			}
		})
	}
}

func TestUnusedMapDeclaration(t *testing.T) {
	var warnings []string
	_, err := checkSrc(t, "let @a = hash(2);\nlet @b = lruhash(3);\nBEGIN { @b[1] = 2; }", &Config{Warn: func(e *syntax.Error) { warnings = append(warnings, e.Detail()) }})
	if err != nil {
		t.Fatal(err)
	}
	want := "t:1:1: warning: Unused map: @a\nlet @a = hash(2);\n^~~~~~~~~~~~~~~~"
	if got := strings.Join(warnings, "\n"); got != want {
		t.Errorf("warnings:\n%s\nwant\n%s", got, want)
	}
}

// TestStackMode: stack_mode sets the mode of kstack and ustack where
// the call does not name one. A kstack left in build_id mode, which the
// kernel's frames have no build IDs for, falls back to raw with a
// warning, as in bpftrace 0.26.1.
func TestStackMode(t *testing.T) {
	for _, tt := range []struct{ mode, src, want, warning string }{
		{"", "kprobe:f { @x = kstack; }", "bpftrace", ""},
		{"perf", "kprobe:f { @x = kstack; }", "perf", ""},
		{"perf", "kprobe:f { @x = kstack(); }", "perf", ""},
		{"perf", "kprobe:f { @x = kstack(bpftrace); }", "bpftrace", ""},
		{"raw", "kprobe:f { @x = kstack; }", "raw", ""},
		{"raw", "uprobe:/bin/sh:main { @x = ustack(perf, 3); }", "perf", ""},
		{"", "uprobe:/bin/sh:main { @x = ustack(build_id); }", "build_id", ""},
		{"build_id", "uprobe:/bin/sh:main { @x = ustack; }", "build_id", ""},
		{"build_id", "kprobe:f { @x = kstack; }", "raw",
			"t:1:17: warning: 'build_id' stack mode can only be used for ustack. Falling back to 'raw' mode.\nkprobe:f { @x = kstack; }\n                ^~~~~~"},
	} {
		var warnings []string
		prog, err := checkSrc(t, tt.src, &Config{StackMode: tt.mode, Warn: func(e *syntax.Error) { warnings = append(warnings, e.Detail()) }})
		if err != nil {
			t.Fatal(err)
		}
		if got := prog.Map("x").Value.StackMode; got != tt.want {
			t.Errorf("%s with stack_mode %q: mode %s, want %s", tt.src, tt.mode, got, tt.want)
		}
		if got := strings.Join(warnings, "\n"); got != tt.warning {
			t.Errorf("%s with stack_mode %q: warnings:\n%s\nwant:\n%s", tt.src, tt.mode, got, tt.warning)
		}
	}
}

// TestMissingProbes: what an attach point that names nothing does
// beside one that resolves, as missing_probes says.
func TestMissingProbes(t *testing.T) {
	src := "kprobe:f, tracepoint:a:b { }"
	for _, tt := range []struct{ mode, warning, err string }{
		{"", "t:1:11: warning: no matches for tracepoint a:b; left out of the probe", ""},
		{"warn", "t:1:11: warning: no matches for tracepoint a:b; left out of the probe", ""},
		{"ignore", "", ""},
		{"error", "", "t:1:11: no matches for tracepoint a:b; if this is expected, set the 'missing_probes' config variable to 'warn'"},
	} {
		var warnings []string
		_, err := checkSrc(t, src, &Config{MissingProbes: tt.mode, Warn: func(e *syntax.Error) { warnings = append(warnings, e.Error()) }})
		if got := strings.Join(warnings, "\n"); got != tt.warning {
			t.Errorf("missing_probes %q: warnings %q, want %q", tt.mode, got, tt.warning)
		}
		if got := fmtErr(err); got != tt.err {
			t.Errorf("missing_probes %q: error %q, want %q", tt.mode, got, tt.err)
		}
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
