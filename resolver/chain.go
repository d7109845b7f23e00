package resolver

// chain returns the query pipeline. This is the one place that says which
// stages a query passes and in which order, like CoreDNS's plugin.cfg; there
// is no registry and no reordering at run time.
//
//  1. recover: a panic in any later stage becomes SERVFAIL, logged once.
//  2. metrics: counts the request and the final rcode, times the query.
//  3. ingress: opcode, header counts, EDNS version, class, meta types.
//     UPDATE and NOTIFY will branch off here.
//  4. local: CHAOS names and the health name, answered without zones.
//  5. authority: the answer from the current zone.View (resolver/lookup).
//     Names outside every zone go on to the next stage, and so does a
//     CNAME chain that leaves the zones when forwarding is configured.
//  6. forward (forward.go): recursion ACL, cache, upstreams. Present only
//     when dns.forward names upstreams; it comes after authority, so a
//     served zone always wins over cached data.
//  7. refuse: REFUSED for what nobody answered.
func (s *Server) chain() Handler {
	stages := []stage{
		s.recoverStage,
		s.metricsStage,
		s.ingressStage,
		s.localStage,
		s.authorityStage,
	}
	// Forwarding: built here, in New, and stopped by Close (forward.go).
	if fwd := s.forwardStage(); fwd != nil {
		stages = append(stages, fwd)
	}
	return compose(refuse, stages...)
}
