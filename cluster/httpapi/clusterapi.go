package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
)

// clusterStatus serves GET /v1/cluster. Other nodes poll it, so it does no
// more than ask the Backend.
func (s *Server) clusterStatus(w http.ResponseWriter, r *http.Request) error {
	st := s.b.Status()
	w.Header().Set(apiv1.HeaderIndex, strconv.FormatUint(st.ServingIndex, 10))
	writeJSON(w, http.StatusOK, st)
	return nil
}

// join serves POST /v1/cluster/join on the leader (forwarded there).
func (s *Server) join(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req cluster.JoinRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if err := checkJoin(req); err != nil {
		return err
	}
	return s.onLeader(w, r, body, true, func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ProposeTimeout)
		defer cancel()
		resp, err := s.b.AddMember(ctx, req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, resp)
		return nil
	})
}

// checkJoin validates a join request.
func checkJoin(req cluster.JoinRequest) error {
	if req.NodeID == "" {
		return invalid("node_id: a joining node must give its ID.")
	}
	if _, _, err := net.SplitHostPort(req.RaftAddr); err != nil {
		return invalid("raft_addr %q: %v", req.RaftAddr, err)
	}
	u, err := url.Parse(req.APIAddr)
	if req.APIAddr == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("api_addr %q: a joining node must give the base URL of its API, like http://192.0.2.10:8053.", req.APIAddr)
	}
	return nil
}

// removeMember serves DELETE /v1/cluster/members/{id} on the leader
// (forwarded there).
func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if id == "" {
		return invalid("The member ID is missing.")
	}
	return s.onLeader(w, r, nil, true, func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ProposeTimeout)
		defer cancel()
		if err := s.b.RemoveMember(ctx, id); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, apiv1.Removed{Removed: id})
		return nil
	})
}

// health serves GET /health: the process is up and serving HTTP.
func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apiv1.Health{Status: "ok", NodeID: s.b.NodeID()})
	return nil
}

// ready serves GET /ready: 200 when the node serves current data, 503 with
// the reason otherwise.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	st := s.b.Status()
	if !st.Ready {
		reason := st.ReadyReason
		if reason == "" {
			reason = "no reason given"
		}
		return newError(http.StatusServiceUnavailable, apiv1.CodeNotReady, "Node %s is not ready: %s.", st.NodeID, reason)
	}
	writeJSON(w, http.StatusOK, apiv1.Health{Status: "ready", NodeID: st.NodeID})
	return nil
}
