package resolver

import (
	"context"
	"strconv"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
)

// localStage answers the names that belong to the server rather than to a
// zone: the CHAOS-class identity names and the health name.
func (s *Server) localStage(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		q := r.Question[0]
		if q.Qclass == dns.ClassCHAOS {
			return s.chaos(w, r)
		}
		if zone.EqualNames(q.Name, HealthName) {
			return s.health(w, r)
		}
		return next.ServeDNS(ctx, w, r)
	})
}

// chaos answers version.bind, version.server, id.server and hostname.bind
// when enabled, and refuses every CHAOS question otherwise.
func (s *Server) chaos(w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if !s.cfg.Chaos {
		return dns.RcodeRefused, nil
	}
	q := r.Question[0]
	var txt string
	switch {
	case zone.EqualNames(q.Name, "version.bind."), zone.EqualNames(q.Name, "version.server."):
		txt = s.cfg.Version
	case zone.EqualNames(q.Name, "id.server."), zone.EqualNames(q.Name, "hostname.bind."):
		txt = s.serverID()
	default:
		return dns.RcodeRefused, nil
	}
	return s.writeTXT(w, r, dns.ClassCHAOS, txt)
}

// health answers HealthName with the node's ID, Raft state and applied
// index, and the index of the View it serves from.
func (s *Server) health(w dns.ResponseWriter, r *dns.Msg) (int, error) {
	st := NodeStatus{NodeID: s.serverID(), RaftState: "unknown"}
	if s.deps.Status != nil {
		st = s.deps.Status.NodeStatus()
		if st.NodeID == "" {
			st.NodeID = s.serverID()
		}
	}
	var viewIndex uint64
	if v := s.deps.Zones.Current(); v != nil {
		viewIndex = v.Index
	}
	return s.writeTXT(w, r, dns.ClassINET,
		"node="+st.NodeID,
		"state="+st.RaftState,
		"applied="+strconv.FormatUint(st.AppliedIndex, 10),
		"view="+strconv.FormatUint(viewIndex, 10))
}

// writeTXT answers with one TXT record, TTL 0, AA=1, when the question asks
// for TXT or ANY, and with an empty NOERROR otherwise.
func (s *Server) writeTXT(w dns.ResponseWriter, r *dns.Msg, class uint16, txt ...string) (int, error) {
	q := r.Question[0]
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if q.Qtype == dns.TypeTXT || q.Qtype == dns.TypeANY {
		m.Answer = []dns.RR{&dns.TXT{
			Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: class},
			Txt: txt,
		}}
	}
	return dns.RcodeSuccess, w.WriteMsg(m)
}

// serverID is the configured ID, else the node ID, else the host name.
func (s *Server) serverID() string {
	if s.cfg.ServerID != "" {
		return s.cfg.ServerID
	}
	if s.deps.Status != nil {
		if id := s.deps.Status.NodeStatus().NodeID; id != "" {
			return id
		}
	}
	return s.hostname
}
