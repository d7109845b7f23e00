package resolver

import (
	"hash/maphash"
	"slices"
	"sync/atomic"

	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/kudurru/kudurru/resolver/lookup"
	"github.com/miekg/dns"
)

// answerMemo remembers lookup results for the current View. lookup.Lookup
// is a pure function of an immutable View and a question, so a result found
// once holds for every later query of that question on that View: a hit
// replaces the walk down the zone's tree, which under load is mostly cache
// misses (about a microsecond per name looked up), with one hash and one or
// two comparisons. See DESIGN.md, "Remembered answers".
//
// The table has a fixed size; a question may sit in one of two slots (two
// hashes). A miss fills an empty or outdated one of them, else overwrites
// one. Its memory is bounded in bytes too (memoBudget): an entry holds
// its own copies of records a query respelled (another letter case, a
// wildcard expansion, a negative answer's SOA) and its packed reply, so a
// flood of spellings of a name with a large answer could otherwise fill
// every slot with large entries. An entry that does not fit the budget,
// after the one it would replace is freed, is not stored, and evicts
// another (store). Entries carry the generation of the View they were
// found in; a new View starts a new generation, so every older entry
// misses (and keeps its records alive until it is overwritten). The name is
// compared as sent, because lookup spells owner names as the query did: a
// client that varies letter case gets entries of its own.
//
// A Result taken from the table is shared by every query that hits it: its
// slices are clipped (len == cap) so that an append copies, and the records
// in them are zone data, which nobody modifies. Safe for concurrent use.
type answerMemo struct {
	cur    atomic.Pointer[answerGen]
	seed   maphash.Seed
	used   atomic.Int64  // the cost of the entries in slots
	budget int64         // the most used may reach: memoBudget
	hand   atomic.Uint64 // where evictOne looks next
	slots  [answerSlots]atomic.Pointer[answerEntry]
}

// memoBudget bounds the summed cost of the table's entries. Typical
// entries (an address or a negative answer) cost about 400 bytes by
// entryCost, so a full table of them (about 25 MiB) fits: the budget
// binds only when many entries carry large answers.
const memoBudget = 64 << 20

// entryCost estimates what an entry keeps alive, from the size of its
// reply in wire form: its packed template, and the records it may own as
// Go values, a few times their wire size. Records shared with the zone
// cost less than counted; the estimate errs on the safe side.
func entryCost(name string, wireLen int, tmpl []byte) int64 {
	return int64(256 + len(name) + len(tmpl) + 4*wireLen)
}

// answerSlots is the size of the table: 64 Ki entries, 512 KiB of
// pointers. With two slots per question, half as many hot questions as
// slots rarely evict each other.
const answerSlots = 1 << 16

// answerGen is the View being remembered and its generation number.
type answerGen struct {
	view *zone.View
	gen  uint64
}

type answerEntry struct {
	gen   uint64
	qtype uint16
	name  string
	res   lookup.Result
	wire  []byte // the reply packed once, or nil: see packTemplate
	cost  int64  // entryCost, counted in answerMemo.used while stored
}

func newAnswerMemo() *answerMemo { return &answerMemo{seed: maphash.MakeSeed(), budget: memoBudget} }

// lookup returns lookup.Lookup(v, q) (class IN), from the table when it
// can. The Result must not be modified: its slices may be shared.
func (a *answerMemo) lookup(v *zone.View, q dns.Question) lookup.Result {
	res, _ := a.find(v, q)
	return res
}

// find is lookup that also returns the reply packed from the Result as a
// template (packTemplate), or nil when there is none. Neither may be
// modified.
func (a *answerMemo) find(v *zone.View, q dns.Question) (lookup.Result, []byte) {
	gen := a.generation(v)
	h := maphash.String(a.seed, q.Name) ^ uint64(q.Qtype)*0x9e3779b97f4a7c15
	s1, s2 := &a.slots[h&(answerSlots-1)], &a.slots[(h>>32)&(answerSlots-1)]
	e1 := s1.Load()
	if e1.is(gen, q) {
		return e1.res, e1.wire
	}
	e2 := s2.Load()
	if e2.is(gen, q) {
		return e2.res, e2.wire
	}
	res := lookup.Lookup(v, q)
	if res.Outcome == lookup.NotAuthoritative {
		// Cheap to find again (no tree is walked), and names outside
		// the zones — forwarded ones — would only churn the table.
		return res, nil
	}
	res.Answer, res.Ns, res.Extra = slices.Clip(res.Answer), slices.Clip(res.Ns), slices.Clip(res.Extra)
	tmpl, wireLen := packTemplate(q, res)
	e := &answerEntry{gen: gen, qtype: q.Qtype, name: q.Name, res: res, wire: tmpl,
		cost: entryCost(q.Name, wireLen, tmpl)}
	switch {
	case e1 == nil || e1.gen != gen:
		a.store(s1, e1, e)
	case e2 == nil || e2.gen != gen:
		a.store(s2, e2, e)
	case h&(1<<20) == 0: // both taken: evict one, chosen by a hash bit
		a.store(s1, e1, e)
	default:
		a.store(s2, e2, e)
	}
	return res, e.wire
}

