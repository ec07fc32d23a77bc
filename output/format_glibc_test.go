package output

import (
	"fmt"
	"strings"
	"testing"
)

// TestVerbsMatchGlibc renders every verb shape bpftrace 0.17 accepts, with
// flags, widths and precisions, against glibc's snprintf given the same
// 64-bit argument bpftrace passes it.
func TestVerbsMatchGlibc(t *testing.T) {
	var formats []string
	for _, flags := range []string{"", "-", "0", "-0", "00"} {
		for _, width := range []string{"", "1", "5", "12"} {
			for _, prec := range []string{"", ".0", ".1", ".3", ".10"} {
				spec := "%" + flags + width + prec
				for _, length := range []string{"", "hh", "h", "l", "ll", "j", "z", "t"} {
					for _, conv := range "duoxXp" {
						formats = append(formats, spec+length+string(conv))
					}
				}
				formats = append(formats, spec+"c", spec+"s")
			}
		}
	}
	ints := []int64{0, 1, -1, 7, 42, -42, 127, 128, 255, 256, -129, 65535, 65536, -32769,
		2147483647, -2147483648, 4294967295, 4294967296, 5000000000, -5000000000,
		9223372036854775807, -9223372036854775808, 0x1234abcd5678}
	strs := []string{"", "a", "hello", "bpftrace 0.17", "x\ty"}

	var src strings.Builder
	src.WriteString(`#include <stdio.h>
#include <stdint.h>
#include <string.h>
static void esc(const char *s) {
	for (; *s; s++) {
		unsigned char c = *s;
		if (c == '\\') printf("\\\\");
		else if (c < 0x20 || c >= 0x7f) printf("\\x%02x", c);
		else putchar(c);
	}
}
int main(void) {
	char buf[256];
	static const char *formats[] = {`)
	for _, f := range formats {
		src.WriteString(cString(f) + ",\n")
	}
	src.WriteString("};\n\tstatic const int64_t ints[] = {")
	for _, n := range ints {
		fmt.Fprintf(&src, "(int64_t)%dULL, ", uint64(n))
	}
	src.WriteString("};\n\tstatic const char *strs[] = {")
	for _, s := range strs {
		src.WriteString(cString(s) + ", ")
	}
	src.WriteString(`};
	for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
		size_t n = strlen(formats[f]);
		if (formats[f][n-1] == 's') {
			for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
				snprintf(buf, sizeof buf, formats[f], strs[i]);
				esc(buf);
				putchar('\n');
			}
			continue;
		}
		for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
			snprintf(buf, sizeof buf, formats[f], ints[i]);
			esc(buf);
			putchar('\n');
		}
	}
	return 0;
}
`)
	want := runC(t, src.String())

	var got strings.Builder
	for _, f := range formats {
		format := ParseFormat(f)
		if len(format.Verbs()) != 1 || format.Verbs()[0].Text != f {
			t.Fatalf("ParseFormat(%q) found verbs %+v, want the whole format", f, format.Verbs())
		}
		var args []Value
		if strings.HasSuffix(f, "s") {
			for _, s := range strs {
				args = append(args, String(s))
			}
		} else {
			for _, n := range ints {
				args = append(args, Int(n))
			}
		}
		for _, a := range args {
			out, err := format.Append(nil, []Value{a})
			if err != nil {
				t.Fatalf("%q with %v: %v", f, a, err)
			}
			got.WriteString(escapeBytes(string(out)) + "\n")
		}
	}
	diffLines(t, "verbs against glibc", []byte(got.String()), want)
}
