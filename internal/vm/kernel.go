package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Series lists the kernel series the bench tests against, oldest first.
var Series = []string{"6.1", "6.12"}

// ErrNoKernel reports that no kernel of a series is cached or available.
var ErrNoKernel = errors.New("no kernel")

// A Kernel is a bootable kernel image and what is known about it.
type Kernel struct {
	Series  string // "6.1" or "6.12"; empty for a kernel given by path
	Release string // what uname -r prints, e.g. "6.12.117+deb12-cloud-amd64"
	Image   string // path of the bzImage (vmlinuz)
	Config  string // path of its build configuration, or "" when unknown
	// Modules is a folder of the kernel's modules laid out as under
	// /lib/modules/RELEASE, holding GuestModules; "" when none are kept.
	Modules string
}

func (k Kernel) String() string {
	return "Linux " + k.Release
}

// The cache holds one folder per release with the files below, so a cached
// kernel is found without asking apt.
const (
	cachedImage   = "vmlinuz"
	cachedConfig  = "config"
	cachedModules = "modules"
)

// GuestModules are the modules, as paths under /lib/modules/RELEASE, that
// the cache keeps of each kernel and the guests get at the same place:
// tests of probes on module functions load them. binfmt_misc needs no
// other module, and each fsopen("binfmt_misc") calls its
// bm_init_fs_context once. 6.1 ships it plain, 6.12 compressed.
// sch_plug defines a struct no other BTF has, for casts to module types.
var GuestModules = []string{
	"kernel/fs/binfmt_misc.ko", "kernel/fs/binfmt_misc.ko.xz",
	"kernel/net/sched/sch_plug.ko", "kernel/net/sched/sch_plug.ko.xz",
}

// keptModules names the file in a cache's modules folder that lists the
// GuestModules it was made for: a cache made for another list is fetched
// again.
const keptModules = ".kept"

func keptList() string { return strings.Join(GuestModules, "\n") + "\n" }

// CacheDir returns the folder where kernels are cached: $KINST_KERNEL_CACHE if
// set, else .cache/kernels under the root of the kinst module containing the
// working directory, else kinst/kernels under the user's cache folder.
func CacheDir() string {
	if dir := os.Getenv("KINST_KERNEL_CACHE"); dir != "" {
		return dir
	}
	if root, err := ModuleRoot(); err == nil {
		return filepath.Join(root, ".cache", "kernels")
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "kinst", "kernels")
	}
	return filepath.Join(os.TempDir(), "kinst-kernels")
}

// ModulePath is the module whose root ModuleRoot looks for.
const ModulePath = "kinst.dev/kinst"

// ModuleRoot returns the root folder of the kinst module that contains the
// working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && declaresModule(string(data)) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", ModulePath)
		}
		dir = parent
	}
}

// declaresModule reports whether a go.mod file's module directive names
// ModulePath.
func declaresModule(gomod string) bool {
	for line := range strings.Lines(gomod) {
		if path, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			path, _, _ = strings.Cut(path, "//")
			return strings.Trim(strings.TrimSpace(path), `"`) == ModulePath
		}
	}
	return false
}

// Resolve turns a kernel name into a kernel: a series such as "6.12" becomes
// the newest cached kernel of that series, fetched first when none is cached;
// anything else is taken as the path of a bzImage.
func Resolve(ctx context.Context, cacheDir, name string) (Kernel, error) {
	if slices.Contains(Series, name) {
		k, err := Cached(cacheDir, name)
		if errors.Is(err, ErrNoKernel) {
			return Fetch(ctx, cacheDir, name)
		}
		return k, err
	}
	if _, err := os.Stat(name); err != nil {
		return Kernel{}, fmt.Errorf("kernel %q is neither a series (%s) nor a file: %w",
			name, strings.Join(Series, ", "), err)
	}
	return FromImage(name)
}

// FromImage describes the bzImage at path, reading its release from the image
// header and taking config-RELEASE or config beside it as its configuration.
func FromImage(path string) (Kernel, error) {
	release, err := imageRelease(path)
	if err != nil {
		return Kernel{}, err
	}
	k := Kernel{Release: release, Image: path}
	dir := filepath.Dir(path)
	for _, name := range []string{"config-" + release, cachedConfig} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			k.Config = filepath.Join(dir, name)
			break
		}
	}
	return k, nil
}

