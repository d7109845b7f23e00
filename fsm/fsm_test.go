package fsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kudurru/kudurru/fsm/zone"
	"github.com/miekg/dns"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func rr(t testing.TB, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func createZone(t testing.TB, origin string) *Command {
	return &Command{Op: OpCreateZone, Zone: origin, Records: []dns.RR{
		rr(t, origin+" 3600 IN SOA ns1."+origin+" hostmaster."+origin+" 1 3600 600 1209600 300"),
		rr(t, origin+" 3600 IN NS ns1."+origin),
	}}
}

func logOf(t testing.TB, idx uint64, c *Command) *raft.Log {
	t.Helper()
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: b}
}

func TestCommandRoundTrip(t *testing.T) {
	c := &Command{Op: OpChange, Zone: "example.com.", Changes: []zone.Change{
		{Op: zone.OpReplace, Name: "www.example.com.", Type: dns.TypeA, TTL: 60, RRs: []dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.1")}},
		{Op: zone.OpDeleteName, Name: "old.example.com."},
	}, Member: zone.Member{ID: "n1", APIAddr: "http://x"}}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCommand(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Op != c.Op || len(got.Changes) != 2 || got.Changes[0].RRs[0].String() != c.Changes[0].RRs[0].String() || got.Member != c.Member {
		t.Fatalf("round trip: %+v", got)
	}
}

func TestDecodeCommandErrors(t *testing.T) {
	good, _ := createZone(t, "example.com.").Encode()
	cases := map[string][]byte{
		"empty":        nil,
		"version 0":    append([]byte{0}, good[1:]...),
		"newer":        append([]byte{CommandVersion + 1}, good[1:]...),
		"not json":     []byte("\x01{nope"),
		"unknown op":   []byte(`` + "\x01" + `{"op":"format_disk"}`),
		"bad rr bytes": []byte("\x01" + `{"op":"create_zone","records":["AAEC"]}`),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeCommand(b); !errors.Is(err, ErrBadCommand) && !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range []*Command{
		createZone(f, "example.com."),
		{Op: OpBootstrap, ClusterID: "abc"},
		{Op: OpChange, Zone: "example.com.", Changes: []zone.Change{{Op: zone.OpAdd, Name: "a.example.com.", Type: dns.TypeTXT, RRs: []dns.RR{rr(f, `a.example.com. 1 IN TXT "x"`)}}}},
	} {
		b, err := c.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			return
		}
		// Anything that decodes must apply without panicking and must not
		// touch the state when it fails.
		fsm := New(Config{})
		fsm.Apply(logOf(t, 1, &Command{Op: OpBootstrap, ClusterID: "fuzz"}))
		fsm.Apply(logOf(t, 2, createZone(t, "example.com.")))
		before := fsm.Current().Hash()
		res := fsm.Apply(&raft.Log{Index: 3, Type: raft.LogCommand, Data: data}).(*Result)
		if res.Err != nil && fsm.Current().Hash() != before {
			t.Fatalf("failed command %v changed the state", c.Op)
		}
	})
}

func TestApplyErrorsChangeNothing(t *testing.T) {
	f := New(Config{})
	idx := uint64(0)
	apply := func(c *Command) *Result {
		idx++
		return f.Apply(logOf(t, idx, c)).(*Result)
	}
	if res := apply(createZone(t, "example.com.")); !errors.Is(res.Err, ErrNotBootstrapped) {
		t.Fatalf("zone before bootstrap: %v", res.Err)
	}
	if res := apply(&Command{Op: OpBootstrap, ClusterID: "c1"}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if res := apply(createZone(t, "example.com.")); res.Err != nil || res.Serial != 1 {
		t.Fatalf("create: %+v", res)
	}
	before := f.Current().Hash()
	for name, c := range map[string]*Command{
		"second bootstrap": {Op: OpBootstrap, ClusterID: "c2"},
		"exists":           createZone(t, "example.com."),
		"missing zone":     {Op: OpChange, Zone: "nope.example.", Changes: []zone.Change{{Op: zone.OpDeleteName, Name: "a.nope.example."}}},
		"delete missing":   {Op: OpDeleteZone, Zone: "nope.example."},
		"invalid change":   {Op: OpChange, Zone: "example.com.", Changes: []zone.Change{{Op: zone.OpDeleteRRset, Name: "example.com.", Type: dns.TypeSOA}}},
		"bad zone name":    {Op: OpCreateZone, Zone: "a..b"},
	} {
		if res := apply(c); res.Err == nil {
			t.Errorf("%s: no error", name)
		}
		if f.Current().Hash() != before {
			t.Fatalf("%s changed the state", name)
		}
	}
	if f.Current().Index != idx {
		t.Errorf("index %d, want %d", f.Current().Index, idx)
	}
}

// randomLog builds a deterministic pseudo-random command log over a few
// zones: creates, imports, deletes and batches of changes, valid or not.
func randomLog(t testing.TB, seed uint64, n int) []*raft.Log {
	r := rand.New(rand.NewPCG(seed, 7))
	zones := []string{"a.example.", "b.example.", "sub.a.example."}
	logs := []*raft.Log{logOf(t, 1, &Command{Op: OpBootstrap, ClusterID: "prop"})}
	for i := 2; len(logs) < n; i++ {
		z := zones[r.IntN(len(zones))]
		var c *Command
		switch k := r.IntN(10); {
		case k == 0:
			c = createZone(t, z)
		case k == 1:
			c = &Command{Op: OpDeleteZone, Zone: z}
		case k == 2:
			c = createZone(t, z)
			c.Op = OpImportZone
			c.Records = append(c.Records, rr(t, fmt.Sprintf("imp%d.%s 60 IN A 192.0.2.%d", r.IntN(5), z, r.IntN(250))))
		default:
			var ch []zone.Change
			for j := 0; j <= r.IntN(4); j++ {
				name := fmt.Sprintf("h%d.%s", r.IntN(8), z)
				switch r.IntN(5) {
				case 0:
					ch = append(ch, zone.Change{Op: zone.OpDeleteName, Name: name})
				case 1:
					ch = append(ch, zone.Change{Op: zone.OpReplace, Name: name, Type: dns.TypeCNAME, RRs: []dns.RR{rr(t, name+" 60 IN CNAME target.example.")}})
				case 2:
					ch = append(ch, zone.Change{Op: zone.OpRemove, Name: name, Type: dns.TypeA, RRs: []dns.RR{rr(t, fmt.Sprintf("%s 60 IN A 192.0.2.%d", name, r.IntN(4)))}})
				default:
					ch = append(ch, zone.Change{Op: zone.OpAdd, Name: name, Type: dns.TypeA, TTL: uint32(30 + r.IntN(3)), RRs: []dns.RR{rr(t, fmt.Sprintf("%s 60 IN A 192.0.2.%d", name, r.IntN(4)))}})
				}
			}
			c = &Command{Op: OpChange, Zone: z, Changes: ch}
		}
		logs = append(logs, logOf(t, uint64(i), c))
	}
	return logs
}

// TestSameLogSameHash is the determinism property: the same log gives the
// same View hash however it is batched and through a snapshot and restore.
func TestSameLogSameHash(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			logs := randomLog(t, seed, 300)
			one := New(Config{})
			for _, l := range logs {
				one.Apply(l)
			}
			batched := New(Config{})
			r := rand.New(rand.NewPCG(seed, 1))
			for i := 0; i < len(logs); {
				n := 1 + r.IntN(40)
				if i+n > len(logs) {
					n = len(logs) - i
				}
				batched.ApplyBatch(logs[i : i+n])
				i += n
			}
			// A third node restores a snapshot taken half-way, then applies the rest.
			half := New(Config{})
			for _, l := range logs[:150] {
				half.Apply(l)
			}
			var snap bytes.Buffer
			s, _ := half.Snapshot()
			if err := s.Persist(&sink{Buffer: &snap}); err != nil {
				t.Fatal(err)
			}
			restored := New(Config{})
			if err := restored.Restore(io.NopCloser(&snap)); err != nil {
				t.Fatal(err)
			}
			for _, l := range logs[150:] {
				restored.Apply(l)
			}
			if one.Current().Len() == 0 && seed%2 == 0 {
				t.Log("log ended with no zones")
			}
			want := one.Current().Hash()
			if Replay(zone.Empty, logs).Hash() != want || Replay(half.RaftView(), logs[150:]).Hash() != want {
				t.Fatal("Replay differs from Apply")
			}
			if batched.Current().Hash() != want || restored.Current().Hash() != want {
				t.Fatal("same log, different views")
			}
			if one.Current().Index != uint64(len(logs)) || restored.Current().Index != one.Current().Index {
				t.Fatal("applied index differs")
			}
		})
	}
}

