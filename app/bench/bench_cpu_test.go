package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// cpuTime is what the machine and this process have spent of the CPU up to a moment, in seconds,
// read from /proc: the machine's busy time across its cores and this process's (user and
// system). A benchmark that shares the machine with a database server reads where its time went
// from them: the process is the service and the benchmark's clients, the rest of the machine the
// database and whatever else runs. database, when asked for, is what the PostgreSQL backends
// serving one database have spent: the statements of the service under test, apart from the
// server's background work and from other databases' sessions.
type cpuTime struct {
	machine, process, database float64
	at                         time.Time
}

// readCPU samples the counters, database's backends too when database is not ""; ok is false
// where /proc does not have them (not Linux). procfs parses /proc's files: the client library
// behind the service's own process metrics.
func readCPU(database string) (c cpuTime, ok bool) {
	c.at = time.Now()
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return c, false
	}
	stat, err := fs.Stat()
	if err != nil {
		return c, false
	}
	// Busy is all but idle and iowait; guest time is counted in user already.
	t := stat.CPUTotal
	c.machine = t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ + t.Steal
	self, err := fs.Self()
	if err != nil {
		return c, false
	}
	if c.process, ok = procCPU(self); !ok {
		return c, false
	}
	if database != "" {
		c.database, ok = backendCPU(fs, database)
	}
	return c, ok
}

// procCPU is what process p has spent, user and system.
func procCPU(p procfs.Proc) (float64, bool) {
	s, err := p.Stat()
	if err != nil {
		return 0, false
	}
	return s.CPUTime(), true
}

// backendCPU adds up what the PostgreSQL backends connected to database have spent: the
// processes whose title (their command line) is "postgres: <user> <database> <client> ...".
// A backend that ends between two samples takes its time with it; the pools here keep theirs.
func backendCPU(fs procfs.FS, database string) (float64, bool) {
	procs, err := fs.AllProcs()
	if err != nil {
		return 0, false
	}
	var sum float64
	for _, p := range procs {
		title, err := p.CmdLine()
		if err != nil {
			continue // it ended, or is not ours to read
		}
		f := strings.Fields(strings.Join(title, " "))
		if len(f) < 3 || f[0] != "postgres:" || f[2] != database {
			continue
		}
		if n, ok := procCPU(p); ok {
			sum += n
		}
	}
	return sum, true
}

// cpuSpent adds up CPU spent over timed spans: machine, process and backend seconds and the
// wall time.
type cpuSpent struct {
	// database names the database whose backends are counted too ("" for none).
	database string
	// profile, when not "", is where each span's CPU profile of this process goes: the file
	// profile-<span>.pprof (spans from 1). go tool pprof merges several files given together.
	profile string

	machine, process, backends float64
	wall                       time.Duration
	spans                      int
	unknown                    bool // a span without counters: the sums mean nothing
}

// measure runs fn as one span and counts what it spent.
func (s *cpuSpent) measure(fn func()) {
	s.spans++
	stop := s.startProfile()
	a, okA := readCPU(s.database)
	fn()
	b, okB := readCPU(s.database)
	stop()
	if !okA || !okB {
		s.unknown = true
		return
	}
	s.machine += b.machine - a.machine
	s.process += b.process - a.process
	s.backends += b.database - a.database
	s.wall += b.at.Sub(a.at)
}

// startProfile starts the span's CPU profile, when one is asked for, and returns what ends it.
// A profile that cannot be written is reported and skipped: it never fails the measurement.
func (s *cpuSpent) startProfile() (stop func()) {
	if s.profile == "" {
		return func() {}
	}
	name := fmt.Sprintf("%s-%d.pprof", s.profile, s.spans)
	f, err := os.Create(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "cpu profile %s: %v\n", name, err) // another profile is running
		_ = f.Close()
		_ = os.Remove(name)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "cpu profile %s: %v\n", name, err)
		}
	}
}

// known reports whether every span was counted.
func (s cpuSpent) known() bool { return s.spans > 0 && !s.unknown }

// cores returns the machine's and the process's busy cores over the spans, on average.
func (s cpuSpent) cores() (machine, process float64) {
	w := s.wall.Seconds()
	if w <= 0 {
		return 0, 0
	}
	return s.machine / w, s.process / w
}

// perRow returns the machine's, the process's and the database's backends' CPU time per row,
// in microseconds.
func (s cpuSpent) perRow(rows int) (machine, process, backends float64) {
	if rows <= 0 {
		return 0, 0, 0
	}
	us := 1e6 / float64(rows)
	return s.machine * us, s.process * us, s.backends * us
}

// TestCPUSpentProfiles: with profile set, each span leaves its own CPU profile (gzipped
// protobuf, as pprof writes it), numbered from 1; without, none.
func TestCPUSpentProfiles(t *testing.T) {
	dir := t.TempDir()
	s := cpuSpent{profile: filepath.Join(dir, "side")}
	for range 2 {
		s.measure(func() { time.Sleep(20 * time.Millisecond) })
	}
	for _, n := range []string{"side-1.pprof", "side-2.pprof"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: %d bytes, not a gzipped profile", n, len(b))
		}
	}
	(&cpuSpent{}).measure(func() {})
	if got, _ := filepath.Glob(filepath.Join(dir, "*")); len(got) != 2 {
		t.Errorf("files in the profile directory: %v, want the two spans' only", got)
	}
}
