// Hello is a tiny main package that testenv's tests build with Build.
package main

import "fmt"

func main() {
	fmt.Println("hello from a testenv build")
}
