package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StateDir holds the run lock and one pid file per node process, so that a
// run that died (a test timeout panic skips deferred calls) is cleaned up
// by the next one.
const StateDir = "/run/kudurru-jepsen"

// CheckRoot returns an error that says clearly why the suite cannot run
// when the process is not root.
func CheckRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("the partition suite needs root (network namespaces, veth, iptables): run it with sudo, e.g. sudo make jepsen")
	}
	return nil
}

// Lock takes the machine-wide run lock so that two runs do not tear down
// each other's namespaces. It returns the unlock function.
func Lock() (func(), error) {
	if err := os.MkdirAll(filepath.Join(StateDir, "pids"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(StateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another partition-suite run holds %s: %w", f.Name(), err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func pidFile(id string) string { return filepath.Join(StateDir, "pids", id+".pid") }

func writePid(id string, pid int) {
	_ = os.WriteFile(pidFile(id), []byte(strconv.Itoa(pid)), 0o644)
}

func removePid(id string) { _ = os.Remove(pidFile(id)) }

// StaleCleanup kills node processes a previous run left (only those named
// in its pid files and still running "kudurru … serve --node-id"), then
// removes every kj- namespace and the host uplink. Call it with the lock
// held.
func StaleCleanup(ctx context.Context) error {
	files, _ := filepath.Glob(filepath.Join(StateDir, "pids", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && perr == nil && pid > 1 && isNodeProcess(pid) {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid, 5*time.Second)
		}
		_ = os.Remove(f)
	}
	return removeAll(ctx)
}

// isNodeProcess checks /proc that pid runs kudurru serve --node-id.
func isNodeProcess(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	cmd := strings.ReplaceAll(string(b), "\x00", " ")
	return strings.Contains(cmd, "kudurru") && strings.Contains(cmd, " serve ") && strings.Contains(cmd, "--node-id")
}

func waitGone(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond) // no event exists for another process's exit
	}
}

// cleanups are run by the signal handler; Cluster registers its Close.
var cleanups struct {
	sync.Mutex
	next int
	fns  map[int]func()
}

// onInterrupt registers f to run on SIGINT/SIGTERM and returns its
// deregistration.
func onInterrupt(f func()) func() {
	cleanups.Lock()
	defer cleanups.Unlock()
	if cleanups.fns == nil {
		cleanups.fns = map[int]func(){}
	}
	id := cleanups.next
	cleanups.next++
	cleanups.fns[id] = f
	return func() {
		cleanups.Lock()
		defer cleanups.Unlock()
		delete(cleanups.fns, id)
	}
}

var installOnce sync.Once

// InstallSignalHandler makes SIGINT and SIGTERM run every registered
// cleanup (killing the nodes, removing namespaces and bridge) and exit
// with status 130. Node processes run in their own process group, so a
// terminal's ^C reaches only the test process, which then stops them.
func InstallSignalHandler() {
	installOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		go func() { // lives as long as the process; it exits the process
			sig := <-ch
			fmt.Fprintf(os.Stderr, "\npartition suite: %v: cleaning up namespaces and node processes\n", sig)
			cleanups.Lock()
			fns := make([]func(), 0, len(cleanups.fns))
			for _, f := range cleanups.fns {
				fns = append(fns, f)
			}
			cleanups.Unlock()
			for _, f := range fns {
				f()
			}
			_ = removeAll(context.Background())
			os.Exit(130)
		}()
	})
}
