package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/fsm"
	"github.com/kudurru/kudurru/fsm/zone"
)

// apiError is an error with the HTTP status and code it is answered with.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, apiv1.CodeInvalid, format, args...)
}

// Messages of conditions that have one fixed explanation.
const (
	msgNoQuorum = "No quorum: the cluster has no leader that a majority of nodes follows, so nothing was written. " +
		"Retry once a majority of nodes is up and connected."
	msgNotLeader = "Leadership moved while the request was on its way, so nothing was written. Retry."
	msgUnknown   = "The outcome of the write is unknown: it may or may not have been applied. " +
		"Read the data back before retrying."
	msgShutdown        = "This node is shutting down; nothing was written. Send the request to another node."
	msgNotBootstrapped = "The cluster has no ID yet: bootstrap it (serve --bootstrap) or join this node to a cluster first."
)

// errorFor maps an error to what the client is told. Sentinel errors of the
// packages that own the conditions are matched with errors.Is.
func errorFor(err error) *apiError {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, apiv1.CodeBodyTooLarge,
			"The request body is larger than the limit of %d bytes (api max_body_bytes).", mbe.Limit)
	case errors.Is(err, cluster.ErrNoQuorum):
		return newError(http.StatusServiceUnavailable, apiv1.CodeNoQuorum, msgNoQuorum)
	case errors.Is(err, cluster.ErrNotLeader):
		return newError(http.StatusServiceUnavailable, apiv1.CodeNotLeader, msgNotLeader)
	case errors.Is(err, cluster.ErrShutdown):
		return newError(http.StatusServiceUnavailable, apiv1.CodeShuttingDown, msgShutdown)
	case errors.Is(err, cluster.ErrUnknownOutcome),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return newError(http.StatusGatewayTimeout, apiv1.CodeOutcomeUnknown, msgUnknown)
	case errors.Is(err, fsm.ErrNotBootstrapped):
		return newError(http.StatusServiceUnavailable, apiv1.CodeNotBootstrapped, msgNotBootstrapped)
	case errors.Is(err, fsm.ErrZoneNotFound):
		return newError(http.StatusNotFound, apiv1.CodeZoneNotFound, "%s", err.Error())
	case errors.Is(err, fsm.ErrZoneExists):
		return newError(http.StatusConflict, apiv1.CodeZoneExists, "%s", err.Error())
	case errors.Is(err, cluster.ErrUnknownMember):
		return newError(http.StatusNotFound, apiv1.CodeMemberNotFound, "%s", err.Error())
	case errors.Is(err, cluster.ErrOtherCluster), errors.Is(err, fsm.ErrClusterMismatch):
		return newError(http.StatusConflict, apiv1.CodeOtherCluster, "%s", err.Error())
	case errors.Is(err, zone.ErrPrecondition):
		return newError(http.StatusConflict, apiv1.CodePreconditionFailed, "%s", err.Error())
	case errors.Is(err, zone.ErrInvalid), errors.Is(err, cluster.ErrInvalid):
		return invalid("%s", err.Error())
	}
	return newError(http.StatusInternalServerError, apiv1.CodeInternal, "Internal error: %s", err.Error())
}

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(apiv1.ErrorBody{Error: apiv1.Error{Code: apiv1.CodeInternal, Message: "Internal error: encode response: " + err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes e as an error body.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kudurru"`)
	}
	writeJSON(w, e.status, apiv1.ErrorBody{Error: apiv1.Error{Code: e.code, Message: e.msg}})
}
