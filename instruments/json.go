package instruments

import "strconv"

// A jsonWriter appends JSON to a buffer, one value after another, and
// puts the commas between them. Every instrument writes its JSON with
// it: the log lines, which separate members with ", " and keys with
// ": " as bpftrace's JSON output does, and blocks' document, which is
// compact. Writing allocates nothing beyond the buffer's growth, which
// trace's log needs.
type jsonWriter struct {
	b       []byte
	compact bool // no space after commas and colons
	more    bool // a value ends the text: the next one needs a comma
}

// reset starts a new text in b.
func (w *jsonWriter) reset(b []byte) {
	w.b, w.more = b, false
}

// value starts a value: the caller may append its text to w.b itself.
func (w *jsonWriter) value() {
	if w.more {
		w.b = append(w.b, ',')
		if !w.compact {
			w.b = append(w.b, ' ')
		}
	}
	w.more = true
}

// key starts an object member.
func (w *jsonWriter) key(k string) {
	w.str(k)
	w.b = append(w.b, ':')
	if !w.compact {
		w.b = append(w.b, ' ')
	}
	w.more = false
}

// open starts an object ('{') or an array ('[').
func (w *jsonWriter) open(c byte) {
	w.value()
	w.b = append(w.b, c)
	w.more = false
}

// close ends an object ('}') or an array (']').
func (w *jsonWriter) close(c byte) {
	w.b = append(w.b, c)
	w.more = true
}

func (w *jsonWriter) str(s string) {
	w.value()
	w.b = appendJSONString(w.b, s)
}

func (w *jsonWriter) uint(n uint64) {
	w.value()
	w.b = strconv.AppendUint(w.b, n, 10)
}

func (w *jsonWriter) int(n int64) {
	w.value()
	w.b = strconv.AppendInt(w.b, n, 10)
}

func (w *jsonWriter) bool(v bool) {
	w.value()
	w.b = strconv.AppendBool(w.b, v)
}

func (w *jsonWriter) null() {
	w.value()
	w.b = append(w.b, "null"...)
}

// hex writes n as a string of hex digits after 0x: JSON numbers lose
// the precision of addresses.
func (w *jsonWriter) hex(n uint64) {
	w.value()
	w.b = append(w.b, `"0x`...)
	w.b = strconv.AppendUint(w.b, n, 16)
	w.b = append(w.b, '"')
}

// jsonTime is how JSON lines give the wall time: RFC 3339 to the
// nanosecond.
const jsonTime = "2006-01-02T15:04:05.000000000Z07:00"

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
