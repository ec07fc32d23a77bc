package output

import (
	"strconv"
	"strings"
	"time"
)

// strftimeMax is the size of bpftrace 0.17's strftime buffer, NUL
// included: a result of strftimeMax bytes or more does not fit.
const strftimeMax = 64

// Strftime formats t as bpftrace 0.17's strftime(format, nsecs) builtin
// does: "%f" becomes the microseconds of t, zero-padded to 6 digits, then
// glibc's strftime formats the rest in the C locale and t's time zone.
// When that fails (an empty result, or 64 bytes or more) it returns "(?)"
// and ErrStrftime, which 0.17 reports on standard error.
//
// t is the boot time plus the event's nsecs, as 0.17 computes it.
func Strftime(format string, t time.Time) (string, error) {
	usecs := strconv.Itoa(t.Nanosecond()/1000 + 1000000)[1:]
	format = strings.ReplaceAll(format, "%f", usecs)
	text, ok := strftime(nil, format, t, strftimeMax)
	if !ok {
		return "(?)", ErrStrftime
	}
	return string(text), nil
}

var (
	weekdays = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	months   = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
)

// tm is C's struct tm, as localtime_r fills it.
type tm struct {
	sec, min, hour, mday, mon, year, wday, yday int
	isdst                                       bool
	gmtoff                                      int
	zone                                        string
	unix                                        int64
}

func toTM(t time.Time) tm {
	zone, off := t.Zone()
	return tm{
		sec: t.Second(), min: t.Minute(), hour: t.Hour(),
		mday: t.Day(), mon: int(t.Month()) - 1, year: t.Year() - 1900,
		wday: int(t.Weekday()), yday: t.YearDay() - 1,
		isdst: t.IsDST(), gmtoff: off, zone: zone, unix: t.Unix(),
	}
}

// strftime appends format applied to t, as glibc's strftime does in the C
// locale, and reports whether glibc would succeed: a result that, with its
// NUL, does not fit in maxsize bytes, or an empty one, fails.
func strftime(b []byte, format string, t time.Time, maxsize int) ([]byte, bool) {
	start := len(b)
	b, ok := strftimeTM(b, format, toTM(t), maxsize)
	return b, ok && len(b) > start
}

