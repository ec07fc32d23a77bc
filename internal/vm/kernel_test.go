package vm

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCompareRelease(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int // sign
	}{
		{"6.1.0-56-cloud-amd64", "6.1.0-9-cloud-amd64", 1},
		{"6.1.0-9-cloud-amd64", "6.1.0-56-cloud-amd64", -1},
		{"6.12.117+deb12-cloud-amd64", "6.12.9+deb12-cloud-amd64", 1},
		{"6.12.117+deb12-cloud-amd64", "6.12.117+deb12-cloud-amd64", 0},
		{"6.12.100+deb12-cloud-amd64", "6.12.101+deb12-cloud-amd64", -1},
		{"6.1.0-056-cloud-amd64", "6.1.0-56-cloud-amd64", 0},
		{"6.1.0-56", "6.1.0-56-cloud-amd64", -1},
	} {
		got := compareRelease(tt.a, tt.b)
		if sign(got) != tt.want {
			t.Errorf("compareRelease(%q, %q) = %d, want sign %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestInSeries(t *testing.T) {
	for _, tt := range []struct {
		release, series string
		want            bool
	}{
		{"6.1.0-56-cloud-amd64", "6.1", true},
		{"6.12.117+deb12-cloud-amd64", "6.1", false},
		{"6.12.117+deb12-cloud-amd64", "6.12", true},
		{"6.1.0-56-cloud-amd64", "6.12", false},
	} {
		if got := inSeries(tt.release, tt.series); got != tt.want {
			t.Errorf("inSeries(%q, %q) = %v", tt.release, tt.series, got)
		}
	}
}

func TestCloudPackage(t *testing.T) {
	for _, tt := range []struct {
		name, release string
	}{
		{"linux-image-6.1.0-56-cloud-amd64", "6.1.0-56-cloud-amd64"},
		{"linux-image-6.12.117+deb12-cloud-amd64", "6.12.117+deb12-cloud-amd64"},
		{"linux-image-6.12-cloud-amd64", ""},
		{"linux-image-6.1.0-56-cloud-amd64-dbg", ""},
		{"linux-image-6.1.0-56-cloud-amd64-unsigned", ""},
		{"linux-image-cloud-amd64", ""},
		{"linux-image-6.1.0-56-amd64", ""},
	} {
		got := ""
		if m := cloudPackage.FindStringSubmatch(tt.name); m != nil {
			got = m[1]
		}
		if got != tt.release {
			t.Errorf("release of %s = %q, want %q", tt.name, got, tt.release)
		}
	}
}

// fakeImage writes the start of a bzImage whose version string is version.
func fakeImage(t *testing.T, path, version string) {
	t.Helper()
	img := make([]byte, 0x600)
	copy(img[0x202:], "HdrS")
	const at = 0x300 // version string offset minus 0x200
	img[0x20e], img[0x20f] = byte(at&0xff), byte(at>>8)
	img = append(img[:at+0x200], append([]byte(version), 0)...)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFromImage(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "vmlinuz-6.12.117+deb12-cloud-amd64")
	fakeImage(t, img, "6.12.117+deb12-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP")
	if err := os.WriteFile(filepath.Join(dir, "config-6.12.117+deb12-cloud-amd64"), []byte("CONFIG_KPROBES=y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := FromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	want := Kernel{Release: "6.12.117+deb12-cloud-amd64", Image: img, Config: filepath.Join(dir, "config-6.12.117+deb12-cloud-amd64")}
	if k != want {
		t.Errorf("FromImage = %+v, want %+v", k, want)
	}

	notImage := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notImage, make([]byte, 0x300), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromImage(notImage); err == nil || err.Error() != "kernel image "+notImage+": not a bzImage (no HdrS magic)" {
		t.Errorf("FromImage(text file) error = %v", err)
	}
}

func TestCached(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{"6.1.0-9-cloud-amd64", "6.1.0-56-cloud-amd64", "6.12.9+deb12-cloud-amd64", "6.12.117+deb12-cloud-amd64"} {
		if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel, cachedImage), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// An interrupted download leaves a folder without an image; it is not a kernel.
	if err := os.MkdirAll(filepath.Join(dir, "6.1.0-99-cloud-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "6.1.0-56-cloud-amd64", cachedConfig), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "6.1.0-56-cloud-amd64", cachedModules), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "6.1.0-56-cloud-amd64", cachedModules, keptModules), []byte(keptList()), 0o644); err != nil {
		t.Fatal(err)
	}
	// Modules kept for another list are not the ones the guests need.
	if err := os.MkdirAll(filepath.Join(dir, "6.12.117+deb12-cloud-amd64", cachedModules), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "6.12.117+deb12-cloud-amd64", cachedModules, keptModules), []byte("kernel/fs/binfmt_misc.ko\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		series string
		want   Kernel
	}{
		{"6.1", Kernel{Series: "6.1", Release: "6.1.0-56-cloud-amd64",
			Image:   filepath.Join(dir, "6.1.0-56-cloud-amd64", cachedImage),
			Config:  filepath.Join(dir, "6.1.0-56-cloud-amd64", cachedConfig),
			Modules: filepath.Join(dir, "6.1.0-56-cloud-amd64", cachedModules)}},
		{"6.12", Kernel{Series: "6.12", Release: "6.12.117+deb12-cloud-amd64",
			Image: filepath.Join(dir, "6.12.117+deb12-cloud-amd64", cachedImage)}},
	} {
		got, err := Cached(dir, tt.series)
		if err != nil || got != tt.want {
			t.Errorf("Cached(%s) = %+v, %v; want %+v", tt.series, got, err, tt.want)
		}
	}
	_, err := Cached(dir, "5.10")
	if !errors.Is(err, ErrNoKernel) || err.Error() != "no kernel of series 5.10 cached in "+dir {
		t.Errorf("Cached(5.10) error = %v", err)
	}
	_, err = Cached(filepath.Join(dir, "absent"), "6.1")
	if !errors.Is(err, ErrNoKernel) {
		t.Errorf("Cached in a missing folder: %v, want ErrNoKernel", err)
	}
}

// keepModules keeps those of GuestModules a package has, at the same
// place under the cache's modules folder, and nothing else.
func TestKeepModules(t *testing.T) {
	tree, dir := t.TempDir(), filepath.Join(t.TempDir(), "modules")
	rel := "6.12.117+deb12-cloud-amd64"
	for _, m := range []string{"kernel/fs/binfmt_misc.ko.xz", "kernel/fs/isofs/isofs.ko.xz"} {
		p := filepath.Join(tree, "lib", "modules", rel, m)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := keepModules(tree, rel, dir); err != nil {
		t.Fatal(err)
	}
	var kept []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			kept = append(kept, rel)
		}
		return nil
	})
	if want := []string{".kept", "kernel/fs/binfmt_misc.ko.xz"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
}

// A kernel cached before the cache kept modules gets them with one more
// download, and only one.
func TestFetchModules(t *testing.T) {
	const release = "6.1.0-56-cloud-amd64"
	log := fakeApt(t, indexPackages, kernelDeb(t, release))
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, release), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cache, release, cachedImage), "", 0o644)
	k, err := Cached(cache, "6.1")
	if err != nil || k.Modules != "" {
		t.Fatalf("Cached = %+v, %v; want no modules", k, err)
	}
	for range 2 {
		if k, err = FetchModules(t.Context(), cache, k); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(k.Modules, "kernel", "fs", "binfmt_misc.ko"))
	if err != nil || string(data) != "module" {
		t.Errorf("module kept: %q, %v", data, err)
	}
	calls, _ := os.ReadFile(log)
	if want := "download -o APT::Sandbox::User=root linux-image-" + release + "\n"; string(calls) != want {
		t.Errorf("apt-get calls:\n%s\nwant one download:\n%s", calls, want)
	}
}

func TestResolveBadName(t *testing.T) {
	_, err := Resolve(t.Context(), t.TempDir(), "6.99")
	want := `kernel "6.99" is neither a series (6.1, 6.12) nor a file: stat 6.99: no such file or directory`
	if err == nil || err.Error() != want {
		t.Errorf("Resolve(6.99) error = %v, want %s", err, want)
	}
}

// TestCachedKernelImages checks the release read from each cached bzImage
// against the release its folder is named after.
func TestCachedKernelImages(t *testing.T) {
	dir := CacheDir()
	found := 0
	for _, s := range Series {
		k, err := Cached(dir, s)
		if errors.Is(err, ErrNoKernel) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		found++
		got, err := FromImage(k.Image)
		if err != nil {
			t.Fatal(err)
		}
		if got.Release != k.Release || got.Config != k.Config {
			t.Errorf("FromImage(%s) = release %q config %q, want %q and %q", k.Image, got.Release, got.Config, k.Release, k.Config)
		}
	}
	if found == 0 {
		t.Skipf("no kernel cached in %s (make kernels fetches them)", dir)
	}
}

// fakeApt puts apt-cache and apt-get scripts first on PATH: apt-cache lists
// packages whatever the pattern; apt-get logs each call and, for download,
// copies deb into the working folder, or fails as a machine without network
// does when deb is "".
func fakeApt(t *testing.T, packages []string, deb string) (log string) {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("the fake apt commands are shell scripts and there is no /bin/sh")
	}
	dir := t.TempDir()
	log = filepath.Join(dir, "apt-get.log")
	var list strings.Builder
	for _, p := range packages {
		list.WriteString(p + " - Linux for x86-64 cloud\n")
	}
	listFile := filepath.Join(dir, "list")
	writeFile(t, listFile, list.String(), 0o644)
	writeFile(t, filepath.Join(dir, "apt-cache"), "#!/bin/sh\ncat "+listFile+"\n", 0o755)
	download := `echo "E: Failed to fetch http://deb.debian.org/pool/x.deb  Temporary failure resolving 'deb.debian.org'" >&2; exit 100`
	if deb != "" {
		download = "cp " + deb + " ."
	}
	writeFile(t, filepath.Join(dir, "apt-get"), `#!/bin/sh
echo "$@" >>`+log+`
case "$1" in
update) ;;
download) `+download+` ;;
*) exit 1 ;;
esac
`, 0o755)
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	return log
}

