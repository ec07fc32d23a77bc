package attach

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
	"kinst.dev/kinst/usdt"
)

// usdtFile is one file whose USDT probes a usdt attach point or listing
// searches.
type usdtFile struct {
	path   string
	probes []usdt.Probe
}

// usdtForm is how usdt probes are written.
const usdtForm = "usdt:PATH:[PROVIDER:]NAME, or usdt:NAME with -p"

// usdts resolves usdt:PATH:PROVIDER:NAME, usdt:PATH:NAME and
// usdt:PATH::NAME (any provider) and, with -p, usdt:NAME,
// usdt::PROVIDER:NAME and usdt:::NAME over every file the process maps.
// PATH may be a wildcard over files. Each probe site becomes a uprobe at
// the site; a site with a semaphore has the kernel count attached probes
// in it.
func (r *Resolver) usdts(ap *syntax.AttachPoint) ([]*check.Target, error) {
	var bin, provider, name string
	switch len(ap.Parts) {
	case 3:
		bin, provider, name = ap.Parts[0], ap.Parts[1], ap.Parts[2]
	case 2:
		bin, provider, name = ap.Parts[0], "*", ap.Parts[1]
	case 1:
		if r.Pid == 0 {
			return nil, fmt.Errorf("usdt probes are written %s", usdtForm)
		}
		provider, name = "*", ap.Parts[0]
	default:
		return nil, fmt.Errorf("usdt probes are written %s", usdtForm)
	}
	anyProvider := len(ap.Parts) < 3 || provider == ""
	if anyProvider {
		provider = "*"
	}
	files, err := r.usdtFiles(bin)
	if err != nil {
		return nil, err
	}
	var targets []*check.Target
	for _, f := range files {
		for _, p := range f.probes {
			if !kernel.Match(provider, p.Provider) || !kernel.Match(name, p.Name) {
				continue
			}
			u := Uprobe{Path: f.path, Symbol: p.FullName(), Offset: p.Offset, RefCtrOffset: p.SemaphoreOffset}
			targets = append(targets, &check.Target{
				Provider: "usdt",
				Name:     f.path + ":" + p.FullName(),
				Func:     p.Name,
				NumArgs:  len(p.Args),
				USDT:     p.Args,
				Attach:   u,
			})
		}
	}
	if anyProvider && !kernel.HasGlob(name) {
		if err := oneProvider(targets, ap.Raw); err != nil {
			return nil, err
		}
	}
	if len(targets) == 0 {
		spec := provider + ":" + name
		if anyProvider {
			spec = name
		}
		where := "the files process " + strconv.Itoa(r.Pid) + " maps"
		list := &check.ListError{Pattern: "usdt:*", Pid: r.Pid, Listed: "them"}
		switch {
		case kernel.HasGlob(bin):
			where, list.Pattern, list.Pid = "the files matching "+bin, "usdt:"+bin, 0
		case bin != "":
			where, list.Pattern, list.Pid = files[0].path, "usdt:"+files[0].path+":*", 0
		}
		list.Err = fmt.Errorf("no USDT probe matches %s in %s", spec, where)
		return nil, check.NoTarget(list)
	}
	return targets, nil
}

// oneProvider refuses, as bpftrace does, a probe named without its
// provider when providers share the name: a wildcard asks for them all.
func oneProvider(targets []*check.Target, raw string) error {
	var names []string
	for _, t := range targets {
		_, full, _ := strings.Cut(strings.TrimPrefix(t.Name, t.Attach.(Uprobe).Path), ":")
		if !slices.Contains(names, full) {
			names = append(names, full)
		}
	}
	if len(names) > 1 {
		slices.Sort(names)
		return fmt.Errorf("%s names no provider and matches %s: name one, or use '*' for all", raw, strings.Join(names, " and "))
	}
	return nil
}