// TestSerialNeverDecreases applies a random log and checks every zone's serial
// after every entry, across deletes and re-creates.
func TestSerialNeverDecreases(t *testing.T) {
	logs := randomLog(t, 99, 2000)
	f := New(Config{})
	last := map[string]uint32{}
	for _, l := range logs {
		f.Apply(l)
		for _, z := range f.Current().Zones() {
			if old, ok := last[z.Origin]; ok && z.Serial() != old && !zone.SerialGreater(z.Serial(), old) {
				t.Fatalf("index %d: serial of %s went from %d to %d", l.Index, z.Origin, old, z.Serial())
			}
			last[z.Origin] = z.Serial()
		}
	}
}

func TestRestoreRefusesDamage(t *testing.T) {
	f := New(Config{})
	for _, l := range randomLog(t, 3, 50) {
		f.Apply(l)
	}
	var snap bytes.Buffer
	s, _ := f.Snapshot()
	if err := s.Persist(&sink{Buffer: &snap}); err != nil {
		t.Fatal(err)
	}
	g := New(Config{})
	for _, l := range randomLog(t, 4, 20) {
		g.Apply(l)
	}
	before := g.Current()
	bad := bytes.Clone(snap.Bytes())
	bad[len(bad)/2] ^= 0xff
	if err := g.Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, zone.ErrFormat) {
		t.Fatalf("damaged snapshot: %v", err)
	}
	if g.Current() != before || g.RaftView() != before {
		t.Fatal("failed restore changed the state")
	}
}

