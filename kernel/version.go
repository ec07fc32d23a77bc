package kernel

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Version is a kernel version, major.minor.patch.
type Version struct {
	Major, Minor, Patch int
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

var versionCache struct {
	once sync.Once
	v    Version
	err  error
}

// KernelVersion returns the running kernel's version. Distribution kernels
// whose release string hides the real patch level (Debian's
// "6.1.0-18-cloud-amd64", Ubuntu's) are read the way cilium/ebpf reads them.
func KernelVersion() (Version, error) {
	versionCache.once.Do(func() {
		code, err := features.LinuxVersionCode()
		if err != nil {
			versionCache.err = fmt.Errorf("kernel version: %w", err)
			return
		}
		// LINUX_VERSION_CODE packs the patch level into 8 bits, so
		// cilium/ebpf clamps it to 255.
		versionCache.v = Version{int(code >> 16), int(code >> 8 & 0xff), int(code & 0xff)}
	})
	return versionCache.v, versionCache.err
}

// Release returns the kernel release string, as `uname -r` prints it.
func Release() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}