// imageRelease reads the kernel release from a bzImage: the setup header keeps
// at offset 0x20e a pointer, relative to 0x200, to the version string, which
// starts with the release.
func imageRelease(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read kernel image: %w", err)
	}
	defer f.Close()
	var hdr [0x210]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return "", fmt.Errorf("read kernel image %s: %w", path, err)
	}
	if string(hdr[0x202:0x206]) != "HdrS" {
		return "", fmt.Errorf("kernel image %s: not a bzImage (no HdrS magic)", path)
	}
	off := int64(hdr[0x20e]) | int64(hdr[0x20f])<<8
	var ver [256]byte
	n, err := f.ReadAt(ver[:], off+0x200)
	if n == 0 {
		return "", fmt.Errorf("kernel image %s: version string: %w", path, err)
	}
	release, _, _ := strings.Cut(string(ver[:n]), " ")
	if release == "" || !(release[0] >= '0' && release[0] <= '9') {
		return "", fmt.Errorf("kernel image %s: no release in version string %q", path, release)
	}
	return release, nil
}

// Cached returns the newest kernel of series in cacheDir, or an error wrapping
// ErrNoKernel if there is none.
func Cached(cacheDir, series string) (Kernel, error) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Kernel{}, fmt.Errorf("kernel cache: %w", err)
	}
	var best string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !inSeries(name, series) {
			continue
		}
		if _, err := os.Stat(filepath.Join(cacheDir, name, cachedImage)); err != nil {
			continue
		}
		if best == "" || compareRelease(name, best) > 0 {
			best = name
		}
	}
	if best == "" {
		return Kernel{}, fmt.Errorf("%w of series %s cached in %s", ErrNoKernel, series, cacheDir)
	}
	return cachedKernel(cacheDir, series, best), nil
}

func cachedKernel(cacheDir, series, release string) Kernel {
	dir := filepath.Join(cacheDir, release)
	k := Kernel{Series: series, Release: release, Image: filepath.Join(dir, cachedImage)}
	if _, err := os.Stat(filepath.Join(dir, cachedConfig)); err == nil {
		k.Config = filepath.Join(dir, cachedConfig)
	}
	if b, err := os.ReadFile(filepath.Join(dir, cachedModules, keptModules)); err == nil && string(b) == keptList() {
		k.Modules = filepath.Join(dir, cachedModules)
	}
	return k
}

// FetchModules adds GuestModules to a kernel cached before the cache kept
// them, downloading its package again.
func FetchModules(ctx context.Context, cacheDir string, k Kernel) (Kernel, error) {
	if k.Series == "" || k.Modules != "" {
		return k, nil
	}
	unlock, err := lockFile(filepath.Join(cacheDir, ".lock"))
	if err != nil {
		return k, fmt.Errorf("kernel cache: %w", err)
	}
	defer unlock()
	k = cachedKernel(cacheDir, k.Series, k.Release)
	if k.Modules != "" {
		return k, nil // another process fetched them meanwhile
	}
	work, err := os.MkdirTemp(cacheDir, ".fetch-")
	if err != nil {
		return k, err
	}
	defer os.RemoveAll(work)
	tree, err := unpack(ctx, work, k.Release)
	if err != nil {
		return k, fmt.Errorf("fetch the modules of %s: %w", k.Release, err)
	}
	mods := filepath.Join(work, cachedModules)
	if err := keepModules(tree, k.Release, mods); err != nil {
		return k, err
	}
	// What an older list kept goes.
	if err := os.RemoveAll(filepath.Join(cacheDir, k.Release, cachedModules)); err != nil {
		return k, err
	}
	if err := os.Rename(mods, filepath.Join(cacheDir, k.Release, cachedModules)); err != nil {
		return k, err
	}
	return cachedKernel(cacheDir, k.Series, k.Release), nil
}

// keepModules moves those of GuestModules the package has from its
// unpacked tree into dir.
func keepModules(tree, release, dir string) error {
	for _, m := range GuestModules {
		src := filepath.Join(tree, "lib", "modules", release, m)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		dst := filepath.Join(dir, m)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(src, dst); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, keptModules), []byte(keptList()), 0o644)
}

// inSeries reports whether release belongs to series: "6.1.0-56-cloud-amd64"
// is in 6.1, "6.12.117+deb12-cloud-amd64" is in 6.12 and not in 6.1.
func inSeries(release, series string) bool {
	return strings.HasPrefix(release, series+".")
}

