package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
)

// The paths of the admin API this package calls on other nodes.
const (
	pathJoin   = "/v1/cluster/join" // POST JoinRequest -> JoinResponse
	pathStatus = "/v1/cluster"      // GET -> Status
)

// JoinCluster asks the cluster named by Config.Join to admit this node:
// it POSTs a JoinRequest to each address in turn (any member will do: the
// API forwards it to the leader) and retries with backoff until one is
// accepted or ctx ends. When this node already belongs to a cluster and the
// answer comes from another, it returns ErrOtherCluster: the caller should
// exit. A refused token or a malformed request is not retried either.
//
// A node with Raft state is already a member and need not call it; if it
// does, the call checks the cluster ID and updates its addresses.
func (n *Node) JoinCluster(ctx context.Context) error {
	if len(n.cfg.Join) == 0 {
		return fmt.Errorf("%w: no join addresses configured", ErrInvalid)
	}
	// Close cancels an attempt in flight too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.ctx, cancel)()
	req := JoinRequest{NodeID: n.cfg.NodeID, RaftAddr: n.raftAddr, APIAddr: n.cfg.APIAddr, ClusterID: n.ClusterID()}
	backoff := 100 * time.Millisecond
	var lastErr error
	for attempt := 1; ; attempt++ {
		for _, addr := range n.cfg.Join {
			resp, err := n.postJoin(ctx, addr, req)
			if err == nil {
				if own := n.ClusterID(); own != "" && resp.ClusterID != own {
					return fmt.Errorf("%w: this node's data dir belongs to cluster %s, but %s answered for cluster %s; start it with an empty data dir to join that cluster",
						ErrOtherCluster, own, addr, resp.ClusterID)
				}
				n.learnClusterID(resp.ClusterID)
				n.log.Info("joined the cluster", "via", addr, "cluster_id", resp.ClusterID, "leader", resp.LeaderID, "attempts", attempt)
				return nil
			}
			if errors.Is(err, ErrOtherCluster) || errors.Is(err, errPermanent) {
				return fmt.Errorf("join via %s: %w", addr, err)
			}
			lastErr = err
			n.log.Warn("join attempt failed; retrying", "via", addr, "attempt", attempt, "err", err)
			if ctx.Err() != nil {
				break
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-n.ctx.Done():
			t.Stop()
			return ErrShutdown
		case <-ctx.Done():
			t.Stop()
			if n.ctx.Err() != nil {
				return ErrShutdown
			}
			return fmt.Errorf("join via %s: gave up after %d rounds: %w (last error: %v)", strings.Join(n.cfg.Join, ", "), attempt, ctx.Err(), lastErr)
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (n *Node) postJoin(ctx context.Context, base string, req JoinRequest) (JoinResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return JoinResponse{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+pathJoin, bytes.NewReader(body))
	if err != nil {
		return JoinResponse{}, fmt.Errorf("%w: %v", errPermanent, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	var out JoinResponse
	if err := n.do(hreq, &out); err != nil {
		return JoinResponse{}, err
	}
	if out.ClusterID == "" {
		return JoinResponse{}, fmt.Errorf("%s answered without a cluster ID", base)
	}
	return out, nil
}

// fetchStatus reads another node's Status from its API.
func (n *Node) fetchStatus(ctx context.Context, base string) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+pathStatus, nil)
	if err != nil {
		return Status{}, err
	}
	var st Status
	err = n.do(hreq, &st)
	return st, err
}

// do sends an API request with the bearer token and decodes a 2xx body
// into out. Error bodies are apiv1.ErrorBody; other_cluster becomes
// ErrOtherCluster, and 400, 401 and 403 are permanent.
func (n *Node) do(hreq *http.Request, out any) error {
	if n.cfg.Token != "" {
		hreq.Header.Set("Authorization", "Bearer "+n.cfg.Token)
	}
	hreq.Header.Set("Accept", "application/json")
	resp, err := n.http.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read answer of %s: %w", hreq.URL, err)
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decode answer of %s: %w", hreq.URL, err)
		}
		return nil
	}
	var eb apiv1.ErrorBody
	_ = json.Unmarshal(data, &eb)
	msg := eb.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(string(data[:min(len(data), 200)]))
	}
	switch {
	case eb.Error.Code == apiv1.CodeOtherCluster || resp.StatusCode == http.StatusConflict && strings.HasSuffix(hreq.URL.Path, pathJoin):
		return fmt.Errorf("%w: %s", ErrOtherCluster, strings.TrimPrefix(msg, ErrOtherCluster.Error()+": "))
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s refused the token (HTTP %d): %s", errPermanent, hreq.URL.Host, resp.StatusCode, msg)
	case resp.StatusCode == http.StatusBadRequest:
		return fmt.Errorf("%w: %s (HTTP %d): %s", errPermanent, hreq.URL, resp.StatusCode, msg)
	}
	return fmt.Errorf("%s: HTTP %d: %s", hreq.URL, resp.StatusCode, msg)
}
