package check

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/anishathalye/porcupine"
	"github.com/kudurru/kudurru/jepsen-style-tests/model"
)

// HTMLName is the file the linearizability check writes on failure.
const HTMLName = "history.html"

// Linearizable checks the compare-and-set writes with porcupine against a
// per-RRset register (model.CASModel), partitioned by owner name. On
// failure it writes porcupine's HTML timeline, with the nemesis events as
// annotations, to cfg.ArtifactsDir.
func Linearizable(h model.History, cfg Config) Result {
	r := Result{ID: "linearizable", Name: "CAS writes are linearizable per owner name"}
	ops := model.CASOperations(h)
	var applied, mismatch, unknown int
	keys := map[string]bool{}
	for _, o := range ops {
		keys[o.Input.(model.CASInput).Key] = true
		switch o.Output.(model.CASResult) {
		case model.CASApplied:
			applied++
		case model.CASMismatch:
			mismatch++
		default:
			unknown++
		}
	}
	r.add("ops", len(ops))
	r.add("keys", len(keys))
	r.add("applied", applied)
	r.add("mismatch", mismatch)
	r.add("unknown", unknown)
	if applied == 0 {
		r.Status = Inconclusive
		r.Note = "no acknowledged CAS"
		for _, o := range h.Filter(model.KindCAS) {
			if o.Status/100 == 4 && o.Code != model.CodePrecondition {
				r.Note = fmt.Sprintf("no acknowledged CAS: the API refused them (HTTP %d %s: %s)", o.Status, o.Code, o.Error)
				break
			}
		}
		return r
	}
	res, info := porcupine.CheckOperationsVerbose(model.CASModel, ops, cfg.LinearizabilityTimeout)
	switch res {
	case porcupine.Ok:
		r.Status = Pass
	case porcupine.Illegal:
		r.Status = Fail
		r.detailf("porcupine found no linearization of the CAS history")
		if cfg.ArtifactsDir != "" {
			info.AddAnnotations(annotations(h))
			path := filepath.Join(cfg.ArtifactsDir, HTMLName)
			if err := os.MkdirAll(cfg.ArtifactsDir, 0o755); err == nil {
				if err := porcupine.VisualizePath(model.CASModel, info, path); err != nil {
					r.detailf("writing %s: %v", path, err)
				} else {
					r.Note = "see " + path
				}
			}
		}
	default:
		r.Status = Inconclusive
		r.Note = fmt.Sprintf("porcupine gave up after %s", cfg.LinearizabilityTimeout)
	}
	return r
}

// annotations shows the nemesis events on porcupine's timeline.
func annotations(h model.History) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, e := range h.Nemeses() {
		out = append(out, porcupine.Annotation{
			Tag:             "nemesis",
			Start:           e.Invoke,
			End:             e.Invoke,
			Description:     e.Nemesis,
			Details:         fmt.Sprintf("%s %v minority=%v", e.Value, e.Nodes, e.Minority),
			BackgroundColor: "#f4cccc",
		})
	}
	return out
}
