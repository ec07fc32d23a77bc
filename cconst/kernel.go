package cconst

// kernelValues are kernel-internal constants no user-space header has.
// The task states are from include/linux/sched.h, the same in Linux 6.1
// and 6.12; composite states are the ORs the header defines.
var kernelValues = map[string]int64{
	"TASK_RUNNING":         0x0000,
	"TASK_INTERRUPTIBLE":   0x0001,
	"TASK_UNINTERRUPTIBLE": 0x0002,
	"__TASK_STOPPED":       0x0004,
	"__TASK_TRACED":        0x0008,
	"EXIT_DEAD":            0x0010,
	"EXIT_ZOMBIE":          0x0020,
	"EXIT_TRACE":           0x0010 | 0x0020, // EXIT_ZOMBIE | EXIT_DEAD
	"TASK_PARKED":          0x0040,
	"TASK_DEAD":            0x0080,
	"TASK_WAKEKILL":        0x0100,
	"TASK_WAKING":          0x0200,
	"TASK_NOLOAD":          0x0400,
	"TASK_NEW":             0x0800,
	"TASK_RTLOCK_WAIT":     0x1000,
	"TASK_FREEZABLE":       0x2000,
	"TASK_FROZEN":          0x8000,
	"TASK_KILLABLE":        0x0100 | 0x0002, // TASK_WAKEKILL | TASK_UNINTERRUPTIBLE
	"TASK_STOPPED":         0x0100 | 0x0004, // TASK_WAKEKILL | __TASK_STOPPED
	"TASK_TRACED":          0x0008,          // __TASK_TRACED
	"TASK_IDLE":            0x0002 | 0x0400, // TASK_UNINTERRUPTIBLE | TASK_NOLOAD
	"TASK_NORMAL":          0x0001 | 0x0002, // TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE
	// PF_* task flags, also include/linux/sched.h.
	"PF_IDLE":      0x00000002,
	"PF_EXITING":   0x00000004,
	"PF_KTHREAD":   0x00200000,
	"PF_WQ_WORKER": 0x00000020,
}

// Lookup returns the value of the C constant name.
func Lookup(name string) (int64, bool) {
	if v, ok := kernelValues[name]; ok {
		return v, true
	}
	return generated(name)
}
