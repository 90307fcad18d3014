package main

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// The tests below localise ib_write_bw HCA pair by HCA pair for real: the
// sshd on 127.0.0.1/127.0.0.2 (or the Slurm partition loc) of
// scripts/testenv.sh starts every server and client of every round, and
// the stand-in plays ib_write_bw from seed 004's real T8 recordings
// (mi355x-seed004/multinode/raw/ibperf.write_bw/{server,client}.0.log),
// naming the planned HCA in its Device lines, listening on (server) or
// connecting to (client) the planned address and port, and replaying the
// half-bandwidth copies of mi355x-seed004-degraded when the chosen HCA of
// the chosen side takes part (the server runs on the first host, the
// client on the second).

// freePort is the first of len(nics4) consecutive TCP ports nothing
// listens on now, which the run's pairs use (the plan's port+i). They are
// drawn below the kernel's ephemeral range (32768-60999), where a
// connection's local port could take one of them between this check and
// the server's listen.
func freePort(t *testing.T) string {
	t.Helper()
	for try := 0; try < 100; try++ {
		base := 20000 + rand.IntN(10000)
		free := true
		for i := 0; i < len(nics4) && free; i++ {
			ln, err := net.Listen("tcp", ":"+strconv.Itoa(base+i))
			if err != nil {
				free = false
				continue
			}
			ln.Close()
		}
		if free {
			return strconv.Itoa(base)
		}
	}
	t.Fatal("no 4 free consecutive ports in 20000-29999")
	return ""
}

var nics4 = []string{"ionic_0", "ionic_1", "ionic_2", "ionic_3"}

// nicLocaliseArgs are the flags of a localisation of mi355x's ib_write_bw
// over nics4 with the stand-in; badHCA on the badRole side ("server" or
// "client") is slow, none when badHCA is "", and so is the HCA pair link
// ("SERVER_HCA:CLIENT_HCA") unless it is "".
func nicLocaliseArgs(t *testing.T, badHCA, badRole, link string) []string {
	rec, err := filepath.Abs(filepath.Join("..", "..", "testdata", "recordings"))
	assert.NilError(t, err)
	log := filepath.Join("multinode", layout.Raw, "ibperf.write_bw", "{role}.0.log")
	args := []string{"localise", "--sku", "mi355x", "--suite", "multinode", "--test", "ibperf.write_bw",
		"--localise-suite", "none", "--nics", strings.Join(nics4, ","),
		"--param", "bindir=" + standin(t), "--param", "ibperf.write_bw:port=" + freePort(t),
		"--param", "env.STANDIN_LOG=" + filepath.Join(rec, "mi355x-seed004", log),
		"--param", "env.STANDIN_DEGRADED_LOG=" + filepath.Join(rec, "mi355x-seed004-degraded", log),
		"--param", "env.STANDIN_LISTEN=argv", "--param", "env.STANDIN_DEVICE=argv",
		"--param", "env.STANDIN_PAUSE_AFTER=Waiting for client to connect",
		"--timeout", "2m", "--format", "json", "--out", filepath.Join(t.TempDir(), "results")}
	if badHCA != "" {
		args = append(args, "--param", "env.STANDIN_DEGRADE_HCA="+badHCA, "--param", "env.STANDIN_DEGRADE_ROLE="+badRole)
	}
	if link != "" {
		args = append(args, "--param", "env.STANDIN_DEGRADE_LINK="+link)
	}
	return args
}

// A bad HCA on either node of a pair is named on that node, as the one
// HCA whose every pair is slow; one slow HCA pair is named as a link; a
// healthy pair of nodes names nobody.
func TestLocaliseNICPairs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags func(*testing.T) []string
		hosts func(*testing.T) []string
	}{
		{"ssh", sshFlags, func(t *testing.T) []string {
			return strings.Split(testenv.Need(t, "GPUACCEPT_SSH_HOSTS", "ssh"), ",")[:2]
		}},
		{"slurm", func(t *testing.T) []string {
			// The Slurm nodes n3..n6 are names of this one machine that
			// it cannot resolve: the clients connect to loopback.
			return append(slurmFlags(t), "--param", "ibperf.write_bw:server_addr=127.0.0.1")
		}, func(t *testing.T) []string {
			return strings.Split(testenv.Need(t, "GPUACCEPT_SLURM_LOC_NODES", "slurm"), ",")[:2]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := tc.flags(t)
			hosts := tc.hosts(t)
			for _, c := range []struct {
				name, badHCA, badRole, link string
				want                        result.Suspect // Kind "": none
			}{
				{"bad client HCA", "ionic_2", "client", "", result.Suspect{Kind: "hca", Host: hosts[1], HCA: "ionic_2"}},
				{"bad server HCA", "ionic_1", "server", "", result.Suspect{Kind: "hca", Host: hosts[0], HCA: "ionic_1"}},
				{"bad link", "", "", "ionic_1:ionic_3", result.Suspect{Kind: "link", Host: hosts[0], HCA: "ionic_1", Peer: hosts[1] + ":ionic_3"}},
				{"healthy", "", "", "", result.Suspect{}},
			} {
				t.Run(c.name, func(t *testing.T) {
					args := append(append(nicLocaliseArgs(t, c.badHCA, c.badRole, c.link), flags...), "--hosts", strings.Join(hosts, ","))
					code, run, errs := localised(t, args...)
					assert.Equal(t, len(run.Localisations), 1, errs)
					l := run.Localisations[0]
					assert.Equal(t, len(l.Stages), 1, errs)
					st := l.Stages[0]
					assert.Equal(t, st.Name, "nic-pairs")
					assert.Equal(t, st.Rounds, 4)
					assert.Equal(t, len(st.Runs), 4)
					cells := 0
					for _, r := range st.Runs {
						assert.Equal(t, len(r.NICFigures), 4, "%+v", r)
						slow := false
						for _, f := range r.NICFigures {
							cells++
							bad := c.badRole == "server" && f.Server == c.badHCA || c.badRole == "client" && f.Client == c.badHCA ||
								f.Server+":"+f.Client == c.link
							slow = slow || bad
							assert.Equal(t, f.Slow, bad, "%s %+v", r.NICs, f)
							// The recordings' peak bw_avg: 779.21 Gb/s, halved 389.61.
							want := 779.21
							if bad {
								want = 389.61
							}
							assert.Equal(t, f.Figure, want, "%s %+v", r.NICs, f)
						}
						assert.Equal(t, r.Slow, slow, "%+v", r)
						assert.Equal(t, r.Status == result.Fail, slow, "%+v", r)
						_, err := os.Stat(filepath.Join(run.Dir, r.Dir, layout.Results))
						assert.NilError(t, err, "the run's own results folder")
					}
					assert.Equal(t, cells, 16, "every server HCA with every client HCA")
					if c.want.Kind == "" {
						assert.Equal(t, code, 0, errs)
						assert.Equal(t, len(l.Suspects), 0, "%+v", l.Suspects)
						return
					}
					assert.Equal(t, code, 1, errs)
					assert.Equal(t, len(l.Suspects), 1, "%+v", l.Suspects)
					s := l.Suspects[0]
					assert.Equal(t, s.Stage, "nic-pairs")
					s.Stage, s.Reason, s.Evidence = "", "", nil
					assert.DeepEqual(t, s, c.want)
				})
			}
		})
	}
}
