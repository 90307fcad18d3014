package acceptance

import (
	"math"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// The localisation flags resolved against the SKU, without a command line.
func TestLocaliseRequestResolve(t *testing.T) {
	ok := LocaliseRequest{Strategy: localise.Auto, Tolerance: localise.DefaultTolerance, Matchings: localise.DefaultMatchings}
	with := func(f func(r *LocaliseRequest)) LocaliseRequest { r := ok; f(&r); return r }
	cases := []struct {
		name      string
		req       LocaliseRequest
		nodeSuite string
		nics      []string
		wantError string
	}{
		{name: "defaults: the SKU's singlenode", req: ok, nodeSuite: "singlenode"},
		{name: "none", req: with(func(r *LocaliseRequest) { r.Suite = "none" })},
		{name: "NICs listed", req: with(func(r *LocaliseRequest) { r.NICs = "mlx5_0, mlx5_1,," }), nodeSuite: "singlenode", nics: []string{"mlx5_0", "mlx5_1"}},
		{name: "both", req: with(func(r *LocaliseRequest) { r.Always, r.Never = true, true }), wantError: "--localise and --no-localise contradict each other"},
		{name: "strategy", req: with(func(r *LocaliseRequest) { r.Strategy = "guess" }), wantError: `--localise-strategy "guess": want one of `},
		{name: "tolerance NaN", req: with(func(r *LocaliseRequest) { r.Tolerance = math.NaN() }), wantError: "--localise-tolerance NaN: want a fraction between 0 and 1"},
		{name: "tolerance 1", req: with(func(r *LocaliseRequest) { r.Tolerance = 1 }), wantError: "--localise-tolerance 1: want a fraction"},
		{name: "matchings 0", req: with(func(r *LocaliseRequest) { r.Matchings = 0 }), wantError: "--localise-matchings 0: want 1 or more"},
		{name: "parallel -1", req: with(func(r *LocaliseRequest) { r.Parallel = -1 }), wantError: "--localise-parallel -1: want 0 or more"},
		{name: "a multi-node suite", req: with(func(r *LocaliseRequest) { r.Suite = "multinode" }), wantError: "--localise-suite multinode runs on 2 nodes by default"},
		{name: "no such suite", req: with(func(r *LocaliseRequest) { r.Suite = "nope" }), wantError: `--localise-suite "nope": SKU h200 has no such suite`},
		{name: "a test of the suite", req: with(func(r *LocaliseRequest) { r.Tests = []string{"gemm.matmul"} }), nodeSuite: "singlenode"},
		{name: "a test of no suite", req: with(func(r *LocaliseRequest) { r.Suite, r.Tests = "none", []string{"gemm.matmul"} }),
			wantError: "--localise-test: SKU h200 has no single-node suite to take it from"},
		{name: "a test not of the suite", req: with(func(r *LocaliseRequest) { r.Tests = []string{"rccl.all_gather"} }),
			wantError: "--localise-test rccl.all_gather: not a test of suite singlenode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.req.Resolve(resolveSKU())
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got.NodeSuite, c.nodeSuite)
			assert.DeepEqual(t, got.NICs, c.nics)
			assert.DeepEqual(t, got.NodeTests, c.req.Tests)
		})
	}
}

func TestLocaliseTests(t *testing.T) {
	s := resolveSKU()
	s.Suites["multinode"].Tests = append(s.Suites["multinode"].Tests, &sku.SuiteTest{Test: "mori.dispatch", Skip: "no baseline"})
	cases := []struct {
		name, suite string
		only        []string
		want        []string
		wantError   string
	}{
		{name: "every test not skipped", suite: "multinode", want: []string{"nccl.all_reduce", "ibperf.write_bw"}},
		{name: "--test", suite: "multinode", only: []string{"ibperf.write_bw"}, want: []string{"ibperf.write_bw"}},
		{name: "--test not of the suite", suite: "multinode", only: []string{"nccl.all_reduce", "gemm.matmul"}, wantError: "--test gemm.matmul: not a test of suite multinode"},
		{name: "only a skipped one", suite: "multinode", only: []string{"mori.dispatch"}, wantError: "--test mori.dispatch: not a test of suite multinode"},
		{name: "a 1-node suite", suite: "singlenode", wantError: "suite singlenode runs on 1 node: localise narrows down multi-node tests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LocaliseTests(s, c.suite, c.only)
			if c.wantError != "" {
				assert.ErrorContains(t, err, c.wantError)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
		})
	}
}
