package kernel_test

import (
	"fmt"

	"kinst.dev/kinst/kernel"
)

func ExampleMatch() {
	for _, name := range []string{"sys_enter_open", "sys_enter_openat2", "sys_exit_openat"} {
		fmt.Println(name, kernel.Match("sys_enter_open*", name))
	}
	// Output:
	// sys_enter_open true
	// sys_enter_openat2 true
	// sys_exit_openat false
}

func ExampleParseFormat() {
	format := "name: sched_process_exec\nID: 365\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n" +
		"\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n" +
		"\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n"
	f, err := kernel.ParseFormat("sched", []byte(format))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, fl := range f.Fields {
		fmt.Printf("%s at %d, %d bytes\n", fl.Decl(), fl.Offset, fl.Size)
	}
	// Output:
	// __data_loc char[] filename at 8, 4 bytes
	// pid_t pid at 12, 4 bytes
}