func writeFile(t *testing.T, path, data string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
}

// kernelDeb builds a package holding what a linux-image package holds of
// interest: boot/vmlinuz-RELEASE, boot/config-RELEASE and binfmt_misc's
// module.
func kernelDeb(t *testing.T, release string) string {
	t.Helper()
	// Busybox's dpkg-deb, all a guest has, cannot build packages.
	if err := exec.Command("dpkg-deb", "--version").Run(); err != nil {
		t.Skipf("no dpkg-deb that builds packages: %v", err)
	}
	root := filepath.Join(t.TempDir(), "pkg")
	for _, d := range []string{"DEBIAN", "boot"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "DEBIAN", "control"), "Package: linux-image-"+release+
		"\nVersion: 1\nArchitecture: amd64\nMaintainer: kinst tests <tests@kinst.dev>\nDescription: fake kernel\n", 0o644)
	fakeImage(t, filepath.Join(root, "boot", "vmlinuz-"+release), release+" (builder) #1 SMP")
	writeFile(t, filepath.Join(root, "boot", "config-"+release), "CONFIG_KPROBES=y\n", 0o644)
	mod := filepath.Join(root, "lib", "modules", release, "kernel", "fs", "binfmt_misc.ko")
	if err := os.MkdirAll(filepath.Dir(mod), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mod, "module", 0o644)
	deb := filepath.Join(t.TempDir(), "linux-image-"+release+"_1_amd64.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "-Znone", "--build", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v\n%s", err, out)
	}
	return deb
}

