package preprocess_test

import (
	"fmt"

	"kinst.dev/kinst/preprocess"
	"kinst.dev/kinst/syntax"
)

// A program's macros are expanded before it is parsed, and what the
// parser finds wrong afterwards points at the line the text was written
// on: here the #define.
func ExamplePreprocess() {
	src := []byte(`#define LIMIT 100
#define BAD @count + "s"
BEGIN { @x = LIMIT * 2; @y = BAD; }
`)
	res, err := preprocess.Preprocess("prog.bt", src, &preprocess.Config{SystemDirs: []string{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", res.File.Src)
	pos, line := res.File.Locate(res.File.Pos(len("BEGIN { @x = 100 * 2; @y = ")))
	fmt.Println(pos)
	fmt.Println(line)

	_, err = preprocess.Preprocess("prog.bt", []byte("#if 1\nBEGIN {}\n"), nil)
	fmt.Println(err.(syntax.ErrorList).Detail())
	// Output:
	// BEGIN { @x = 100 * 2; @y = @count + "s"; }
	// prog.bt:2:13
	// #define BAD @count + "s"
	// prog.bt:1:2: #if without #endif
	// #if 1
	//  ^~
}
