package output

import "os"

// Create opens the file -o names, for every kinst command alike: created
// if missing, truncated, and opened write-only so that a named pipe
// waits here for its reader and a reader that goes away fails the next
// write, as a pipe on standard output does.
func Create(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}
