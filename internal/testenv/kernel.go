package testenv

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A kernelInfo is what testenv knows about the running kernel.
type kernelInfo struct {
	release      string
	major, minor int
	config       map[string]string // CONFIG_X to "y", "m", a value, or "n"
	configFrom   string            // where config came from, "" if nowhere
	err          error
}

var kernel = sync.OnceValue(func() kernelInfo {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return kernelInfo{err: fmt.Errorf("uname: %w", err)}
	}
	k := kernelInfo{release: unix.ByteSliceToString(uts.Release[:])}
	var err error
	k.major, k.minor, err = parseVersion(k.release)
	if err != nil {
		k.err = err
		return k
	}
	// The bench packs the guest kernel's configuration as /boot/config-*.
	for _, path := range []string{"/proc/config.gz", "/boot/config-" + k.release} {
		if cfg, err := readConfig(path); err == nil {
			k.config, k.configFrom = cfg, path
			break
		}
	}
	return k
})

// parseVersion takes the major and minor numbers from a release such as
// "6.12.117+deb12-cloud-amd64".
func parseVersion(release string) (major, minor int, err error) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("kernel release %q: no major.minor", release)
	}
	major, err = strconv.Atoi(parts[0])
	if err == nil {
		digits := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
		if digits < 0 {
			digits = len(parts[1])
		}
		minor, err = strconv.Atoi(parts[1][:digits])
	}
	if err != nil {
		return 0, 0, fmt.Errorf("kernel release %q: %w", release, err)
	}
	return major, minor, nil
}

// A version is a kernel's major and minor numbers.
type version struct{ major, minor int }

func (v version) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// atLeast reports whether the kernel is version v or newer.
func (k kernelInfo) atLeast(v version) bool {
	return k.major > v.major || k.major == v.major && k.minor >= v.minor
}

// readConfig parses a kernel configuration, gzip-compressed when its name
// ends in .gz.
func readConfig(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	return parseConfig(r)
}

func parseConfig(r io.Reader) (map[string]string, error) {
	cfg := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "# "); ok {
			if name, ok := strings.CutSuffix(name, " is not set"); ok {
				cfg[name] = "n"
			}
			continue
		}
		if name, value, ok := strings.Cut(line, "="); ok && strings.HasPrefix(name, "CONFIG_") {
			cfg[name] = strings.Trim(value, `"`)
		}
	}
	return cfg, sc.Err()
}
