package output

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, wherever the tests run
)

var strftimeFormats = []string{
	"%H:%M:%S\n", "%Y-%m-%d %H:%M:%S", "%a %A %b %B %h", "%c", "%x %X %D %F %R %T %r",
	"%C %d %e %g %G %H %I %j %k %l %m %M %n %p %P %s %S %t %u %U %V %w %W %y %Y %z %Z %%",
	"%5Y|%_5Y|%-5Y|%05Y|%_d|%-d|%0e|%-e|%_H|%3d|%-3d|%_3d|%03e|%10s|%-10s|%_10s|%010s",
	"%^a %^A %^b %#a %#B %#p %#Z %^p %^P %#P %^c %^x %#c",
	"%10a|%-10a|%010a|%_10b|%5p|%05Z|%8c",
	"%Ec %EC %Ex %EX %Ey %EY %Od %Oe %OH %OI %Om %OM %OS %Ou %OU %OV %Ow %OW %Oy %Ob %OB %Oh",
	"%Ed %EH %OY %Oc %Ox %OX %E% %O%",
	"%Q %q %5Q %-J %i %f %v %+ %", "%", "", "%_", "trailing %5",
	"%z %_z %-z %010z %Z",
	"%j %U %W %V %G %g %u %w",
	"%c %c %c", "%c %c %H:%M:%S", "%c %c %H:%M:%S.", "%Y-%m-%d %H:%M:%S %Y-%m-%d %H:%M:%S %Y-%m-%d %H:",
	"%63Y", "%62Y", "%64d", "%999999999999d", "%-62Y", "%_62Y",
}

var strftimeTimes = []int64{
	0, 1779421856, 951782400, 1230768000, 1262217599, 1609459200, 1704067199, -86400 * 400,
}

var strftimeZones = []string{"UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"}

// escapeBytes writes s with backslashes and bytes outside printable ASCII
// escaped, for golden files both Go and C can write.
func escapeBytes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func strftimeGolden(t *testing.T) []byte {
	var src strings.Builder
	src.WriteString(`#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static void esc(const char *s, size_t n) {
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (c == '\\') printf("\\\\");
		else if (c < 0x20 || c >= 0x7f) printf("\\x%02x", c);
		else putchar(c);
	}
}
int main(void) {
	static const char *zones[] = {`)
	for _, z := range strftimeZones {
		src.WriteString(cString(z) + ", ")
	}
	src.WriteString("};\n\tstatic const char *formats[] = {")
	for _, f := range strftimeFormats {
		src.WriteString(cString(f) + ", ")
	}
	src.WriteString("};\n\tstatic const long times[] = {")
	for _, u := range strftimeTimes {
		fmt.Fprintf(&src, "%dL, ", u)
	}
	src.WriteString(`};
	for (size_t z = 0; z < sizeof zones / sizeof *zones; z++) {
		setenv("TZ", zones[z], 1);
		tzset();
		for (size_t u = 0; u < sizeof times / sizeof *times; u++) {
			struct tm tm;
			time_t when = times[u];
			localtime_r(&when, &tm);
			for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
				printf("%s\t%ld\t", zones[z], times[u]);
				esc(formats[f], __builtin_strlen(formats[f]));
				for (size_t size = 64; size <= 1024; size *= 16) {
					char buf[1024];
					size_t n = strftime(buf, size, formats[f], &tm);
					printf("\t");
					if (n == 0) printf("FAIL"); else { printf("="); esc(buf, n); }
				}
				printf("\n");
			}
		}
	}
	return 0;
}
`)
	return runC(t, src.String())
}

func TestStrftimeMatchesGlibc(t *testing.T) {
	want := golden(t, "strftime.golden", strftimeGolden)
	var got strings.Builder
	for _, zone := range strftimeZones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range strftimeTimes {
			when := time.Unix(u, 0).In(loc)
			for _, f := range strftimeFormats {
				fmt.Fprintf(&got, "%s\t%d\t%s", zone, u, escapeBytes(f))
				for _, size := range []int{strftimeMax, 1024} {
					if text, ok := strftime(nil, f, when, size); ok {
						got.WriteString("\t=" + escapeBytes(string(text)))
					} else {
						got.WriteString("\tFAIL")
					}
				}
				got.WriteByte('\n')
			}
		}
	}
	diffLines(t, "strftime against glibc", []byte(got.String()), want)
}

func TestStrftimeMicroseconds(t *testing.T) {
	when := time.Date(2026, 11, 22, 3, 55, 8, 214230999, time.UTC)
	for _, tc := range []struct {
		format, want string
		err          error
	}{
		{"%H:%M:%S.%f", "03:55:08.214230", nil},
		{"%f%f", "214230214230", nil},
		{"%%%f", "%214230", nil},
		{"%%f", "(?)", ErrStrftime}, // 0.17 replaces "%f" first, even in "%%f", leaving "%214230"
		{"", "(?)", ErrStrftime},
		{"%c %c %c", "(?)", ErrStrftime},
	} {
		got, err := Strftime(tc.format, when)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Strftime(%q) = %q, %v; want %q, %v", tc.format, got, err, tc.want, tc.err)
		}
	}
}
