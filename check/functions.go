package check

import (
	"net/netip"
	"strings"
	"syscall"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// This file checks the functions whose values user space renders when it
// prints them (strftime, strerror, macaddr, cgroup_path), those folded at
// compile time (cgroupid, pton) and the byte-level helpers strcontains,
// bswap and path.

func (c *checker) checkStrftime(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 2, 2) {
		return nil
	}
	format, ok := c.constString(x.Args[0], "strftime() format")
	if !ok {
		return nil
	}
	t := c.expr(x.Args[1])
	if t == nil {
		return nil
	}
	if t.Kind != Int {
		c.errorf(x.Args[1], "strftime() takes a timestamp in nanoseconds since boot, not %s", t)
		return nil
	}
	call.Text = format
	return &Type{Kind: Timestamp, Size: 8, Name: format}
}

// intArg checks that the one argument of x is an integer.
func (c *checker) intArg(x *syntax.CallExpr, what string) bool {
	t := c.expr(x.Args[0])
	if t == nil {
		return false
	}
	if t.Kind != Int {
		c.errorf(x.Args[0], "%s() takes %s, not %s", x.Fun.Name, what, t)
		return false
	}
	return true
}

func (c *checker) checkStrerror(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) || !c.intArg(x, "an error number") {
		return nil
	}
	if c.conf.Compat != compat.V017 {
		// 0.26 has its own texts, the kernel's.
		return &Type{Kind: Named, Size: 8, Name: "errno"}
	}
	return &Type{Kind: Strerror, Size: 8}
}

// checkNamed checks syscall_name(nr) and signal_name(sig), integers
// printed as names.
func (c *checker) checkNamed(x *syntax.CallExpr, call *Call) *Type {
	what := map[string]string{"syscall_name": "a system call number", "signal_name": "a signal number"}[x.Fun.Name]
	if !c.nargs(x, 1, 1) || !c.intArg(x, what) {
		return nil
	}
	return &Type{Kind: Named, Size: 8, Name: strings.TrimSuffix(x.Fun.Name, "_name")}
}

// macLen is the size of a MAC address.
const macLen = 6

func (c *checker) checkMacaddr(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if v, ok := c.probe.Consts[x.Args[0]]; ok && v.IsStr {
		c.errorf(x.Args[0], "macaddr() reads 6 bytes of memory; a string literal has no address")
		return nil
	}
	switch {
	case t.Kind == Int || t.Kind == Ptr:
		// An address to read the 6 bytes from.
	case (t.Kind == Array || t.Kind == Str) && t.Size == macLen:
	default:
		c.errorf(x.Args[0], "macaddr() takes a 6-byte array or an address, not %s", t)
		return nil
	}
	call.Space = c.spaceOf(t)
	return &Type{Kind: MacAddr, Size: macLen}
}

func (c *checker) checkCgroupPath(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 2) || !c.intArg(x, "a cgroup id") {
		return nil
	}
	filter := "*"
	if len(x.Args) == 2 {
		f, ok := c.constString(x.Args[1], "cgroup_path() filter")
		if !ok {
			return nil
		}
		filter = f
	}
	call.Text = filter
	return &Type{Kind: CgroupPath, Size: 8, Name: filter}
}

func (c *checker) checkCgroupid(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	path, ok := c.constString(x.Args[0], "cgroupid() path")
	if !ok {
		return nil
	}
	id, err := kernel.CgroupID(path)
	if err != nil {
		c.errorf(x.Args[0], "cgroupid(): %v", err)
		return nil
	}
	call.Text = path
	c.setConst(x, Const{Int: id})
	return TUint64
}

func (c *checker) checkPton(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	text, ok := c.constString(x.Args[0], "pton() address")
	if !ok {
		return nil
	}
	addr, err := netip.ParseAddr(text)
	if err != nil || addr.Zone() != "" {
		c.errorf(x.Args[0], "pton(): %q is not an IPv4 or IPv6 address", text)
		return nil
	}
	b := addr.AsSlice()
	call.Text = string(b)
	return &Type{Kind: Array, Size: len(b), Len: len(b), Elem: TUint8}
}