// store puts e in slot in place of old, if the table's cost stays within
// its budget once old is freed and nobody replaced old meanwhile (then the
// other writer's entry stays). When it does not fit, e is not stored and
// an entry elsewhere is evicted instead (evictOne): entries whose slots no
// query visits again would otherwise hold the budget for good (after a
// flood of large answers, say).
func (a *answerMemo) store(slot *atomic.Pointer[answerEntry], old, e *answerEntry) {
	var freed int64
	if old != nil {
		freed = old.cost
	}
	if a.used.Load()-freed+e.cost > a.budget {
		a.evictOne()
		return
	}
	if slot.CompareAndSwap(old, e) {
		a.used.Add(e.cost - freed)
	}
}

// evictOne empties the next occupied slot after the clock hand, looking
// at most evictScan slots, and moves the hand past it. Each store refused
// for the budget frees one entry, so a table kept full by a flood drains
// as ordinary queries keep missing.
func (a *answerMemo) evictOne() {
	for range evictScan {
		slot := &a.slots[a.hand.Add(1)&(answerSlots-1)]
		if v := slot.Load(); v != nil && slot.CompareAndSwap(v, nil) {
			a.used.Add(-v.cost)
			return
		}
	}
}

// evictScan bounds the slots one refused store looks at for an entry to
// evict.
const evictScan = 64

// bytes returns the estimated memory the table's entries keep alive.
func (a *answerMemo) bytes() int64 { return a.used.Load() }

// packTemplate packs the reply to q built from res the way
// responseWriter.WriteMsg would, with ID 0, RD and CD clear and no OPT
// record: what every query for q on this View is sent, once those are
// patched in (responseWriter.writeTemplate). It returns nil where the
// reply's form depends on more than that, and WriteMsg must build it:
// an extended rcode, a record that does not pack, and replies whose
// compression would differ with and without an OPT record (WriteMsg
// compresses replies over compressMin bytes, OPT included). Replies over
// maxTemplate bytes get none either: each entry holds its own copy, and a
// client that varies the letter case of a name with a large answer makes
// an entry per spelling.
//
// It also returns the length of the reply without compression, for
// entryCost.
func packTemplate(q dns.Question, res lookup.Result) ([]byte, int) {
	if res.Rcode > 0xF {
		return nil, 0
	}
	m := dns.Msg{
		MsgHdr:   dns.MsgHdr{Response: true, Opcode: dns.OpcodeQuery, Authoritative: res.Authoritative, Rcode: res.Rcode},
		Question: []dns.Question{q},
		Answer:   res.Answer, Ns: res.Ns, Extra: res.Extra,
	}
	b, err := m.Pack()
	switch {
	case err != nil:
		return nil, m.Len() // answered SERVFAIL; its records are kept all the same
	case len(b)+optLen <= compressMin:
		return slices.Clip(b), len(b)
	case len(b) <= compressMin:
		return nil, len(b) // uncompressed without OPT, compressed with one
	}
	wireLen := len(b)
	if wireLen > 3*maxTemplate {
		return nil, wireLen // compression does not shrink answers that much
	}
	m.Compress = true
	if b, err = m.Pack(); err != nil || len(b)+optLen > maxTemplate {
		return nil, wireLen
	}
	return slices.Clip(b), wireLen
}

// maxTemplate bounds a packed reply kept in the table, OPT record
// included: the table's templates take at most answerSlots × maxTemplate
// bytes (32 MiB). Most answers are far smaller; larger ones are packed
// per query.
const maxTemplate = 512

func (e *answerEntry) is(gen uint64, q dns.Question) bool {
	return e != nil && e.gen == gen && e.qtype == q.Qtype && e.name == q.Name
}

// generation returns the generation of v, starting a new one when v is not
// the View of the current generation. A generation belongs to one View, so
// an entry is only ever found by queries on the View it was looked up in.
// Around a change, queries still on the old View may take the table back to
// it for a moment; that costs misses, never a wrong answer.
func (a *answerMemo) generation(v *zone.View) uint64 {
	for {
		c := a.cur.Load()
		if c != nil && c.view == v {
			return c.gen
		}
		n := &answerGen{view: v, gen: 1}
		if c != nil {
			n.gen = c.gen + 1
		}
		if a.cur.CompareAndSwap(c, n) {
			return n.gen
		}
	}
}
