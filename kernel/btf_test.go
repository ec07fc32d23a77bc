package kernel

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf/btf"
)

func TestTypeString(t *testing.T) {
	char := &btf.Int{Name: "char", Size: 1, Encoding: btf.Signed | btf.Char}
	ulong := &btf.Int{Name: "long unsigned int", Size: 8}
	file := &btf.Struct{Name: "file"}
	skb := &btf.Struct{Name: "sk_buff"}
	u64 := &btf.Typedef{Name: "u64", Type: &btf.Int{Name: "long long unsigned int", Size: 8}}
	tests := []struct {
		t    btf.Type
		want string
	}{
		{nil, "void"},
		{&btf.Void{}, "void"},
		{u64, "u64"},
		{ulong, "long unsigned int"},
		{&btf.Pointer{Target: file}, "struct file *"},
		{&btf.Pointer{Target: &btf.Const{Type: char}}, "const char *"},
		{&btf.Pointer{Target: &btf.Pointer{Target: char}}, "char **"},
		{&btf.Const{Type: &btf.Pointer{Target: char}}, "char *const"},
		{&btf.Pointer{Target: &btf.Const{Type: &btf.Pointer{Target: &btf.Const{Type: char}}}}, "const char *const *"},
		{&btf.Pointer{Target: &btf.Volatile{Type: ulong}}, "volatile long unsigned int *"},
		{&btf.Pointer{Target: &btf.Restrict{Type: char}}, "char *"},
		{&btf.Array{Type: char, Nelems: 16}, "char[16]"},
		{&btf.Pointer{Target: &btf.Array{Type: char, Nelems: 16}}, "char (*)[16]"},
		{&btf.Pointer{Target: &btf.FuncProto{Return: &btf.Void{}, Params: []btf.FuncParam{{Type: &btf.Pointer{Target: skb}}}}}, "void (*)(struct sk_buff *)"},
		{&btf.Pointer{Target: &btf.FuncProto{Return: ulong}}, "long unsigned int (*)(void)"},
		{&btf.Pointer{Target: &btf.FuncProto{Return: char, Params: []btf.FuncParam{{Name: "fmt", Type: &btf.Pointer{Target: char}}, {Type: &btf.Void{}}}}}, "char (*)(char *fmt, ...)"},
		{&btf.Pointer{Target: &btf.Union{Name: "bpf_attr"}}, "union bpf_attr *"},
		{&btf.Enum{Name: "pid_type"}, "enum pid_type"},
		{&btf.Struct{}, "struct {...}"},
		{&btf.Pointer{Target: &btf.Fwd{Name: "task_struct", Kind: btf.FwdStruct}}, "struct task_struct *"},
		{&btf.Pointer{Target: &btf.TypeTag{Value: "user", Type: char}}, "char *"},
	}
	for _, tt := range tests {
		if got := TypeString(tt.t); got != tt.want {
			t.Errorf("TypeString(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}

func TestDefinition(t *testing.T) {
	u8 := &btf.Typedef{Name: "__u8", Type: &btf.Int{Name: "unsigned char", Size: 1}}
	ulong := &btf.Int{Name: "long unsigned int", Size: 8}
	skb := &btf.Struct{Name: "sk_buff"}
	skb.Members = []btf.Member{
		{Name: "", Type: &btf.Union{Members: []btf.Member{
			{Name: "", Type: &btf.Struct{Members: []btf.Member{
				{Name: "next", Type: &btf.Pointer{Target: skb}},
				{Name: "dev_scratch", Type: ulong},
			}}},
			{Name: "named", Type: &btf.Struct{Members: []btf.Member{{Name: "x", Type: u8}}}},
		}}},
		{Name: "destructor", Type: &btf.Pointer{Target: &btf.FuncProto{Return: &btf.Void{}, Params: []btf.FuncParam{{Type: &btf.Pointer{Target: skb}}}}}},
		{Name: "cb", Type: &btf.Array{Type: &btf.Int{Name: "char", Size: 1}, Nelems: 48}},
		{Name: "cloned", Type: u8, BitfieldSize: 1},
		{Name: "mode", Type: &btf.Enum{Values: []btf.EnumValue{{Name: "A", Value: 0}}}},
	}
	want := `struct sk_buff {
	union {
		struct {
			struct sk_buff *next;
			long unsigned int dev_scratch;
		};
		struct {
			__u8 x;
		} named;
	};
	void (*destructor)(struct sk_buff *);
	char cb[48];
	__u8 cloned: 1;
	enum {
		A = 0,
	} mode;
};`
	if got := Definition(skb); got != want {
		t.Errorf("Definition(struct sk_buff) =\n%s\nwant\n%s", got, want)
	}
	neg := &btf.Enum{Name: "e", Signed: true, Values: []btf.EnumValue{{Name: "MINUS", Value: uint64(0xffffffffffffffff)}, {Name: "ONE", Value: 1}}}
	if got, want := Definition(neg), "enum e {\n\tMINUS = -1,\n\tONE = 1,\n};"; got != want {
		t.Errorf("Definition(enum e) = %q, want %q", got, want)
	}
	td := &btf.Typedef{Name: "pid_t", Type: &btf.Typedef{Name: "__kernel_pid_t", Type: &btf.Int{Name: "int", Size: 4}}}
	if got, want := Definition(td), "typedef __kernel_pid_t pid_t;"; got != want {
		t.Errorf("Definition(pid_t) = %q, want %q", got, want)
	}
	if got, want := Definition(&btf.Pointer{Target: skb}), "struct sk_buff *"; got != want {
		t.Errorf("Definition(pointer) = %q, want %q", got, want)
	}
}

// needBTF skips a test on a kernel without BTF.
func needBTF(t *testing.T) {
	t.Helper()
	if _, err := KernelBTF(); errors.Is(err, ErrNoBTF) {
		t.Skipf("kernel has no BTF: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

func TestTypeByNameKernel(t *testing.T) {
	needBTF(t)
	typ, err := TypeByName("struct path")
	if err != nil {
		t.Fatal(err)
	}
	// What `bpftrace -lv 'struct path'` prints; struct path has not
	// changed since Linux 2.6.
	want := "struct path {\n\tstruct vfsmount *mnt;\n\tstruct dentry *dentry;\n};"
	if got := Definition(typ); got != want {
		t.Errorf("Definition(struct path) = %q, want %q", got, want)
	}
	if got, want := Definition(mustType(t, "enum pid_type")), "enum pid_type {\n\tPIDTYPE_PID = 0,\n\tPIDTYPE_TGID = 1,\n\tPIDTYPE_PGID = 2,\n\tPIDTYPE_SID = 3,\n\tPIDTYPE_MAX = 4,\n};"; got != want {
		t.Errorf("Definition(enum pid_type) = %q, want %q", got, want)
	}
	if got, want := Definition(mustType(t, "pid_t")), "typedef __kernel_pid_t pid_t;"; got != want {
		t.Errorf("Definition(pid_t) = %q, want %q", got, want)
	}
	if _, ok := mustType(t, "  struct   task_struct ").(*btf.Struct); !ok {
		t.Error("struct task_struct is not a struct")
	}
	if _, ok := mustType(t, "task_struct").(*btf.Struct); !ok {
		t.Error("bare task_struct is not the struct")
	}
	for _, name := range []string{"struct nosuch_type_kinst", "union path", "enum path", "vfs_read", ""} {
		if _, err := TypeByName(name); !errors.Is(err, ErrNoType) {
			t.Errorf("TypeByName(%q) error = %v, want ErrNoType", name, err)
		}
	}
	_, err = TypeByName("struct nosuch_type_kinst")
	if want := "type struct nosuch_type_kinst: no such type in kernel BTF"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func mustType(t *testing.T, name string) btf.Type {
	t.Helper()
	typ, err := TypeByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func TestFuncProtoKernel(t *testing.T) {
	needBTF(t)
	tests := []struct {
		name     string
		params   []string
		ret      string
		variadic bool
	}{
		{"vfs_read", []string{"struct file * file", "char * buf", "size_t count", "loff_t * pos"}, "ssize_t", false},
		{"security_file_open", []string{"struct file * file"}, "int", false},
		{"_printk", []string{"const char * fmt"}, "int", true},
	}
	for _, tt := range tests {
		fn, err := FuncProto(tt.name)
		if err != nil {
			t.Errorf("FuncProto(%s): %v", tt.name, err)
			continue
		}
		var params []string
		for _, p := range fn.Params {
			params = append(params, p.String())
		}
		if len(params) != len(tt.params) {
			t.Errorf("%s params = %q, want %q", tt.name, params, tt.params)
			continue
		}
		for i := range params {
			if params[i] != tt.params[i] {
				t.Errorf("%s param %d = %q, want %q", tt.name, i, params[i], tt.params[i])
			}
		}
		if got := TypeString(fn.Return); got != tt.ret || fn.Variadic != tt.variadic || fn.Module != "" {
			t.Errorf("%s returns %q variadic %v module %q, want %q %v vmlinux", tt.name, got, fn.Variadic, fn.Module, tt.ret, tt.variadic)
		}
	}
	_, err := FuncProto("kinst_no_such_function")
	if !errors.Is(err, ErrNoType) || err.Error() != "function kinst_no_such_function: no such type in kernel BTF" {
		t.Errorf("FuncProto(kinst_no_such_function) error = %v", err)
	}
}
