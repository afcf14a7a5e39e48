package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a process the harness started and must stop.
type proc struct {
	name  string
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process has exited
	err   error         // its exit status, once done
	stop  syscall.Signal
	pprof string // the service's PPROF_ADDR, when profiled with -pprof
}

// procs are every process of a run; stopAll ends those still running.
type procs struct {
	mu   sync.Mutex
	list []*proc
}

// start starts a long-running process (a server) with its output in logPath. The process gets
// SIGKILL if the harness dies first (Pdeathsig), so even a killed harness leaves nothing behind.
func (ps *procs) start(name, logPath string, cred *syscall.Credential, env []string, stop syscall.Signal, argv ...string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = filepath.Dir(logPath)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	if stop == syscall.SIGQUIT {
		// PostgreSQL: on our death an immediate shutdown, which also ends its own children.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), stop: stop}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	return p, nil
}

// halt asks p to stop with its stop signal and kills it when it has not within grace.
func (p *proc) halt(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(p.stop)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// stopAll stops every process still running, the newest first (servers before the database).
func (ps *procs) stopAll() {
	ps.mu.Lock()
	list := ps.list
	ps.list = nil
	ps.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].halt(30 * time.Second)
	}
}

// running reports an error when p has exited.
func (p *proc) running() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v", p.name, p.err)
	default:
		return nil
	}
}

// waitHTTP waits until GET url answers 200, p exits, or the time is up.
func waitHTTP(ctx context.Context, p *proc, url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		if err := p.running(); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer %s within %v", p.name, url, within)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitTCP waits until addr accepts connections, p exits, or the time is up.
func waitTCP(ctx context.Context, p *proc, addr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		if err := p.running(); err != nil {
			return err
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not listen on %s within %v", p.name, addr, within)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freeAddr asks the kernel for a free loopback port.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// runOut runs a short-lived command (a load run, a build) to completion within limit and returns
// its stdout; stderr is passed through. It is killed when ctx ends or the limit passes.
func runOut(ctx context.Context, limit time.Duration, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (limit %v)", err, limit)
		}
		return out, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return out, nil
}