func (c *checker) checkStrcontains(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 2, 2) {
		return nil
	}
	a, b := c.probeString(x.Args[0], c.expr(x.Args[0])), c.probeString(x.Args[1], c.expr(x.Args[1]))
	if a == nil || b == nil {
		return nil
	}
	if a.Kind != Str || b.Kind != Str {
		c.errorf(x, "strcontains() looks for a string in a string, not %s in %s", b, a)
		return nil
	}
	return c.boolType()
}

func (c *checker) checkBswap(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) || !c.intArg(x, "an integer") {
		return nil
	}
	t := c.probe.Types[x.Args[0]]
	if v, ok := c.probe.Consts[x.Args[0]]; ok {
		c.setConst(x, Const{Int: bswap(v.Int, t.Size)})
	}
	return IntType(t.Size, false)
}

// bswap reverses the low size bytes of v.
func bswap(v uint64, size int) uint64 {
	var r uint64
	for range size {
		r = r<<8 | v&0xff
		v >>= 8
	}
	return r
}

// pathProviders are the probes whose programs may call bpf_d_path: the
// kernel allows it in trampolines and iterators of an allowlist only.
var pathProviders = []string{"fentry", "fexit", "iter"}

func (c *checker) checkPath(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	if !has(pathProviders, c.probe.Provider) {
		c.errorf(x, "path() is only available in %s probes: the kernel lets only those call bpf_d_path", strings.Join(pathProviders, ", "))
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if t.Kind != Ptr && t.Kind != Int && t.Kind != Record {
		c.errorf(x.Args[0], "path() takes a struct path *, not %s", t)
		return nil
	}
	return StrType(c.conf.StrLen)
}

// uaddrProviders are the probes whose binary uaddr() looks in.
var uaddrProviders = []string{"uprobe", "uretprobe", "usdt"}

func (c *checker) checkUaddr(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	if !has(uaddrProviders, c.probe.Provider) {
		c.errorf(x, "uaddr() is only available in %s probes: it looks in the probe's binary", strings.Join(uaddrProviders, ", "))
		return nil
	}
	name, ok := c.constString(x.Args[0], "uaddr() symbol")
	if !ok {
		return nil
	}
	path := ""
	for _, t := range c.probe.Targets {
		// The binary's path leads the target's name; attach points
		// split on colons, so it holds none.
		p, _, _ := strings.Cut(t.Name, ":")
		if path != "" && p != path {
			c.errorf(x, "uaddr(): the probe's targets are in %s and %s; give it one binary", path, p)
			return nil
		}
		path = p
	}
	addr, size, err := elfsym.Object(path, name)
	if err != nil {
		c.errorf(x.Args[0], "uaddr(): %v", err)
		return nil
	}
	call.Text = name
	if ino, ok := c.movable(path); ok {
		call.Offset, call.Inode = addr, ino
	} else {
		c.setConst(x, Const{Int: addr})
	}
	// As bpftrace 0.17: a pointer to a signed integer of the variable's
	// size, 8 bytes when it is no integer size.
	elem := TInt64
	switch size {
	case 1, 2, 4:
		elem = IntType(int(size), true)
	}
	return &Type{Kind: Ptr, Size: 8, Elem: elem, Space: UserSpace}
}

// movable reports whether uaddr() in a binary is moved at run time to
// where the process loaded the binary, and gives the inode that finds
// its mappings: in the 0.26.1 mode, as bpftrace 0.26.1 moves it, for a
// position-independent program or a library, where the kernel lets the
// probe walk the process's mappings (Linux 6.7). Elsewhere uaddr() is
// the address the binary's symbol table gives.
func (c *checker) movable(path string) (uint64, bool) {
	if c.conf.Compat == compat.V017 || c.conf.Kernel == nil || !c.conf.Kernel.KfuncAllowed("bpf_iter_task_vma_new", c.probe.Provider) {
		return 0, false
	}
	f, err := elfsym.Open(path)
	if err != nil || f.Fixed {
		return 0, false
	}
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0, false
	}
	return st.Ino, true
}

