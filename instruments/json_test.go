package instruments

import (
	"encoding/json"
	"testing"
	"time"
)

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "new\nline\ttab", "\x00\x01\x1f\x7f", "héllo"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil || got != s {
			t.Errorf("appendJSONString(%q) = %s, which decodes to %q (%v)", s, b, got, err)
		}
	}
}

// TestJSONWriter writes every kind of value, nested, in both layouts.
func TestJSONWriter(t *testing.T) {
	for _, tc := range []struct {
		compact bool
		want    string
	}{
		{false, `{"s": "a\u0001\"b\n", "u": 18446744073709551615, "i": -3, "t": true, "n": null, "h": "0xffff", "o": {}, "a": [1, {"k": []}, [2, 3]]}`},
		{true, `{"s":"a\u0001\"b\n","u":18446744073709551615,"i":-3,"t":true,"n":null,"h":"0xffff","o":{},"a":[1,{"k":[]},[2,3]]}`},
	} {
		w := jsonWriter{compact: tc.compact}
		w.open('{')
		w.key("s")
		w.str("a\x01\"b\n")
		w.key("u")
		w.uint(1<<64 - 1)
		w.key("i")
		w.int(-3)
		w.key("t")
		w.bool(true)
		w.key("n")
		w.null()
		w.key("h")
		w.hex(0xffff)
		w.key("o")
		w.open('{')
		w.close('}')
		w.key("a")
		w.open('[')
		w.int(1)
		w.open('{')
		w.key("k")
		w.open('[')
		w.close(']')
		w.close('}')
		w.open('[')
		w.int(2)
		w.int(3)
		w.close(']')
		w.close(']')
		w.close('}')
		if string(w.b) != tc.want {
			t.Errorf("compact %v:\ngot  %s\nwant %s", tc.compact, w.b, tc.want)
		}
		if !json.Valid(w.b) {
			t.Errorf("not JSON: %s", w.b)
		}
	}
}

// A nullified call is valid JSON whatever bytes the process name holds.
func TestNullifiedJSON(t *testing.T) {
	wall := time.Date(2026, 11, 25, 9, 0, 0, 5, time.UTC)
	// A control byte is escaped as JSON escapes it; Go's %q, which
	// nullify once used, wrote \x01.
	want := `{"time": "2026-11-25T09:00:00.000000005Z", "pid": 7, "tid": 8, "comm": "ctl\u0001", "function": "security_file_open", "return": -1}` + "\n"
	if got := string(nullifiedJSON(wall, 7, 8, "ctl\x01", "security_file_open", -1)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, comm := range []string{"cat", "a\"b\\c", "ctl\x01\x7f", "tab\tnl\n"} {
		line := nullifiedJSON(wall, 7, 8, comm, "security_file_open", -1)
		var rec struct {
			Time     string `json:"time"`
			Pid, Tid int64
			Comm     string `json:"comm"`
			Function string `json:"function"`
			Return   int64  `json:"return"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Errorf("comm %q: %s is not JSON: %v", comm, line, err)
			continue
		}
		if rec.Time != "2026-11-25T09:00:00.000000005Z" || rec.Pid != 7 || rec.Tid != 8 || rec.Comm != comm || rec.Function != "security_file_open" || rec.Return != -1 {
			t.Errorf("comm %q: decoded %+v from %s", comm, rec, line)
		}
	}
}
