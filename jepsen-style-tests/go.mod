module github.com/kudurru/kudurru/jepsen-style-tests

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/miekg/dns v1.1.73
	go.uber.org/goleak v1.3.0
)

require (
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
