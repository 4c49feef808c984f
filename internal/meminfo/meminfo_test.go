package meminfo

import "testing"

func TestParse(t *testing.T) {
	text := "MemTotal:       16384 kB\nMemFree:  1 kB\nMemAvailable:    8192 kB\nBad: 12 MB\nHuge: 99999999999999999999 kB\n"
	for _, c := range []struct {
		name string
		want uint64
	}{
		{"MemTotal:", 16384 << 10}, {"MemAvailable:", 8192 << 10}, {"Bad:", 0}, {"Huge:", 0}, {"Missing:", 0},
	} {
		if got := parse(text, c.name); got != c.want {
			t.Errorf("parse(%s) = %d, want %d", c.name, got, c.want)
		}
	}
	if Total() > 0 && Available() > Total() {
		t.Errorf("MemAvailable %d over MemTotal %d", Available(), Total())
	}
}
