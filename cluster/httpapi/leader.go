package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
)

// leaderPoll is how often a request waiting for a leader looks again. The
// Backend offers no leader-change event, so this is a poll bounded by
// Config.LeaderWait.
const leaderPoll = 25 * time.Millisecond

// indexWaitMax bounds how long a relayed write waits for the local View to
// catch up with it.
const indexWaitMax = time.Second

// onLeader runs local when this node leads; otherwise it forwards r, whose
// body was read into body, to the leader's API and relays the answer. With
// no leader known it waits up to LeaderWait. A definite failure on the way
// (leadership moved, leader unreachable before the request was sent) is
// retried within that time; a request whose outcome is unknown never is.
//
// local must write nothing when it returns an error. A write (isWrite) is
// buffered and its reply relayed whole; a read is streamed.
func (s *Server) onLeader(w http.ResponseWriter, r *http.Request, body []byte, isWrite bool, local handler) error {
	deadline := time.Now().Add(s.cfg.LeaderWait)
	forwarded := r.Header.Get(apiv1.HeaderForwardedBy)
	tick := time.NewTicker(leaderPoll)
	defer tick.Stop()
	for {
		var err error
		switch id, addr := s.b.Leader(); {
		case s.b.IsLeader():
			err = local(w, r)
			if !errors.Is(err, cluster.ErrNotLeader) {
				return err
			}
		case forwarded != "":
			// Never forward twice: the node that forwarded here retries.
			return newError(http.StatusServiceUnavailable, apiv1.CodeNotLeader,
				"Node %s forwarded this request here, but %s is not the leader (leadership moved); nothing was written. Retry.",
				forwarded, s.b.NodeID())
		case addr != "" && id != s.b.NodeID():
			if isWrite {
				err = s.relayWrite(w, r, addr, body)
			} else {
				err = s.relayRead(w, r, addr)
			}
			var unsent *errUnsent
			switch {
			case err == nil:
				return nil
			case errors.As(err, &unsent):
				err = newError(http.StatusServiceUnavailable, apiv1.CodeLeaderUnreachable,
					"The leader %s could not be reached at %s (%v); nothing was sent.", id, addr, unsent.err)
			case !errors.Is(err, errRetry):
				return err
			}
		}
		if time.Now().After(deadline) {
			// What the latest attempt met is the answer: no leader known,
			// leadership moving, or the leader unreachable.
			switch {
			case err == nil:
				return newError(http.StatusServiceUnavailable, apiv1.CodeNoQuorum,
					"%s (Waited %s for a leader.)", msgNoQuorum, s.cfg.LeaderWait)
			case errors.Is(err, errRetry):
				return cluster.ErrNotLeader
			}
			return err
		}
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return newError(http.StatusServiceUnavailable, apiv1.CodeNoQuorum, "The request was cancelled while waiting for a leader; nothing was written.")
		case <-s.closing:
			return newError(http.StatusServiceUnavailable, apiv1.CodeShuttingDown, msgShutdown)
		}
	}
}

// errLeaderChanged cancels a forwarded write when the leader it went to is
// no longer the leader.
var errLeaderChanged = errors.New("leader changed")

// watchLeader cancels a forward when the leader changes from leaderID. The
// returned stop ends the watch; relayWrite calls it before returning, so the
// goroutine lives no longer than the request.
func (s *Server) watchLeader(lw LeaderWatcher, leaderID string, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			ch := lw.LeaderChanged()
			if id, _ := s.b.Leader(); id != leaderID {
				cancel(errLeaderChanged)
				return
			}
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// errRetry marks a leader's not_leader answer: nothing was written, and the
// request may go to whoever leads next.
var errRetry = errors.New("leader answered not_leader")

// relayWrite forwards a write and relays the leader's answer. When the
// Backend can wait for an index, it lets the local View catch up with a
// successful write first, so the client reads its write from this node.
func (s *Server) relayWrite(w http.ResponseWriter, r *http.Request, addr string, body []byte) error {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	leaderID, _ := s.b.Leader()
	if lw, ok := s.b.(LeaderWatcher); ok {
		stop := s.watchLeader(lw, leaderID, cancel)
		defer stop()
	}
	rep, err := s.fwd.write(ctx, r, addr, body)
	if err != nil {
		var unsent *errUnsent
		if errors.As(err, &unsent) && !errors.Is(context.Cause(ctx), errLeaderChanged) {
			return err
		}
		if errors.Is(context.Cause(ctx), errLeaderChanged) {
			return newError(http.StatusGatewayTimeout, apiv1.CodeOutcomeUnknown,
				"%s (Leadership moved away from %s while the write was in flight.)", msgUnknown, leaderID)
		}
		return newError(http.StatusGatewayTimeout, apiv1.CodeOutcomeUnknown,
			"%s (The leader at %s did not answer: %v.)", msgUnknown, addr, err)
	}
	if rep.status == http.StatusServiceUnavailable && errorCode(rep.body) == apiv1.CodeNotLeader {
		return errRetry
	}
	if iw, ok := s.b.(IndexWaiter); ok && rep.status/100 == 2 {
		var res apiv1.WriteResult
		if json.Unmarshal(rep.body, &res) == nil && res.Index > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), indexWaitMax)
			_ = iw.WaitIndex(ctx, res.Index) // best effort: the write is committed either way
			cancel()
		}
	}
	relayHeaders(w, rep.header)
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
	return nil
}

// relayRead forwards a read and streams the leader's answer.
func (s *Server) relayRead(w http.ResponseWriter, r *http.Request, addr string) error {
	resp, err := s.fwd.send(r.Context(), r, addr, nil)
	if err != nil {
		var unsent *errUnsent
		if errors.As(err, &unsent) {
			return err
		}
		return newError(http.StatusServiceUnavailable, apiv1.CodeLeaderUnreachable,
			"The leader at %s did not answer the read: %v", addr, err)
	}
	defer resp.Body.Close()
	relayHeaders(w, resp.Header)
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		s.log.Debug("relay of a leader read cut short", "leader_api", addr, "err", err)
	}
	return nil
}

// errorCode returns the code of an error body, or "".
func errorCode(body []byte) string {
	var e apiv1.ErrorBody
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error.Code
}
