package main

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// cpuTicks is what the machine and this process have spent of the CPU up to a moment, in the
// kernel's clock ticks (USER_HZ), read from /proc: the machine's busy time across its cores and
// this process's (user and system). A benchmark that shares the machine with a database server
// reads where its time went from two of them: the process is the service and the benchmark's
// clients, the rest of the machine the database and whatever else runs.
type cpuTicks struct {
	machine, process int64
	at               time.Time
}

// userHZ is the unit of the tick counts /proc reports, fixed at 100 for user space on Linux.
const userHZ = 100

// readCPU samples the counters; ok is false where /proc does not have them (not Linux).
func readCPU() (c cpuTicks, ok bool) {
	c.at = time.Now()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c, false
	}
	// First line: "cpu  user nice system idle iowait irq softirq steal ..."; busy is all but
	// idle and iowait.
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 8 || string(f[0]) != "cpu" {
		return c, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return c, false
		}
		if i != 3 && i != 4 && i < 8 { // guest time (9th on) is counted in user already
			c.machine += n
		}
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return c, false
	}
	// "pid (comm) state ppid ...": utime and stime are the 14th and 15th fields; comm may hold
	// spaces, so count from after its closing parenthesis (field 3 on).
	i := bytes.LastIndexByte(self, ')')
	if i < 0 {
		return c, false
	}
	g := bytes.Fields(self[i+1:])
	if len(g) < 13 {
		return c, false
	}
	for _, v := range g[11:13] {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return c, false
		}
		c.process += n
	}
	return c, true
}

// cpuSpent adds up CPU spent over timed spans: machine and process ticks and the wall time.
type cpuSpent struct {
	machine, process int64
	wall             time.Duration
	spans            int
	unknown          bool // a span without counters: the sums mean nothing
}

// measure runs fn as one span and counts what it spent.
func (s *cpuSpent) measure(fn func()) {
	a, okA := readCPU()
	fn()
	b, okB := readCPU()
	s.spans++
	if !okA || !okB {
		s.unknown = true
		return
	}
	s.machine += b.machine - a.machine
	s.process += b.process - a.process
	s.wall += b.at.Sub(a.at)
}

// known reports whether every span was counted.
func (s cpuSpent) known() bool { return s.spans > 0 && !s.unknown }

// cores returns the machine's and the process's busy cores over the spans, on average.
func (s cpuSpent) cores() (machine, process float64) {
	w := s.wall.Seconds() * userHZ
	if w <= 0 {
		return 0, 0
	}
	return float64(s.machine) / w, float64(s.process) / w
}

// perRow returns the machine's and the process's CPU time per row, in microseconds.
func (s cpuSpent) perRow(rows int) (machine, process float64) {
	if rows <= 0 {
		return 0, 0
	}
	us := 1e6 / userHZ / float64(rows)
	return float64(s.machine) * us, float64(s.process) * us
}
