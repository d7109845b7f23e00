package resolver

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestInflight(t *testing.T) {
	stop := make(chan struct{})
	full := prometheus.NewCounter(prometheus.CounterOpts{Name: "x", Help: "x"})
	l := newInflight(2, stop, full)
	if l.acquire() != nil || l.acquire() != nil {
		t.Fatal("acquire below the limit failed")
	}
	got := make(chan error, 1)
	go func() { got <- l.acquire() }()
	l.release() // makes room for the waiting acquire
	if err := <-got; err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	go func() { got <- l.acquire() }()
	close(stop)
	if err := <-got; err != errStopping {
		t.Fatalf("acquire after stop = %v, want errStopping", err)
	}
	l.release()
	l.release()
	if n := l.n.Load(); n != 0 {
		t.Errorf("slots taken after all releases = %d", n)
	}
}