// compareRelease orders releases by comparing their runs of digits as numbers
// and everything else as text, so that 6.1.0-9 < 6.1.0-56 and 6.12.9 < 6.12.117.
func compareRelease(a, b string) int {
	for a != "" && b != "" {
		ra, rb := leadingRun(a), leadingRun(b)
		a, b = a[len(ra):], b[len(rb):]
		if isDigit(ra[0]) && isDigit(rb[0]) {
			na, nb := strings.TrimLeft(ra, "0"), strings.TrimLeft(rb, "0")
			if c := len(na) - len(nb); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(ra, rb); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func leadingRun(s string) string {
	digit := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == digit {
		i++
	}
	return s[:i]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// cloudPackage matches the packages of real cloud kernels: three-part version
// and an ABI or Debian suffix, excluding the meta, -dbg and -unsigned packages.
var cloudPackage = regexp.MustCompile(`^linux-image-([0-9]+\.[0-9]+\.[0-9]+[-+][0-9A-Za-z.+~-]*-cloud-amd64)$`)

// Newest returns the release of the newest linux-image-*-cloud-amd64 package
// of series in the apt index. When the index has none, it runs apt-get update
// once and looks again, so that it works on a fresh machine.
func Newest(ctx context.Context, series string) (string, error) {
	release, err := newestInIndex(ctx, series)
	if err != nil || release != "" {
		return release, err
	}
	if out, err := exec.CommandContext(ctx, "apt-get", "update").CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get update: %w\n%s", err, tail(out, 10))
	}
	release, err = newestInIndex(ctx, series)
	if err == nil && release == "" {
		err = fmt.Errorf("%w of series %s in the apt index (no linux-image-%s.*-cloud-amd64 package)", ErrNoKernel, series, series)
	}
	return release, err
}

func newestInIndex(ctx context.Context, series string) (string, error) {
	if _, err := exec.LookPath("apt-cache"); err != nil {
		return "", fmt.Errorf("kernels come from Debian's apt index and apt-cache is missing: %w", err)
	}
	pattern := `^linux-image-` + regexp.QuoteMeta(series) + `\..*-cloud-amd64$`
	out, err := exec.CommandContext(ctx, "apt-cache", "search", "--names-only", pattern).Output()
	if err != nil {
		return "", fmt.Errorf("apt-cache search %s: %w", pattern, err)
	}
	var best string
	for line := range strings.Lines(string(out)) {
		name, _, _ := strings.Cut(line, " ")
		m := cloudPackage.FindStringSubmatch(name)
		if m == nil || !inSeries(m[1], series) {
			continue
		}
		if best == "" || compareRelease(m[1], best) > 0 {
			best = m[1]
		}
	}
	return best, nil
}

// Fetch makes sure the newest kernel of series in the apt index is in
// cacheDir, downloading and unpacking it if needed, and returns it. Concurrent
// callers, in this process or others, download a release only once.
func Fetch(ctx context.Context, cacheDir, series string) (Kernel, error) {
	release, err := Newest(ctx, series)
	if err != nil {
		return Kernel{}, fmt.Errorf("find kernel %s: %w", series, err)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return Kernel{}, fmt.Errorf("kernel cache: %w", err)
	}
	unlock, err := lockFile(filepath.Join(cacheDir, ".lock"))
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel cache: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(cacheDir, release, cachedImage)); err == nil {
		return cachedKernel(cacheDir, series, release), nil
	}
	if err := download(ctx, cacheDir, release); err != nil {
		return Kernel{}, fmt.Errorf("fetch kernel %s: %w", release, err)
	}
	return cachedKernel(cacheDir, series, release), nil
}

// download fetches linux-image-RELEASE and moves its vmlinuz, config and
// GuestModules into cacheDir/RELEASE, renaming the finished folder into
// place last so that a cached folder is always complete.
func download(ctx context.Context, cacheDir, release string) error {
	work, err := os.MkdirTemp(cacheDir, ".fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	tree, err := unpack(ctx, work, release)
	if err != nil {
		return err
	}
	done := filepath.Join(work, release)
	if err := os.Mkdir(done, 0o755); err != nil {
		return err
	}
	boot := filepath.Join(tree, "boot")
	if err := os.Rename(filepath.Join(boot, "vmlinuz-"+release), filepath.Join(done, cachedImage)); err != nil {
		return fmt.Errorf("package has no kernel image: %w", err)
	}
	if err := os.Rename(filepath.Join(boot, "config-"+release), filepath.Join(done, cachedConfig)); err != nil {
		return fmt.Errorf("package has no kernel config: %w", err)
	}
	if err := keepModules(tree, release, filepath.Join(done, cachedModules)); err != nil {
		return err
	}
	return os.Rename(done, filepath.Join(cacheDir, release))
}

// unpack downloads linux-image-RELEASE into work and unpacks it there,
// returning the unpacked tree.
func unpack(ctx context.Context, work, release string) (string, error) {
	// Root's downloads into a folder that apt's sandbox user cannot write
	// would otherwise print a warning for every package.
	get := exec.CommandContext(ctx, "apt-get", "download", "-o", "APT::Sandbox::User=root", "linux-image-"+release)
	get.Dir = work
	if out, err := get.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download: %w\n%s", err, tail(out, 10))
	}
	debs, _ := filepath.Glob(filepath.Join(work, "*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download left %d packages, want 1", len(debs))
	}
	tree := filepath.Join(work, "tree")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], tree).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x: %w\n%s", err, tail(out, 10))
	}
	return tree, nil
}

// lockFile takes an exclusive flock on path, creating it if needed.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// tail returns the last n lines of out, for error messages.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