var indexPackages = []string{
	"linux-image-6.1.0-9-cloud-amd64",
	"linux-image-6.1.0-56-cloud-amd64",
	"linux-image-6.1.0-56-cloud-amd64-dbg",
	"linux-image-6.1.0-100-cloud-amd64-unsigned",
	"linux-image-6.12-cloud-amd64",
	"linux-image-6.12.117+deb12-cloud-amd64",
}

func TestFetch(t *testing.T) {
	const release = "6.1.0-56-cloud-amd64"
	log := fakeApt(t, indexPackages, kernelDeb(t, release))
	cache := t.TempDir()
	want := Kernel{Series: "6.1", Release: release,
		Image:   filepath.Join(cache, release, cachedImage),
		Config:  filepath.Join(cache, release, cachedConfig),
		Modules: filepath.Join(cache, release, cachedModules)}
	for range 2 {
		k, err := Fetch(t.Context(), cache, "6.1")
		if err != nil || k != want {
			t.Fatalf("Fetch = %+v, %v; want %+v", k, err, want)
		}
	}
	calls, _ := os.ReadFile(log)
	if want := "download -o APT::Sandbox::User=root linux-image-" + release + "\n"; string(calls) != want {
		t.Errorf("apt-get calls:\n%s\nwant one download:\n%s", calls, want)
	}
	img, err := FromImage(want.Image)
	if err != nil || img.Release != release {
		t.Errorf("cached image: %+v, %v", img, err)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, ".fetch-*")); len(left) != 0 {
		t.Errorf("Fetch left %v", left)
	}
	if k, err := Resolve(t.Context(), cache, "6.1"); err != nil || k != want {
		t.Errorf("Resolve(6.1) = %+v, %v", k, err)
	}
}