// usdtFiles reads the probes of the files bin names: a path, a library
// or program name, a wildcard over paths, or, when "" with -p, every file
// the process maps. A named file must be ELF and have probes; among the
// mapped files those without are passed over.
func (r *Resolver) usdtFiles(bin string) ([]usdtFile, error) {
	var paths []string
	named := bin != ""
	switch {
	case !named && r.Pid == 0:
		return nil, fmt.Errorf("usdt probes name a file unless -p gives a process: %s", usdtForm)
	case !named:
		var err error
		if paths, err = mappedFiles(r.Pid); err != nil {
			return nil, err
		}
	case kernel.HasGlob(bin):
		var err error
		if paths, err = elfsym.GlobFiles(bin, r.Pid); err != nil {
			return nil, err
		}
		named = len(paths) == 1
	default:
		path, err := elfsym.Resolve(bin, r.Pid)
		if err != nil {
			return nil, err
		}
		if r.Pid > 0 && filepath.IsAbs(path) && !strings.HasPrefix(path, "/proc/") {
			// bpftrace names a -p process's USDT files through its
			// root even in kinst's own mount namespace.
			path = fmt.Sprintf("/proc/%d/root%s", r.Pid, path)
		}
		paths = []string{path}
	}
	var files []usdtFile
	for _, path := range paths {
		probes, err := usdt.Read(path)
		switch {
		case err == nil:
			files = append(files, usdtFile{path, probes})
		case !named:
		case errors.Is(err, usdt.ErrNoNotes):
			return nil, fmt.Errorf("%s has no USDT probes", path)
		default:
			return nil, err
		}
	}
	if len(files) == 0 {
		if bin == "" {
			return nil, fmt.Errorf("%w in the files process %d maps", usdt.ErrNoNotes, r.Pid)
		}
		return nil, fmt.Errorf("%w in the files matching %s", usdt.ErrNoNotes, bin)
	}
	return files, nil
}

// mappedFiles lists the executable and libraries process pid maps, each
// once, named through /proc/PID/root so that a process in another mount
// namespace is searched in its own, as bpftrace names them.
func mappedFiles(pid int) ([]string, error) {
	maps, err := elfsym.ReadMaps(pid)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, m := range maps {
		if !m.File() || m.Deleted {
			continue
		}
		p := fmt.Sprintf("/proc/%d/root%s", pid, m.Path)
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// withSemaphore gives a uprobe inside a function the reference counter
// of the USDT site it lands on, if any: the kernel refuses a second
// uprobe on an instruction with a counter other than the first one's,
// so a uprobe and a usdt probe on one site could not both attach.
func withSemaphore(u Uprobe) Uprobe {
	probes, err := usdt.Read(u.Path)
	if err != nil {
		return u
	}
	for _, p := range probes {
		if p.Offset == u.Offset {
			u.RefCtrOffset = p.SemaphoreOffset
		}
	}
	return u
}

// processExe names process pid's executable through /proc/PID/root, as
// mappedFiles names the files it maps; one deleted since the process
// started is reached through /proc/PID/exe, the only name left.
func processExe(pid int) (string, error) {
	link := fmt.Sprintf("/proc/%d/exe", pid)
	exe, err := os.Readlink(link)
	if err != nil {
		return "", fmt.Errorf("find the executable of process %d: %w", pid, err)
	}
	if strings.HasSuffix(exe, " (deleted)") {
		return link, nil
	}
	return fmt.Sprintf("/proc/%d/root%s", pid, exe), nil
}

// listUSDT lists the probes matching PATH:PROVIDER:NAME, PATH:NAME,
// PATH::NAME or PATH alone, each probe once however many sites it has,
// sorted as bpftrace sorts them. With pid, an empty or "*" PATH stands
// for every file the process maps, and NAME alone (no '/') is a name.
func listUSDT(pid int) lister {
	return func(w *bufio.Writer, parts []string, o ListOptions) error {
		bin, provider, name := parts[0], "*", "*"
		switch len(parts) {
		case 1:
			if pid != 0 && !strings.Contains(bin, "/") {
				// usdt:NAME with -p, as a program names the probes.
				bin, name = "", bin
			}
		case 2:
			name = parts[1]
		case 3:
			provider, name = parts[1], parts[2]
		default:
			return fmt.Errorf("list usdt probes as usdt:PATH[:PROVIDER[:NAME]]")
		}
		if provider == "" {
			// usdt:PATH::NAME names no provider, as usdt:PATH:NAME.
			provider = "*"
		}
		if pid != 0 && (bin == "*" || bin == "") {
			bin = ""
		} else if bin == "" {
			return fmt.Errorf("list usdt probes as usdt:PATH[:PROVIDER[:NAME]], or with -p PID")
		}
		r := &Resolver{Pid: pid}
		files, err := r.usdtFiles(bin)
		if err != nil {
			return err
		}
		for _, f := range files {
			var lines []string
			args := map[string]string{}
			for _, p := range f.probes {
				if !kernel.Match(provider, p.Provider) || !kernel.Match(name, p.Name) {
					continue
				}
				line := "usdt:" + f.path + ":" + p.FullName()
				if _, seen := args[line]; !seen {
					lines = append(lines, line)
					args[line] = p.ArgSpec
				}
			}
			slices.Sort(lines)
			for _, l := range lines {
				fmt.Fprintln(w, l)
				if o.Verbose {
					for i, a := range strings.Fields(args[l]) {
						fmt.Fprintf(w, "    arg%d: %s\n", i, a)
					}
				}
			}
		}
		return nil
	}
}
