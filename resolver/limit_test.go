package resolver

import (
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSlots(t *testing.T) {
	stop := make(chan struct{})
	full := prometheus.NewCounter(prometheus.CounterOpts{Name: "x", Help: "x"})
	l := newSlots(3, stop, full)
	if n, err := l.acquire(2); n != 2 || err != nil {
		t.Fatalf("acquire(2) = %d, %v; want 2 slots", n, err)
	}
	if n, err := l.acquire(5); n != 1 || err != nil {
		t.Fatalf("acquire(5) with one free = %d, %v; want 1 slot", n, err)
	}
	got := make(chan int, 1)
	go func() { n, _ := l.acquire(4); got <- n }()
	// The acquire counts the wait before it sleeps; nothing signals that,
	// so poll with a deadline.
	for deadline := time.Now().Add(10 * time.Second); testutil.ToFloat64(full) != 1; {
		if time.Now().After(deadline) {
			t.Fatal("acquire with no free slot did not count an overload wait")
		}
		runtime.Gosched()
	}
	l.release(2) // makes room for the waiting acquire
	if n := <-got; n != 2 {
		t.Fatalf("waiting acquire took %d slots, want the 2 released", n)
	}
	errs := make(chan error, 1)
	go func() { _, err := l.acquire(1); errs <- err }()
	close(stop)
	if err := <-errs; err != errStopping {
		t.Fatalf("acquire after stop = %v, want errStopping", err)
	}
	l.release(3)
	if n := l.free.Load(); n != 3 {
		t.Errorf("free slots after all releases = %d, want 3", n)
	}
}

// TestSlotsWakeAll checks that slots released at once reach every reader
// waiting for them, not only the first.
func TestSlotsWakeAll(t *testing.T) {
	full := prometheus.NewCounter(prometheus.CounterOpts{Name: "x", Help: "x"})
	l := newSlots(2, make(chan struct{}), full)
	if n, _ := l.acquire(2); n != 2 {
		t.Fatal("could not take both slots")
	}
	got := make(chan int, 2)
	for range 2 {
		go func() { n, _ := l.acquire(1); got <- n }()
	}
	l.release(2)
	if a, b := <-got, <-got; a != 1 || b != 1 {
		t.Errorf("waiting readers took %d and %d slots, want 1 each", a, b)
	}
}
