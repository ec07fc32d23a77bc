package output

import "strconv"

// The GFP (get free pages) flag bits of Linux 6.10 and later
// (include/linux/gfp_types.h), which bpftrace 0.26.1's %gr names.
const (
	gfpDMA           = 1 << 0
	gfpHighmem       = 1 << 1
	gfpDMA32         = 1 << 2
	gfpMovable       = 1 << 3
	gfpHigh          = 1 << 5
	gfpIO            = 1 << 6
	gfpFS            = 1 << 7
	gfpZero          = 1 << 8
	gfpDirectReclaim = 1 << 10
	gfpKswapdReclaim = 1 << 11
	gfpNowarn        = 1 << 13
	gfpComp          = 1 << 18
	gfpNomemalloc    = 1 << 19
	gfpHardwall      = 1 << 20
	gfpAccount       = 1 << 22
	gfpSkipKasan     = 1 << 25

	gfpKernel          = gfpDirectReclaim | gfpKswapdReclaim | gfpIO | gfpFS
	gfpNoIO            = gfpDirectReclaim | gfpKswapdReclaim
	gfpNoFS            = gfpNoIO | gfpIO
	gfpUser            = gfpNoFS | gfpFS | gfpHardwall
	gfpHighuser        = gfpUser | gfpHighmem
	gfpHighuserMovable = gfpHighuser | gfpMovable | gfpSkipKasan
	gfpTranshugeLight  = (gfpHighuserMovable | gfpComp | gfpNomemalloc | gfpNowarn) &^ (gfpDirectReclaim | gfpKswapdReclaim)
	gfpTranshuge       = gfpTranshugeLight | gfpDirectReclaim
	gfpAtomic          = gfpHigh | gfpKswapdReclaim
	gfpNowait          = gfpKswapdReclaim | gfpNowarn
	gfpKernelAccount   = gfpKernel | gfpAccount
)

// gfpNames are the names %gr gives, tried in this order as the kernel's
// trace output tries them: a mask that matches takes its bits, and the
// bits no name took print in hex.
var gfpNames = []struct {
	mask uint64
	name string
}{
	{gfpTranshuge, "GFP_TRANSHUGE"},
	{gfpTranshugeLight, "GFP_TRANSHUGE_LIGHT"},
	{gfpHighuserMovable, "GFP_HIGHUSER_MOVABLE"},
	{gfpHighuser, "GFP_HIGHUSER"},
	{gfpUser, "GFP_USER"},
	{gfpKernelAccount, "GFP_KERNEL_ACCOUNT"},
	{gfpKernel, "GFP_KERNEL"},
	{gfpNoFS, "GFP_NOFS"},
	{gfpAtomic, "GFP_ATOMIC"},
	{gfpNoIO, "GFP_NOIO"},
	{gfpNowait, "GFP_NOWAIT"},
	{gfpDMA, "GFP_DMA"},
	{gfpHighmem, "__GFP_HIGHMEM"},
	{gfpDMA32, "GFP_DMA32"},
	{gfpHigh, "__GFP_HIGH"},
	{gfpIO, "__GFP_IO"},
	{gfpFS, "__GFP_FS"},
	{gfpZero, "__GFP_ZERO"},
	{gfpDirectReclaim, "__GFP_DIRECT_RECLAIM"},
	{gfpKswapdReclaim, "__GFP_KSWAPD_RECLAIM"},
	{1 << 12, "__GFP_WRITE"},
	{gfpNowarn, "__GFP_NOWARN"},
	{1 << 14, "__GFP_RETRY_MAYFAIL"},
	{1 << 15, "__GFP_NOFAIL"},
	{1 << 16, "__GFP_NORETRY"},
	{1 << 17, "__GFP_MEMALLOC"},
	{gfpComp, "__GFP_COMP"},
	{gfpNomemalloc, "__GFP_NOMEMALLOC"},
	{gfpHardwall, "__GFP_HARDWALL"},
	{1 << 21, "__GFP_THISNODE"},
	{gfpAccount, "__GFP_ACCOUNT"},
	{1 << 23, "__GFP_ZEROTAGS"},
	{1 << 24, "__GFP_SKIP_ZERO"},
	{gfpSkipKasan, "__GFP_SKIP_KASAN"},
	{1 << 26, "__GFP_NO_OBJ_EXT"},
}

// appendGFP appends flags as %gr prints them: names joined by '|', the
// bits left over in hex, "0" for none.
func appendGFP(b []byte, flags uint64) []byte {
	if flags == 0 {
		return append(b, '0')
	}
	start := len(b)
	sep := func() {
		if len(b) > start {
			b = append(b, '|')
		}
	}
	for _, n := range gfpNames {
		if flags&n.mask == n.mask {
			sep()
			b = append(b, n.name...)
			flags &^= n.mask
		}
	}
	if flags != 0 {
		sep()
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, flags, 16)
	}
	return b
}
