package runhook

import (
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/session"
)

// A Func adjusts the runtime's options for the compiled program out
// before the run starts. The Maps and Attached hooks it sets are called
// along with those package kinst needs.
type Func func(out *codegen.Output, opts *session.Options)

var set func(ro any, f Func)

// Register installs package kinst's setter; kinst calls it at init.
func Register(setter func(ro any, f Func)) {
	set = setter
}

// Set makes a run started with ro, which must be a *kinst.RunOptions,
// call f before it starts; nil f calls nothing.
func Set(ro any, f Func) {
	set(ro, f)
}

// Serve makes g's scrapes read the maps of the run of out, their keys
// labelled as prom.KeyLabels names them. The maps are then not printed
// at exit as bpftrace prints them; an exit hook already set, an
// instrument's table or profile, still runs.
func Serve(g *prom.Gatherer, out *codegen.Output, opts *session.Options) {
	g.SetLabels(prom.KeyLabels(out))
	opts.Maps = func(r *session.MapReader) { g.SetSource(r) }
	if opts.ExitMaps == nil {
		opts.ExitMaps = func([]*output.Map) error { return nil }
	}
}
