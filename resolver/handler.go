package resolver

import (
	"context"

	"github.com/miekg/dns"
)

// Handler is one stage of the query chain.
//
// ServeDNS answers r or hands it to the next stage. The returned rcode keeps
// CoreDNS's meaning: SERVFAIL, REFUSED, FORMERR and NOTIMP mean nothing has
// been written yet and the server must write that error reply; any other
// rcode means the stage has written the reply. An error is for the log; the
// rcode decides what the client gets. ServeDNS is called concurrently from
// many goroutines; r must not be modified.
type Handler interface {
	ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error)

// ServeDNS calls f.
func (f HandlerFunc) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	return f(ctx, w, r)
}

// stage wraps the rest of the chain.
type stage func(next Handler) Handler

// compose builds a chain: the first stage is the outermost.
func compose(last Handler, stages ...stage) Handler {
	h := last
	for i := len(stages) - 1; i >= 0; i-- {
		h = stages[i](h)
	}
	return h
}

// clientWrote reports whether a stage that returned rcode has written its
// reply (CoreDNS plugin.ClientWrite).
func clientWrote(rcode int) bool {
	switch rcode {
	case dns.RcodeServerFailure, dns.RcodeRefused, dns.RcodeFormatError, dns.RcodeNotImplemented:
		return false
	}
	return true
}

// errorReply is the reply the server writes for an error rcode: the header
// and the question (when there was exactly one), nothing else. The writer
// adds the OPT record.
func errorReply(r *dns.Msg, rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.Id = r.Id
	m.Response = true
	m.Opcode = r.Opcode
	m.RecursionDesired = r.RecursionDesired
	m.CheckingDisabled = r.CheckingDisabled
	m.Rcode = rcode
	if len(r.Question) == 1 {
		m.Question = []dns.Question{r.Question[0]}
	}
	return m
}

// refuse is the end of the chain: no stage could answer.
var refuse = HandlerFunc(func(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
	return dns.RcodeRefused, nil
})