func TestSeedAndCatchUp(t *testing.T) {
	logs := randomLog(t, 5, 100)
	full := New(Config{})
	for _, l := range logs {
		full.Apply(l)
	}
	// A cold-started node seeds the full View, then Raft replays from scratch.
	cold := New(Config{})
	if !cold.Seed(full.Current()) {
		t.Fatal("seed refused")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := cold.WaitIndex(ctx, 100); err != nil {
		t.Fatal(err)
	}
	for _, l := range logs[:60] {
		cold.Apply(l)
		if cold.Current().Index != 100 {
			t.Fatal("older Raft state replaced the seeded view")
		}
	}
	for _, l := range logs[60:] {
		cold.Apply(l)
	}
	if cold.Current() != cold.RaftView() || cold.Current().Hash() != full.Current().Hash() {
		t.Fatal("Raft state did not take over once caught up")
	}
	if cold.Seed(logsView(t, logs[:10])) {
		t.Fatal("an older seed replaced a newer view")
	}
}

func logsView(t *testing.T, logs []*raft.Log) *zone.View {
	f := New(Config{})
	for _, l := range logs {
		f.Apply(l)
	}
	return f.Current()
}

type sink struct{ *bytes.Buffer }

func (s *sink) ID() string    { return "test" }
func (s *sink) Cancel() error { return nil }
func (s *sink) Close() error  { return nil }