// skbOutputProviders are the probes whose programs may call
// bpf_skb_output: the kernel offers it to tracing programs only.
var skbOutputProviders = []string{"fentry", "fexit"}

// checkSkbOutput checks skboutput(path, skb, len, offset): the file and
// the offset are constants, which user space applies; the kernel copies
// len bytes of the packet.
func (c *checker) checkSkbOutput(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 4, 4) {
		return nil
	}
	if !has(skbOutputProviders, c.probe.Provider) {
		c.errorf(x, "skboutput() is only available in fentry and fexit probes (kfunc, kretfunc): the kernel lets only those call bpf_skb_output")
		return nil
	}
	path, ok := c.constString(x.Args[0], "skboutput() file")
	if !ok {
		return nil
	}
	if path == "" {
		c.errorf(x.Args[0], "skboutput() needs a file name")
		return nil
	}
	skb := c.expr(x.Args[1])
	if skb == nil {
		return nil
	}
	if skb.Kind != Ptr || skb.Elem == nil || skb.Elem.Name != "struct sk_buff" {
		c.errorf(x.Args[1], "skboutput() takes a struct sk_buff * the probe was given, not %s", skb)
		return nil
	}
	if t := c.expr(x.Args[2]); t == nil {
		return nil
	} else if t.Kind != Int {
		c.errorf(x.Args[2], "skboutput() takes the bytes to capture as an integer, not %s", t)
		return nil
	}
	off, ok := c.constInt(x.Args[3], "skboutput() offset")
	if !ok {
		return nil
	}
	if off < 0 {
		c.errorf(x.Args[3], "skboutput() offset must not be negative")
		return nil
	}
	call.Text, call.Offset = path, uint64(off)
	return TUint32
}

// socketCookieProviders are the probes whose arguments are pointers the
// kernel knows the types of, which bpf_get_socket_cookie requires.
var socketCookieProviders = []string{"fentry", "fexit"}

// checkSocketCookie checks socket_cookie(sk): the kernel's cookie of the
// socket sk, a struct sock * the probe was given.
func (c *checker) checkSocketCookie(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	if !has(socketCookieProviders, c.probe.Provider) {
		c.errorf(x, "socket_cookie() is only available in fentry and fexit probes (kfunc, kretfunc): the kernel lets only those call bpf_get_socket_cookie on a socket")
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if t.Kind != Ptr {
		c.errorf(x, "socket_cookie() only supports pointer arguments (%s provided)", t)
		return nil
	}
	if t.Elem == nil || t.Elem.Name != "struct sock" {
		c.errorf(x, "socket_cookie() only supports 'struct sock *' as the argument ('%s' provided)", t)
		return nil
	}
	return TUint64
}

// checkPercpuKaddr checks percpu_kaddr(name[, cpu]): the address of a
// per-CPU kernel variable on this CPU or on cpu, where it may be null.
func (c *checker) checkPercpuKaddr(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 2) {
		return nil
	}
	name, ok := c.constString(x.Args[0], "percpu_kaddr() variable")
	if !ok {
		return nil
	}
	if len(x.Args) == 2 {
		if t := c.expr(x.Args[1]); t == nil {
			return nil
		} else if t.Kind != Int {
			c.errorf(x.Args[1], "percpu_kaddr() takes a CPU number, not %s", t)
			return nil
		}
	}
	if c.conf.Kernel == nil {
		c.errorf(x, "percpu_kaddr(): kernel BTF is not available")
		return nil
	}
	id, err := c.conf.Kernel.PercpuVar(name)
	if err != nil {
		c.errorf(x, "percpu_kaddr(): %v", err)
		return nil
	}
	call.Text, call.ID = name, id
	return &Type{Kind: Ptr, Size: 8, Elem: TUint64, Space: KernelSpace}
}
