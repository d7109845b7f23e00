package harness

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Ports each node listens on, on its own namespace's address.
const (
	APIPort  = 8080
	RaftPort = 7000
	DNSPort  = 53
)

// Node is one kudurru process slot: a namespace, an address, a data dir and
// a log file that survive restarts of the process.
type Node struct {
	ID      string
	Index   int    // 1-based
	NS      string // network namespace
	IP      string
	DataDir string
	LogPath string

	mu      sync.Mutex // guards the fields below
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	exitErr error
	paused  bool
	starts  int
}

// APIURL is the base URL of the node's HTTP API.
func (n *Node) APIURL() string { return "http://" + net.JoinHostPort(n.IP, fmt.Sprint(APIPort)) }

// RaftAddr is the node's Raft address.
func (n *Node) RaftAddr() string { return net.JoinHostPort(n.IP, fmt.Sprint(RaftPort)) }

// DNSAddr is the node's DNS address.
func (n *Node) DNSAddr() string { return net.JoinHostPort(n.IP, fmt.Sprint(DNSPort)) }

// Running reports whether the process is alive (paused counts as alive).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running()
}

func (n *Node) running() bool {
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Serving reports whether the process is alive and not paused.
func (n *Node) Serving() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running() && !n.paused
}

// Started reports whether the process was ever started.
func (n *Node) Started() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.starts > 0
}

// ExitErr is how the last process ended, nil while it runs.
func (n *Node) ExitErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exitErr
}

// start runs bin with args inside the node's namespace. The wait for its
// exit runs on a goroutine that wg tracks.
func (n *Node) start(bin string, args []string, wg *sync.WaitGroup) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running() {
		return fmt.Errorf("node %s is already running", n.ID)
	}
	if err := os.MkdirAll(n.DataDir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "\n=== harness: start %d at %s: %s %s\n", n.starts+1, time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
	// ip netns exec enters the namespace and execs the binary, so the pid
	// is kudurru's own.
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.NS, bin}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // ^C goes to the harness, which stops the nodes
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", n.ID, err)
	}
	writePid(n.ID, cmd.Process.Pid)
	done := make(chan struct{})
	n.cmd, n.done, n.exitErr, n.paused = cmd, done, nil, false
	n.starts++
	wg.Go(func() {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.exitErr = err
		if err == nil {
			n.exitErr = errors.New("exited with status 0")
		}
		n.mu.Unlock()
		removePid(n.ID)
		close(done)
	})
	return nil
}

// signal sends sig to the running process.
func (n *Node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running() {
		return fmt.Errorf("node %s is not running", n.ID)
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to %s: %w", sig, n.ID, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return nil
}

// wait blocks until the process exits or d passes.
func (n *Node) wait(d time.Duration) bool {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-done:
		return true
	case <-tm.C:
		return false
	}
}

// Kill sends SIGKILL and waits for the exit.
func (n *Node) Kill() error {
	_ = n.signal(syscall.SIGCONT) // a stopped process dies on SIGKILL too, but resume keeps the state simple
	if err := n.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !n.wait(10 * time.Second) {
		return fmt.Errorf("node %s did not die after SIGKILL", n.ID)
	}
	return nil
}

// Terminate sends SIGTERM and waits up to grace for a clean exit, then
// kills the process.
func (n *Node) Terminate(grace time.Duration) error {
	_ = n.signal(syscall.SIGCONT)
	if err := n.signal(syscall.SIGTERM); err != nil {
		return err
	}
	if n.wait(grace) {
		return nil
	}
	return n.Kill()
}

// Pause sends SIGSTOP.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT) }

// ReplaceFile copies src over name inside the node's data dir (the process
// must be stopped).
func (n *Node) ReplaceFile(name, src string) error {
	if n.Running() {
		return fmt.Errorf("node %s is running", n.ID)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.DataDir, name), b, 0o600)
}