func strftimeTM(b []byte, format string, tp tm, maxsize int) ([]byte, bool) {
	start := len(b)
	hour12 := tp.hour
	if hour12 > 12 {
		hour12 -= 12
	} else if hour12 == 0 {
		hour12 = 12
	}
	fits := func() bool { return len(b)-start < maxsize }

	for f := 0; f < len(format); f++ {
		if format[f] != '%' {
			b = append(b, format[f])
			if !fits() {
				return b, false
			}
			continue
		}
		percent := f
		var pad byte
		upcase, swapcase := false, false
	flags:
		for f++; f < len(format); f++ {
			switch format[f] {
			case '_', '-', '0':
				pad = format[f]
			case '^':
				upcase = true
			case '#':
				swapcase = true
			default:
				break flags
			}
		}
		width := -1
		if f < len(format) && isDigit(format[f]) {
			width = 0
			for ; f < len(format) && isDigit(format[f]); f++ {
				if width < maxsize {
					width = width*10 + int(format[f]-'0')
				}
			}
		}
		if width >= maxsize {
			// The field alone would not fit; glibc fails the same way.
			return b, false
		}
		var modifier byte
		if f < len(format) && (format[f] == 'E' || format[f] == 'O') {
			modifier = format[f]
			f++
		}
		var conv byte
		if f < len(format) {
			conv = format[f]
		} else {
			f-- // "%" at the end: glibc prints it as is
		}
		lower := false

		// cpy appends text padded to width, spaces unless the '0' flag.
		cpy := func(text string) {
			for n := width - len(text); n > 0; n-- {
				if pad == '0' {
					b = append(b, '0')
				} else {
					b = append(b, ' ')
				}
			}
			for i := 0; i < len(text); i++ {
				c := text[i]
				switch {
				case lower && c >= 'A' && c <= 'Z':
					c += 'a' - 'A'
				case upcase && c >= 'a' && c <= 'z':
					c -= 'a' - 'A'
				}
				b = append(b, c)
			}
		}
		// signed appends v with sign and padding as glibc's
		// do_number_sign_and_padding does: at least digits characters,
		// zeros by default, spaces for '_', none for '-'; then the field
		// width pads what is left.
		signed := func(digits int, v int64) {
			neg := v < 0
			u := uint64(v)
			if neg {
				u = -u
			}
			num := strconv.AppendUint(nil, u, 10)
			if neg {
				num = append([]byte{'-'}, num...)
			}
			if padding := digits - len(num); pad != '-' && padding > 0 {
				if pad == '_' {
					for range padding {
						b = append(b, ' ')
					}
					width = max(width-padding, 0)
				} else {
					if neg {
						b = append(b, '-')
						num = num[1:]
					}
					for range padding {
						b = append(b, '0')
					}
					width = 0
				}
			}
			cpy(string(num))
		}
		// number is glibc's DO_NUMBER: at least d digits, or width.
		number := func(d int, v int, spacepad bool) {
			if spacepad && pad != '0' && pad != '-' {
				pad = '_'
			}
			signed(max(d, width), int64(v))
		}
		// subformat appends a fixed sub-format's whole result as one field.
		subformat := func(sub string) {
			text, _ := strftimeTM(nil, sub, tp, maxsize)
			cpy(string(text))
		}
		bad := false
		switch conv {
		case '%':
			b = append(b, '%')
		case 'a', 'A':
			if modifier != 0 {
				bad = true
				break
			}
			if swapcase {
				upcase = true
			}
			if conv == 'a' {
				cpy(weekdays[tp.wday][:3])
			} else {
				cpy(weekdays[tp.wday])
			}
		case 'b', 'h', 'B':
			if modifier == 'E' {
				bad = true
				break
			}
			if swapcase {
				upcase = true
			}
			if conv == 'B' {
				cpy(months[tp.mon])
			} else {
				cpy(months[tp.mon][:3])
			}
		case 'c':
			if modifier == 'O' {
				bad = true
				break
			}
			subformat("%a %b %e %H:%M:%S %Y")
		case 'C':
			year := tp.year + 1900
			c := year / 100
			if year%100 < 0 {
				c--
			}
			number(1, c, false)
		case 'x', 'D':
			if conv == 'x' && modifier == 'O' || conv == 'D' && modifier != 0 {
				bad = true
				break
			}
			subformat("%m/%d/%y")
		case 'd', 'e', 'H', 'I', 'k', 'l', 'j', 'M', 'm', 'S', 'U', 'W', 'V', 'g', 'G', 'w':
			if modifier == 'E' {
				bad = true
				break
			}
			switch conv {
			case 'd':
				number(2, tp.mday, false)
			case 'e':
				number(2, tp.mday, true)
			case 'H':
				number(2, tp.hour, false)
			case 'I':
				number(2, hour12, false)
			case 'k':
				number(2, tp.hour, true)
			case 'l':
				number(2, hour12, true)
			case 'j':
				number(3, tp.yday+1, false)
			case 'M':
				number(2, tp.min, false)
			case 'm':
				number(2, tp.mon+1, false)
			case 'S':
				number(2, tp.sec, false)
			case 'U':
				number(2, (tp.yday-tp.wday+7)/7, false)
			case 'W':
				number(2, (tp.yday-(tp.wday-1+7)%7+7)/7, false)
			case 'w':
				number(1, tp.wday, false)
			default:
				year, days := isoWeek(tp)
				switch conv {
				case 'g':
					number(2, (year%100+100)%100, false)
				case 'G':
					number(1, year, false)
				default:
					number(2, days/7+1, false)
				}
			}
		case 'F':
			if modifier != 0 {
				bad = true
				break
			}
			subformat("%Y-%m-%d")
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case 'P', 'p':
			lower = conv == 'P'
			if swapcase {
				upcase, lower = false, true
			}
			if tp.hour > 11 {
				cpy("PM")
			} else {
				cpy("AM")
			}
		case 'R':
			subformat("%H:%M")
		case 'r':
			subformat("%I:%M:%S %p")
		case 'T':
			subformat("%H:%M:%S")
		case 'X':
			if modifier == 'O' {
				bad = true
				break
			}
			subformat("%H:%M:%S")
		case 's':
			signed(1, tp.unix)
		case 'u':
			number(1, (tp.wday-1+7)%7+1, false)
		case 'Y':
			if modifier == 'O' {
				bad = true
				break
			}
			number(1, tp.year+1900, false)
		case 'y':
			number(2, (tp.year%100+100)%100, false)
		case 'Z':
			if swapcase {
				upcase, lower = false, true
			}
			cpy(tp.zone)
		case 'z':
			// glibc pads the sign to the width too, as a field of its own.
			diff := tp.gmtoff
			if diff < 0 {
				cpy("-")
				diff = -diff
			} else {
				cpy("+")
			}
			diff /= 60
			number(4, diff/60*100+diff%60, false)
		default:
			bad = true
		}
		if bad {
			cpy(format[percent : f+1])
		}
		if !fits() {
			return b, false
		}
	}
	return b, true
}

// isoWeek returns the ISO 8601 week-based year of tp and the days since
// the start of its first week.
func isoWeek(tp tm) (year, days int) {
	year = tp.year + 1900
	days = isoWeekDays(tp.yday, tp.wday)
	if days < 0 {
		year--
		days = isoWeekDays(tp.yday+365+leap(year), tp.wday)
	} else if d := isoWeekDays(tp.yday-(365+leap(year)), tp.wday); d >= 0 {
		year++
		days = d
	}
	return year, days
}

func isoWeekDays(yday, wday int) int {
	const bigEnoughMultipleOf7 = (366/7 + 2) * 7
	return yday - (yday-wday+4+bigEnoughMultipleOf7)%7 + 3
}

func leap(year int) int {
	if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		return 1
	}
	return 0
}