func TestFetchWithoutNetwork(t *testing.T) {
	fakeApt(t, indexPackages, "")
	cache := t.TempDir()
	_, err := Fetch(t.Context(), cache, "6.12")
	want := "fetch kernel 6.12.117+deb12-cloud-amd64: apt-get download: exit status 100\n" +
		"E: Failed to fetch http://deb.debian.org/pool/x.deb  Temporary failure resolving 'deb.debian.org'"
	if err == nil || err.Error() != want {
		t.Errorf("Fetch error:\n%v\nwant:\n%s", err, want)
	}
	if _, err := Cached(cache, "6.12"); !errors.Is(err, ErrNoKernel) {
		t.Errorf("a failed fetch left a kernel in the cache: %v", err)
	}
}

func TestFetchEmptyIndex(t *testing.T) {
	log := fakeApt(t, nil, "")
	_, err := Fetch(t.Context(), t.TempDir(), "6.1")
	want := "find kernel 6.1: no kernel of series 6.1 in the apt index (no linux-image-6.1.*-cloud-amd64 package)"
	if !errors.Is(err, ErrNoKernel) || err.Error() != want {
		t.Errorf("Fetch error = %v, want %s", err, want)
	}
	if calls, _ := os.ReadFile(log); string(calls) != "update\n" {
		t.Errorf("apt-get calls %q, want one update", calls)
	}
}

func TestDeclaresModule(t *testing.T) {
	for _, tt := range []struct {
		gomod string
		want  bool
	}{
		{"module kinst.dev/kinst\n\ngo 1.26.0\n", true},
		{"// The kinst module.\nmodule kinst.dev/kinst // comment\n", true},
		{"// The kinst module.\nmodule \"kinst.dev/kinst\"\n", true},
		{"module kinst.dev/kinst/tools\n", false},
		{"go 1.26\n", false},
	} {
		if got := declaresModule(tt.gomod); got != tt.want {
			t.Errorf("declaresModule(%q) = %v", tt.gomod, got)
		}
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Skipf("not run from inside the module (a guest has no go.mod): %v", err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Dir(filepath.Dir(wd)); root != want {
		t.Errorf("ModuleRoot() = %s, want %s", root, want)
	}
}
