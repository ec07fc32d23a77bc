//go:build !amd64

package session

// stub is nil where kinst has no -c stub: the command is started
// directly (see execstub.go).
var stub []byte
