package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kudurru/kudurru/cluster"
	"github.com/kudurru/kudurru/cluster/httpapi"
	"github.com/kudurru/kudurru/cluster/httpapi/apiv1"
	"github.com/kudurru/kudurru/cluster/httpapi/httpapitest"
)

// cliEnv runs CLI commands against a real API server over a fake node.
type cliEnv struct {
	t   *testing.T
	b   *httpapitest.Backend
	url string
	env map[string]string
	tr  *http.Transport
}

func newCLIEnv(t *testing.T, token string) *cliEnv {
	t.Helper()
	b := httpapitest.New("n1", true)
	cfg := httpapi.DefaultConfig()
	cfg.Addr, cfg.Token, cfg.LeaderWait = "127.0.0.1:0", token, 100*time.Millisecond
	s, err := httpapi.New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	b.SetLeader("n1", s.URL())
	e := &cliEnv{t: t, b: b, url: s.URL(), env: map[string]string{"KUDURRU_API": s.URL()}, tr: &http.Transport{}}
	t.Cleanup(func() {
		e.tr.CloseIdleConnections()
		s.Close()
	})
	return e
}

// run runs one command line with the given standard input and returns the
// exit status, standard output and standard error.
func (e *cliEnv) run(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	var out, errOut bytes.Buffer
	a := &app{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut,
		getenv:  func(k string) string { return e.env[k] },
		environ: func() []string { return nil },
		http:    &http.Client{Transport: e.tr},
	}
	code := a.run(context.Background(), args)
	return code, out.String(), errOut.String()
}

func TestCLIZonesAndRecords(t *testing.T) {
	e := newCLIEnv(t, "")
	steps := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout []string // substrings
		stderr string
	}{
		{"create", "", []string{"zone", "create", "example.com", "--ns", "ns1.example.com,ns2.example.net", "--record", "ns1 IN A 192.0.2.53"}, 0, []string{"created zone example.com (serial 1, index"}, ""},
		{"create again", "", []string{"zone", "create", "example.com", "--ns", "ns1.example.com"}, 1, nil, "zone already exists"},
		{"list table", "", []string{"zone", "list"}, 0, []string{"ZONE", "SERIAL", "RECORDS", "example.com.  1       4"}, ""},
		{"add", "", []string{"record", "add", "example.com", "www 300 IN A 192.0.2.1", "www IN A 192.0.2.2", "mail IN MX 10 mx.example.net."}, 0, []string{"added 3 record(s) in example.com (serial 2"}, ""},
		{"list name", "", []string{"record", "list", "example.com", "www"}, 0, []string{"www.example.com.  300  A     192.0.2.1", "www.example.com.  300  A     192.0.2.2"}, ""},
		{"set", "", []string{"record", "set", "example.com", "www 60 IN A 192.0.2.9"}, 0, []string{"set 1 record(s)"}, ""},
		{"list type", "", []string{"record", "list", "example.com", "www", "A"}, 0, []string{"www.example.com.  60   A     192.0.2.9"}, ""},
		{"remove one", "", []string{"record", "delete", "example.com", "mail IN MX 10 mx.example.net."}, 0, []string{"removed 1 record(s) from example.com"}, ""},
		{"delete set", "", []string{"record", "delete", "example.com", "www", "A"}, 0, []string{"deleted the A set of www in example.com"}, ""},
		{"delete name", "", []string{"record", "delete", "example.com", "ns1", "any"}, 0, []string{"deleted every set of ns1 in example.com"}, ""},
		{"bad record syntax", "", []string{"record", "add", "example.com", "www IN A 192.0.2.300"}, 2, nil, `record "www IN A 192.0.2.300"`},
		{"bad record server side", "", []string{"record", "add", "example.com", "@ IN CNAME other.example.net."}, 1, nil, "CNAME at the zone apex"},
		{"import stdin", "@ IN SOA ns h 7 1 2 3 4\n@ IN NS ns\nns IN A 192.0.2.1\n", []string{"zone", "import", "b.test", "-"}, 0, []string{"imported zone b.test (serial 7"}, ""},
		{"import bad file", "@ IN SOA ns h 7 1 2 3 4\nns IN AAAA 192.0.2.1\n", []string{"zone", "import", "b.test", "-"}, 1, nil, "line: 2"},
		{"export", "", []string{"zone", "export", "b.test"}, 0, []string{"$ORIGIN b.test.", "ns.b.test.\t3600\tIN\tA\t192.0.2.1"}, ""},
		{"delete zone", "", []string{"zone", "delete", "b.test"}, 0, []string{"deleted zone b.test"}, ""},
		{"delete missing zone", "", []string{"zone", "delete", "b.test"}, 1, nil, "zone not found"},
		{"unknown subcommand", "", []string{"zone", "frobnicate"}, 2, nil, "unknown command"},
		{"missing argument", "", []string{"zone", "delete"}, 2, nil, "usage: kudurru zone delete ZONE"},
		{"bad output", "", []string{"zone", "list", "-o", "yaml"}, 2, nil, `-o "yaml"`},
		{"unknown command", "", []string{"frob"}, 2, nil, `unknown command "frob"`},
		{"version", "", []string{"version"}, 0, []string{"kudurru dev (commit"}, ""},
	}
	for _, s := range steps {
		code, out, errOut := e.run(s.stdin, s.args...)
		if code != s.code || !strings.Contains(errOut, s.stderr) {
			t.Fatalf("%s: exit %d, stderr %q; want %d and %q (stdout %q)", s.name, code, errOut, s.code, s.stderr, out)
		}
		for _, w := range s.stdout {
			if !strings.Contains(out, w) {
				t.Fatalf("%s: stdout %q lacks %q", s.name, out, w)
			}
		}
	}
}

