package check

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

// Settings are the values of a program's config block (bpftrace 0.26.1),
// by key in lower case without the bpftrace_ prefix. An integer option
// holds a uint64, a boolean one a bool, the others a string as written
// (missing_probes and cache_user_symbols in lower case).
type Settings map[string]any

// Int returns an integer option and whether the block sets it.
func (s Settings) Int(key string) (uint64, bool) { v, ok := s[key].(uint64); return v, ok }

// Bool returns a boolean option and whether the block sets it.
func (s Settings) Bool(key string) (bool, bool) { v, ok := s[key].(bool); return v, ok }

// Str returns a text option and whether the block sets it.
func (s Settings) Str(key string) (string, bool) { v, ok := s[key].(string); return v, ok }

// An optionKind says how an option's value reads.
type optionKind int

const (
	optInt optionKind = iota
	optBool
	optText
	optMissing  // error, warn, ignore
	optSymCache // per_pid, per_program, none, 0, 1
	optLicense
	optUnstable // enable, warn, error, true, false, 1, 0
	optStack    // bpftrace, perf, raw, build_id
)

// option describes one of bpftrace 0.26.1's configuration options;
// ignored, when set, is why kinst takes the option without following
// it, which a warning says; ignored017 is why in the 0.17 mode only.
type option struct {
	kind       optionKind
	ignored    string
	ignored017 string
}

// options are the keys bpftrace 0.26.1 knows.
var options = map[string]option{
	"cache_user_symbols":        {kind: optSymCache},
	"cpp_demangle":              {kind: optBool, ignored: "kinst does not demangle C++ names"},
	"lazy_symbolication":        {kind: optBool, ignored: "kinst resolves symbols as bpftrace does by default"},
	"license":                   {kind: optLicense},
	"log_size":                  {kind: optInt},
	"max_bpf_progs":             {kind: optInt, ignored: "kinst bounds probes only (max_probes)"},
	"max_cat_bytes":             {kind: optInt},
	"max_map_keys":              {kind: optInt},
	"max_probes":                {kind: optInt},
	"max_strlen":                {kind: optInt},
	"missing_probes":            {kind: optMissing},
	"on_stack_limit":            {kind: optInt, ignored: "kinst places values on the stack or in scratch maps by its own rules"},
	"perf_rb_pages":             {kind: optInt},
	"print_maps_on_exit":        {kind: optBool},
	"show_debug_info":           {kind: optBool, ignored017: "bpftrace 0.17 prints no source lines in stacks"},
	"stack_mode":                {kind: optStack},
	"str_trunc_trailer":         {kind: optText, ignored017: "kinst truncates strings without a trailer"},
	"use_blazesym":              {kind: optBool, ignored: "kinst has its own symbolizer"},
	"unstable_import_statement": {kind: optUnstable},
	"unstable_tseries":          {kind: optUnstable},
	"unstable_typeinfo":         {kind: optUnstable},
	"unstable_dw_ustack":        {kind: optUnstable},
}

// Keys bpftrace 0.26.1 renamed, deprecated, or reads from the
// environment only.
var (
	renamedOptions = map[string]string{
		"strlen": "max_strlen", "no_cpp_demangle": "cpp_demangle",
		"cat_bytes_max": "max_cat_bytes", "map_keys_max": "max_map_keys",
	}
	deprecatedOptions = map[string]bool{
		"symbol_source": true, "max_type_res_iterations": true, "unstable_addr": true,
		"unstable_import": true, "unstable_macro": true, "unstable_map_decl": true,
	}
	envOnlyOptions = map[string]bool{"btf": true, "kernel_build": true, "kernel_source": true, "vmlinux": true}
)

// licenses are the licenses bpftrace 0.26.1 accepts, all of which the
// kernel counts as GPL-compatible.
var licenses = []string{"GPL", "GPL v2", "GPL and additional rights", "Dual BSD/GPL", "Dual MIT/GPL", "Dual MPL/GPL"}

// EnvName is the environment variable that sets option key and
// overrides the config block: BPFTRACE_ and the key in upper case.
func EnvName(key string) string { return "BPFTRACE_" + strings.ToUpper(key) }

