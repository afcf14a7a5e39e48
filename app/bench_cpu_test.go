package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuTicks is what the machine and this process have spent of the CPU up to a moment, in the
// kernel's clock ticks (USER_HZ), read from /proc: the machine's busy time across its cores and
// this process's (user and system). A benchmark that shares the machine with a database server
// reads where its time went from them: the process is the service and the benchmark's clients,
// the rest of the machine the database and whatever else runs. database, when asked for, is
// what the PostgreSQL backends serving one database have spent: the statements of the service
// under test, apart from the server's background work and from other databases' sessions.
type cpuTicks struct {
	machine, process, database int64
	at                         time.Time
}

// userHZ is the unit of the tick counts /proc reports, fixed at 100 for user space on Linux.
const userHZ = 100

// readCPU samples the counters, database's backends too when database is not ""; ok is false
// where /proc does not have them (not Linux).
func readCPU(database string) (c cpuTicks, ok bool) {
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
	if c.process, ok = procTicks("/proc/self"); !ok {
		return c, false
	}
	if database != "" {
		c.database, ok = backendTicks(database)
	}
	return c, ok
}

// procTicks reads what the process at dir (/proc/<pid>) has spent, user and system.
func procTicks(dir string) (int64, bool) {
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, false
	}
	// "pid (comm) state ppid ...": utime and stime are the 14th and 15th fields; comm may hold
	// spaces, so count from after its closing parenthesis (field 3 on).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	g := bytes.Fields(stat[i+1:])
	if len(g) < 13 {
		return 0, false
	}
	var ticks int64
	for _, v := range g[11:13] {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return ticks, true
}

// backendTicks adds up what the PostgreSQL backends connected to database have spent: the
// processes whose title (their command line) is "postgres: <user> <database> <client> ...".
// A backend that ends between two samples takes its ticks with it; the pools here keep theirs.
func backendTicks(database string) (int64, bool) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, false
	}
	var sum int64
	for _, dir := range dirs {
		title, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue // it ended, or is not ours to read
		}
		f := strings.Fields(strings.TrimRight(string(title), "\x00"))
		if len(f) < 3 || f[0] != "postgres:" || f[2] != database {
			continue
		}
		if n, ok := procTicks(dir); ok {
			sum += n
		}
	}
	return sum, true
}

// cpuSpent adds up CPU spent over timed spans: machine, process and backend ticks and the wall
// time.
type cpuSpent struct {
	// database names the database whose backends are counted too ("" for none).
	database string

	machine, process, backends int64
	wall                       time.Duration
	spans                      int
	unknown                    bool // a span without counters: the sums mean nothing
}

// measure runs fn as one span and counts what it spent.
func (s *cpuSpent) measure(fn func()) {
	a, okA := readCPU(s.database)
	fn()
	b, okB := readCPU(s.database)
	s.spans++
	if !okA || !okB {
		s.unknown = true
		return
	}
	s.machine += b.machine - a.machine
	s.process += b.process - a.process
	s.backends += b.database - a.database
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

// perRow returns the machine's, the process's and the database's backends' CPU time per row,
// in microseconds.
func (s cpuSpent) perRow(rows int) (machine, process, backends float64) {
	if rows <= 0 {
		return 0, 0, 0
	}
	us := 1e6 / userHZ / float64(rows)
	return float64(s.machine) * us, float64(s.process) * us, float64(s.backends) * us
}
