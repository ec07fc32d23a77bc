package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
)

// Buffering is when output reaches its destination, bpftrace's -B.
type Buffering int

// The buffering modes.
const (
	BufferDrained Buffering = iota // when no record is waiting: prompt, and cheap under load
	BufferLine                     // after every record
	BufferFull                     // when 64 KiB are pending, and at the end
	BufferNone                     // as BufferLine: records are written whole
)

// DefaultStrTrailer ends the strings that were cut short in the default
// mode unless BPFTRACE_STR_TRUNC_TRAILER says otherwise, as in bpftrace
// 0.26.1.
const DefaultStrTrailer = ".."

// strTrailer is what ends a string cut short in the mode of bpftrace
// release v: nothing in 0.17's, which marks none.
func (o *Options) strTrailer(v compat.Version) string {
	switch {
	case v == compat.V017 || o.NoStrTrailer:
		return ""
	case o.StrTrailer != "":
		return o.StrTrailer
	}
	return DefaultStrTrailer
}

// DefaultCatMax is how many bytes of a file cat() prints unless
// BPFTRACE_CAT_BYTES_MAX says otherwise, as in bpftrace 0.17.
const DefaultCatMax = 10240

// FromEnv sets the options bpftrace 0.17 reads from the environment at
// run time: BPFTRACE_CAT_BYTES_MAX (bytes cat() prints of a file, 0 for
// none), BPFTRACE_NO_USER_SYMBOLS (1 to print user addresses in hex),
// BPFTRACE_CACHE_USER_SYMBOLS (0 or NONE to read a process's symbols
// afresh for every address, PER_PROGRAM to resolve the frames of a
// process gone in the probed program), BPFTRACE_LOG_SIZE (the verifier log's first size)
// and BPFTRACE_PERF_RB_PAGES (the pages of packets skboutput() may queue
// on each CPU); and bpftrace 0.26.1's BPFTRACE_STR_TRUNC_TRAILER (what
// ends a string cut short) and BPFTRACE_SHOW_DEBUG_INFO (0 or false
// to print user stacks without source lines).
func (o *Options) FromEnv() error {
	if v := os.Getenv("BPFTRACE_PERF_RB_PAGES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n&(n-1) != 0 {
			return fmt.Errorf("BPFTRACE_PERF_RB_PAGES=%q is not a power of two", v)
		}
		o.PacketPages = n
	}
	if v := os.Getenv("BPFTRACE_LOG_SIZE"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return fmt.Errorf("BPFTRACE_LOG_SIZE=%q is not a positive number of bytes", v)
		}
		o.LogSize = uint32(n)
	}
	switch v := os.Getenv("BPFTRACE_CACHE_USER_SYMBOLS"); strings.ToLower(v) {
	case "", "1", "auto", "per_pid":
	case "0", "none":
		o.NoSymbolCache = true
	case "per_program":
		o.ProgramSymbols = true
	default:
		return fmt.Errorf("BPFTRACE_CACHE_USER_SYMBOLS=%q: want PER_PID, PER_PROGRAM, NONE, 1 or 0", v)
	}
	for _, name := range []string{"BPFTRACE_MAX_CAT_BYTES", "BPFTRACE_CAT_BYTES_MAX"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q is not a number of bytes", name, v)
		}
		o.CatMax, o.NoCat = n, n == 0
		break
	}
	if v, ok := os.LookupEnv("BPFTRACE_STR_TRUNC_TRAILER"); ok {
		o.StrTrailer, o.NoStrTrailer = v, v == ""
	}
	on, err := envBool("BPFTRACE_NO_USER_SYMBOLS")
	if err != nil {
		return err
	}
	o.NoUserSymbols = on
	switch v := os.Getenv("BPFTRACE_PRINT_MAPS_ON_EXIT"); v {
	case "", "1", "true":
	case "0", "false":
		o.NoExitMaps = true
	default:
		return fmt.Errorf("BPFTRACE_PRINT_MAPS_ON_EXIT=%q: want true, false, 1 or 0", v)
	}
	switch v := os.Getenv("BPFTRACE_SHOW_DEBUG_INFO"); v {
	case "", "1", "true":
	case "0", "false":
		o.NoDebugInfo = true
	default:
		return fmt.Errorf("BPFTRACE_SHOW_DEBUG_INFO=%q: want true, false, 1 or 0", v)
	}
	return nil
}

// Configure applies the settings of a program's config block (bpftrace
// 0.26.1) that concern its runs, where the environment has not set
// them: the environment overrides the block, as in bpftrace, and
// check.ReadConfig has left out what the environment sets.
func (o *Options) Configure(s check.Settings) {
	if v, ok := s.Int("log_size"); ok && v > 0 {
		o.LogSize = uint32(min(v, 1<<32-1))
	}
	if v, ok := s.Int("max_cat_bytes"); ok {
		o.CatMax, o.NoCat = int64(min(v, 1<<62)), v == 0
	}
	if v, ok := s.Int("perf_rb_pages"); ok && v > 0 {
		o.PacketPages = int(min(v, 1<<20))
	}
	if v, ok := s.Str("cache_user_symbols"); ok {
		o.NoSymbolCache, o.ProgramSymbols = v == "none", v == "per_program"
	}
	if v, ok := s.Bool("print_maps_on_exit"); ok {
		o.NoExitMaps = !v
	}
	if v, ok := s.Bool("show_debug_info"); ok {
		o.NoDebugInfo = !v
	}
	if v, ok := s.Str("str_trunc_trailer"); ok {
		o.StrTrailer, o.NoStrTrailer = v, v == ""
	}
}

// envBool reads a 0 or 1 setting; unset is 0.
func envBool(name string) (bool, error) {
	switch v := os.Getenv(name); v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want 0 or 1", name, v)
	}
}
