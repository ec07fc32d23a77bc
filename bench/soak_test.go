package main

import (
	"testing"
	"time"
)

func TestVMRSS(t *testing.T) {
	for _, tt := range []struct {
		status string
		bytes  int64
		ok     bool
	}{
		{"Name:\tkinst\nVmPeak:\t  30000 kB\nVmRSS:\t   22016 kB\nRssAnon:\t 9000 kB\n", 22016 << 10, true},
		{"Name:\tzombie\nState:\tZ (zombie)\n", 0, false},
		{"VmRSS:\t22016 MB\n", 0, false},
		{"VmRSS:\tmany kB\n", 0, false},
	} {
		n, ok := vmRSS([]byte(tt.status))
		if n != tt.bytes || ok != tt.ok {
			t.Errorf("vmRSS(%q) = %d, %v; want %d, %v", tt.status, n, ok, tt.bytes, tt.ok)
		}
	}
}

func TestRSSFigures(t *testing.T) {
	// A sample every 10 units from 0 to 200; the stream runs from 50 to
	// 150: 11 samples, 1 MiB growing by 1 KiB each, but for a peak at 90.
	var samples []rssSample
	for at := int64(0); at <= 200; at += 10 {
		b := int64(mib + (at-50)/10*1024)
		if at == 90 {
			b = 5 * mib
		}
		samples = append(samples, rssSample{at, b})
	}
	st := rssFigures(samples, 50, 150)
	if !st.ok || st.start != mib || st.end != mib+10*1024 || st.max != 5*mib || st.settled != mib+1024 {
		t.Errorf("got %+v; want start 1 MiB, settled 1 MiB + 1 KiB, end 1 MiB + 10 KiB, max 5 MiB", st)
	}
	if want := "1.0 1.0 1.0 1.0 5.0 1.0 1.0 1.0 1.0 1.0 1.0 MiB"; st.trace != want {
		t.Errorf("trace %q, want %q", st.trace, want)
	}
	if st := rssFigures(samples, 50, 100); st.ok {
		t.Errorf("6 samples judged enough: %+v", st)
	}
}

func TestRunWatched(t *testing.T) {
	r := testRunner(t, 10*time.Second)
	var samples []rssSample
	var pid int
	res, err := r.runWatched([]string{"/bin/sh", "-c", "sleep 1"}, "", func(p int, done <-chan struct{}) {
		pid = p
		samples = sampleRSS(p, 20*time.Millisecond, r.clock.now, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The shell lives a second: some fifty samples, all within its life;
	// a loaded machine may take far fewer.
	if pid <= 0 || len(samples) < 5 {
		t.Fatalf("pid %d, %d samples; want the shell's and at least 5", pid, len(samples))
	}
	for _, s := range samples {
		if s.at < res.start || s.at > res.exit || s.bytes < 100<<10 {
			t.Errorf("sample %+v outside the run [%d, %d] or under a shell's 100 KiB", s, res.start, res.exit)
		}
	}
}
