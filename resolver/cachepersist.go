package resolver

import (
	"bytes"
	"errors"
	"time"

	"github.com/kudurru/kudurru/resolver/cache"
)

// BlobStore keeps named blobs in node-local storage (kudurru wires the
// cluster node's local.db). The forwarding cache is kept there as one blob,
// so that a restarted node answers from a warm cache.
type BlobStore interface {
	// PutBlob stores data under name, replacing what was there. It is
	// called from one goroutine of the Server at a time (never per query)
	// and may block on disk; data is not used after it returns.
	PutBlob(name string, data []byte) error
	// GetBlob returns the data stored under name, or nil when there is
	// none. It is called once, while the Server is built.
	GetBlob(name string) ([]byte, error)
}

// cacheBlob names the cache dump in the BlobStore.
const cacheBlob = "dns-cache"

// persisting reports whether the cache is kept across restarts.
func (f *forwarding) persisting() bool { return f.blobs != nil && f.persistEvery > 0 }

// restore loads the last dump into the cache, before any query is served.
// A dump that cannot be used (damaged, of another format, newer than this
// binary, too old) is refused with a log line; the server starts with an
// empty cache either way.
func (f *forwarding) restore() {
	if !f.persisting() {
		f.log.Debug("cache persistence off", "blob_store", f.blobs != nil, "persist_interval", f.persistEvery.Seconds())
		return
	}
	b, err := f.blobs.GetBlob(cacheBlob)
	switch {
	case err != nil:
		f.m.restoreError.Inc()
		f.log.Warn("cache dump not read; starting with an empty cache", "blob", cacheBlob, "error", err)
		return
	case b == nil:
		f.log.Info("no cache dump; starting with an empty cache", "blob", cacheBlob)
		return
	}
	start := time.Now()
	st, err := f.cache.Load(bytes.NewReader(b), start)
	if err != nil {
		f.m.restoreRefused.Inc()
		f.log.Warn("cache dump refused; starting with an empty cache",
			"blob", cacheBlob, "reason", refusal(err), "bytes", len(b), "error", err)
		return
	}
	f.m.restoreOK.Inc()
	f.log.Info("cache restored", "blob", cacheBlob, "entries", st.Loaded, "expired", st.Expired,
		"skipped", st.Skipped, "age_seconds", start.Sub(st.WrittenAt).Seconds(),
		"duration_seconds", time.Since(start).Seconds())
}

// refusal names the reason Load refused a dump, for the log.
func refusal(err error) string {
	switch {
	case errors.Is(err, cache.ErrFormat):
		return "not a cache dump"
	case errors.Is(err, cache.ErrVersion):
		return "newer format"
	case errors.Is(err, cache.ErrCorrupt):
		return "damaged"
	case errors.Is(err, cache.ErrTooOld):
		return "too old"
	}
	return "unreadable"
}

// dump writes the cache to the BlobStore. It runs on the persistence
// goroutine only, so two dumps never overlap.
func (f *forwarding) dump() {
	start := time.Now()
	var buf bytes.Buffer
	err := f.cache.Dump(&buf)
	if err == nil {
		err = f.blobs.PutBlob(cacheBlob, buf.Bytes())
	}
	if err != nil {
		f.m.dumpError.Inc()
		f.log.Warn("cache dump failed", "blob", cacheBlob, "error", err)
		return
	}
	f.m.dumpOK.Inc()
	f.m.dumpSize.Set(float64(buf.Len()))
	f.log.Debug("cache dumped", "blob", cacheBlob, "entries", f.cache.Len(), "bytes", buf.Len(),
		"duration_seconds", time.Since(start).Seconds())
}