func TestCLIJSON(t *testing.T) {
	e := newCLIEnv(t, "")
	code, out, _ := e.run("", "zone", "create", "a.test", "--ns", "ns.a.test", "--ttl", "60", "-o", "json")
	var wr apiv1.WriteResult
	if code != 0 || json.Unmarshal([]byte(out), &wr) != nil || wr.Serial != 1 || wr.Index == 0 {
		t.Fatalf("create -o json: %d %q", code, out)
	}
	code, out, _ = e.run("", "zone", "list", "-o", "json")
	var list apiv1.ZoneList
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Zones) != 1 || list.Zones[0].Records != 2 {
		t.Fatalf("list -o json: %d %q", code, out)
	}
	code, out, _ = e.run("", "record", "list", "a.test", "-o", "json", "--leader")
	var rl apiv1.RRsetList
	if code != 0 || json.Unmarshal([]byte(out), &rl) != nil || len(rl.RRsets) != 2 || rl.RRsets[0].TTL != 60 {
		t.Fatalf("record list -o json: %d %q", code, out)
	}
	code, out, _ = e.run("", "cluster", "status", "-o", "json")
	var st cluster.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.NodeID != "n1" || !st.Ready {
		t.Fatalf("cluster status -o json: %d %q", code, out)
	}
}

func TestCLICluster(t *testing.T) {
	e := newCLIEnv(t, "s3cret")
	e.env["KUDURRU_TOKEN"] = "s3cret"
	code, out, errOut := e.run("", "cluster", "status")
	for _, w := range []string{"NODE", "n1", "STATE         leader", "READY         yes", "MEMBER", "voter, leader"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("status: %d %q %q; want %q", code, out, errOut, w)
		}
	}
	if code, out, _ := e.run("", "cluster", "members"); code != 0 || !strings.Contains(out, "127.0.0.1:8054") {
		t.Fatalf("members: %d %q", code, out)
	}
	if code, _, errOut := e.run("", "cluster", "remove", "n7"); code != 1 || !strings.Contains(errOut, "no such cluster member") {
		t.Fatalf("remove unknown: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("", "zone", "list", "--token", "wrong"); code != 1 || !strings.Contains(errOut, "token is wrong") {
		t.Fatalf("wrong token: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("", "zone", "list", "--api", "http://"+closedAddr(t)); code != 1 || !strings.Contains(errOut, "cannot reach the kudurru API") {
		t.Fatalf("unreachable: %d %q", code, errOut)
	}
}

func TestCLIOutcomeUnknownExitCode(t *testing.T) {
	e := newCLIEnv(t, "")
	e.b.SetProposeErr(cluster.ErrUnknownOutcome)
	code, _, errOut := e.run("", "zone", "create", "a.test", "--ns", "ns.a.test")
	if code != exitUnknown || !strings.Contains(errOut, "may or may not have been applied") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	e.b.SetProposeErr(cluster.ErrNoQuorum)
	if code, _, errOut := e.run("", "zone", "create", "a.test", "--ns", "ns.a.test"); code != exitErr || !strings.Contains(errOut, "No quorum") {
		t.Fatalf("no quorum: exit %d, %q", code, errOut)
	}
}

func TestCLIExportToFile(t *testing.T) {
	e := newCLIEnv(t, "")
	e.run("", "zone", "create", "a.test", "--ns", "ns.a.test")
	path := filepath.Join(t.TempDir(), "a.zone")
	if code, _, errOut := e.run("", "zone", "export", "a.test", path); code != 0 {
		t.Fatalf("export: %d %q", code, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "a.test.\t3600\tIN\tNS\tns.a.test.") {
		t.Fatalf("exported %q, %v", b, err)
	}
	if code, out, errOut := e.run("", "zone", "import", "a.test", path); code != 0 || !strings.Contains(out, "serial 2") {
		t.Fatalf("import of the export: %d %q %q", code, out, errOut)
	}
}
