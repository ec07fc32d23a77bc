// Package runhook lets code inside the kinst module adjust the runtime's
// options for a run of a kinst.Program, which package kinst's API does
// not offer: the kinst command's Prometheus and pprof exporters feed on
// the runtime's hooks, and its instruments render records and maps
// themselves through them.
//
// The hooks are the runtime's own types, which would tie kinst's small
// public API to every change of the runtime; being internal, this
// package keeps them out of it while the module's commands still reach
// them. Package kinst registers the setter when it is initialised, and
// takes its *kinst.RunOptions as any, because this package cannot
// import the package that imports it.
package runhook
