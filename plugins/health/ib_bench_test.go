package health

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// manyHCAs is the real ibstat (or ibv_devinfo) output at path with its
// HCA blocks repeated under new names (mlx4_0 ... mlx4_N) until it lists
// ports ports: a node far past any real one, as a hostile log gives.
func manyHCAs(b *testing.B, path, open string, ports int) *section {
	b.Helper()
	_, body, ok := strings.Cut(readFile(b, path), open)
	if !ok {
		b.Fatalf("%s: no %q", path, open)
	}
	lines := strings.Split(open+body, "\n")
	per := 0
	for _, l := range lines {
		t := stripPaste(l)
		if ibstatPort.MatchString(t) || devinfoPort.MatchString(t) {
			per++
		}
	}
	s := &section{name: "ibstat", file: path, exit: -1}
	for i := 0; i*per < ports; i++ {
		for _, l := range lines {
			// mlx4_0 -> x7_0: a new HCA name for every copy.
			l = strings.ReplaceAll(strings.ReplaceAll(l, "'mlx4_", fmt.Sprintf("'x%d_", i)), "\tmlx4_", fmt.Sprintf("\tx%d_", i))
			s.lines = append(s.lines, line{l, len(s.lines) + 1})
		}
	}
	return s
}

// BenchmarkIBParse reads a node's IB text of many ports (ibstat, and
// ibv_devinfo -v): the readers and the merge of the ports both list
// must stay linear in the ports, so one hostile node cannot stall the
// parse of all.
func BenchmarkIBParse(b *testing.B) {
	for _, tc := range []struct {
		tool, path, open, kind string
	}{
		{"ibstat", "testdata/ib/heioy-ibstat-mlx4.txt", "CA '", "ibstat"},
		{"ibv_devinfo", "../../testdata/field/health/ibv-devinfo-v-port2-polling/ibv_devinfo-v.txt", "hca_id:", "ibdevinfo"},
	} {
		for _, ports := range []int{1000, 10000, 30000} {
			s := manyHCAs(b, tc.path, tc.open, ports)
			b.Run(fmt.Sprintf("%s/%d", tc.tool, ports), func(b *testing.B) {
				for b.Loop() {
					n := &nodeInput{host: "evil", sections: map[string]*section{tc.kind: s}, order: []string{tc.kind}}
					var p result.Parsed
					readNode(&p, n)
				}
			})
		}
	}
}

// BenchmarkMergeIB joins two tools' lists of n ports each (ibstat's and
// ibv_devinfo's of one node), past the readers' cap: linear in n.
func BenchmarkMergeIB(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		ports := make([]ibPort, n)
		for i := range ports {
			ports[i] = ibPort{hca: fmt.Sprintf("x%d_0", i/2), port: i%2 + 1, state: "ACTIVE", rate: 400}
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				mergeIB(mergeIB(nil, ports), ports)
			}
		})
	}
}