// ReadConfig reads prog's config block, in the mode of bpftrace
// release mode. A key may be written in any case, with or without the
// bpftrace_ prefix. Options the environment sets (see EnvName) are left
// out: the environment overrides the block. warn, if set, receives the
// warnings; the error, if any, is a syntax.ErrorList.
func ReadConfig(prog *syntax.Program, mode compat.Version, warn func(*syntax.Error)) (Settings, error) {
	s := Settings{}
	var errs, warnings syntax.ErrorList
	for _, it := range prog.Config {
		key := strings.TrimPrefix(strings.ToLower(it.Key), "bpftrace_")
		if deprecatedOptions[key] {
			warnings.Warn(prog.File, it.Pos(), it.End(), "%s is deprecated and has no effect", it.Key)
			continue
		}
		if to, ok := renamedOptions[key]; ok {
			warnings.Warn(prog.File, it.Pos(), it.End(), "%s has been renamed, please use %s", it.Key, to)
			key = to
		}
		opt, ok := options[key]
		if !ok {
			msg := "not a known configuration option"
			if envOnlyOptions[key] {
				msg = "can only be set as an environment variable"
			}
			errs.Add(prog.File, it.Pos(), it.End(), "%s: %s", it.Key, msg)
			continue
		}
		v, err := opt.parse(it.Value)
		if err != nil {
			errs.Add(prog.File, it.Pos(), it.End(), "%s: %v", it.Key, err)
			continue
		}
		if n, ok := v.(uint64); ok && key == "max_strlen" && (n < 1 || n > MaxStrLen) {
			errs.Add(prog.File, it.Pos(), it.End(), "%s: kinst's strings hold 1 to %d bytes, not %d", it.Key, MaxStrLen, n)
			continue
		}
		ignored := opt.ignored
		if mode == compat.V017 && opt.ignored017 != "" {
			ignored = opt.ignored017
		}
		if ignored != "" {
			warnings.Warn(prog.File, it.Pos(), it.End(), "%s has no effect: %s", it.Key, ignored)
		}
		if _, set := os.LookupEnv(EnvName(key)); !set {
			s[key] = v
		}
	}
	if warn != nil {
		for _, w := range warnings {
			warn(w)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

// parse reads an option's value: an integer literal, a string, or a
// bare word (true, false, warn, …).
func (o option) parse(x syntax.Expr) (any, error) {
	var text string
	num, isNum := uint64(0), false
	switch x := x.(type) {
	case *syntax.IntLit:
		num, isNum, text = x.Value, true, strconv.FormatUint(x.Value, 10)
	case *syntax.StringLit:
		text = x.Value
	case *syntax.Ident:
		text = x.Name
	}
	switch o.kind {
	case optInt:
		if !isNum {
			n, err := strconv.ParseUint(text, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("expecting a number, got %s", text)
			}
			num = n
		}
		return num, nil
	case optBool, optUnstable:
		switch strings.ToLower(text) {
		case "true", "1", "enable":
			return true, nil
		case "false", "0", "error":
			return false, nil
		case "warn":
			if o.kind == optUnstable {
				return true, nil
			}
		}
		if o.kind == optUnstable {
			return nil, fmt.Errorf("Invalid value for unstable config: valid values are enable, warn, and error.")
		}
		return nil, fmt.Errorf("Invalid bool value: valid values are true, false, 1 or 0.")
	case optMissing:
		switch t := strings.ToLower(text); t {
		case "error", "warn", "ignore":
			if !isNum {
				return t, nil
			}
		}
		return nil, fmt.Errorf("Invalid value for missing_probes: valid values are ignore, warn, and error.")
	case optSymCache:
		switch t := strings.ToLower(text); t {
		case "1", "per_pid":
			return "per_pid", nil
		case "per_program":
			return "per_program", nil
		case "0", "none":
			return "none", nil
		}
		return nil, fmt.Errorf("Invalid value for cache_user_symbols: valid values are PER_PID, PER_PROGRAM, and NONE.")
	case optLicense:
		for _, l := range licenses {
			if text == l && !isNum {
				return text, nil
			}
		}
		return nil, fmt.Errorf("Invalid value for license. Found: %s. Valid values: %s", text, strings.Join(licenses, ", "))
	case optStack:
		switch text {
		case "bpftrace", "perf", "raw", "build_id":
			return text, nil
		}
		return nil, fmt.Errorf("Invalid value for stack_mode: valid values are bpftrace, raw, perf, and build_id.")
	}
	return text, nil
}
