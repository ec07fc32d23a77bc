package kernel

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// isMounted reports whether dir is the root of a mount of the given file
// system type, judged by the magic number statfs reports for it.
func isMounted(dir string, magic int64) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return int64(st.Type) == magic
}

// mountIfAbsent mounts a pseudo file system of type fstype on dir unless one
// is there already. Only root can mount; others get a clear error.
func mountIfAbsent(fstype, dir string, magic int64) error {
	if isMounted(dir, magic) {
		return nil
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("mount %s on %s: %w", fstype, dir, err)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("mount %s on %s: %w (only root can mount it)", fstype, dir, os.ErrPermission)
	}
	if err := unix.Mount("nodev", dir, fstype, 0, ""); err != nil {
		if errors.Is(err, unix.EBUSY) && isMounted(dir, magic) {
			// Another process mounted it between our check and our mount.
			return nil
		}
		return fmt.Errorf("mount %s on %s: %w", fstype, dir, err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
