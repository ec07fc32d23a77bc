package attach

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// Iter targets a BPF iterator: the kernel runs the program once for each
// object (task, file, memory area, …) while kinst reads the iterator.
type Iter struct {
	Name string
}

// mapIterators walk the elements of one map, which kinst has no way to
// name: bpftrace offers them neither.
var mapIterators = []string{"bpf_map_elem", "bpf_sk_storage_map", "sockmap"}

// iterators resolves iter:NAME. The program's ctx points to the
// iterator's context: the meta data, then the object, as the target
// function bpf_iter_NAME declares them.
func iterators(ap *syntax.AttachPoint) ([]*check.Target, error) {
	if len(ap.Parts) != 1 {
		return nil, fmt.Errorf("iter probes are written iter:NAME")
	}
	if st := kernel.Probe(kernel.FeatIter); !st.Available {
		return nil, forbidden(st.Reason)
	}
	name := ap.Parts[0]
	if kernel.HasGlob(name) {
		return nil, &check.ListError{Err: fmt.Errorf("iter:%s: an iter probe names one iterator", name), Pattern: "iter:*", Listed: "them"}
	}
	if slices.Contains(mapIterators, name) {
		return nil, fmt.Errorf("iterator %s walks one map, which kinst cannot name: %w", name, ErrUnsupported)
	}
	fn, err := kernel.Iterator(name)
	if errors.Is(err, kernel.ErrNoType) {
		return nil, &check.ListError{Err: fmt.Errorf("this kernel has no iterator %s", name), Pattern: "iter:*", Listed: "them"}
	}
	if err != nil {
		return nil, err
	}
	ctx, _, err := tracingContext(fn)
	if err != nil {
		return nil, fmt.Errorf("iterator %s: %w", name, err)
	}
	ctx.Name = "struct bpf_iter__" + name
	return []*check.Target{{Provider: "iter", Name: name, Func: name, Args: ctx, Attach: Iter{Name: name}}}, nil
}

// attachIter attaches prog to its iterator. The link is an IterLink, so
// that the run can read the iterator once everything is attached.
func attachIter(prog *ebpf.Program) ([]io.Closer, error) {
	l, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		return nil, err
	}
	return []io.Closer{IterLink{l}}, nil
}

// An IterLink is an attached iterator, which runs its program when read.
type IterLink struct{ *link.Iter }

// Run runs the program over every object of the iterator by reading it
// to the end. The program prints through kinst's ring buffer, so what
// the iterator itself writes is nothing.
func (l IterLink) Run() error {
	rd, err := l.Open()
	if err != nil {
		return fmt.Errorf("open iterator: %w", err)
	}
	defer rd.Close()
	if _, err := io.Copy(io.Discard, rd); err != nil {
		return fmt.Errorf("read iterator: %w", err)
	}
	return nil
}

func listIterators(w *bufio.Writer, parts []string, o ListOptions) error {
	pattern := strings.Join(parts, ":")
	names, err := kernel.Iterators()
	if err != nil {
		return err
	}
	for _, name := range names {
		if !kernel.Match(pattern, name) || slices.Contains(mapIterators, name) {
			continue
		}
		fmt.Fprintf(w, "iter:%s\n", name)
		if o.Verbose {
			if fn, err := kernel.Iterator(name); err == nil {
				for _, p := range fn.Params {
					fmt.Fprintf(w, "    %s\n", p)
				}
			}
		}
	}
	return nil
}
