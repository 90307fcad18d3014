package report

import (
	"bytes"
	"encoding/json"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// realRun loads the results of a real gpuaccept run on 2 x H200 (see
// testdata/recordings/h200x2-2026-11-30-final/README.md) and the h200 SKU.
func realRun(t *testing.T, name string) (*result.Run, *sku.SKU) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../testdata/recordings/h200x2-2026-11-30-final", name, layout.Results))
	assert.NilError(t, err)
	var run result.Run
	assert.NilError(t, json.Unmarshal(data, &run))
	cat, err := sku.Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	s, err := cat.Get("h200")
	assert.NilError(t, err)
	return declare(t, &run), s
}

func TestPlotCurvesAgainstBands(t *testing.T) {
	cases := []struct {
		run, test    string
		curves       []string
		bands        int
		fails, warns int
	}{
		{"mpi", "nccl.all_reduce", []string{"busbw in-place", "busbw out-of-place"}, 2, 0, 0},
		{"p2poff", "nccl.all_reduce", []string{"busbw in-place", "busbw out-of-place"}, 2, 14, 0},
	}
	for _, c := range cases {
		t.Run(c.run+"/"+c.test, func(t *testing.T) {
			run, s := realRun(t, c.run)
			var test result.Test
			for _, tt := range run.Tests {
				if tt.Name == c.test {
					test = tt
				}
			}
			figs, err := Plot(test, s)
			assert.NilError(t, err)
			assert.Equal(t, len(figs), 1)
			f := figs[0]
			assert.DeepEqual(t, f.Curves, c.curves)
			assert.Equal(t, f.Metric, "busbw")
			assert.Equal(t, f.Unit, "GB/s")
			assert.Equal(t, f.Bands, c.bands)
			assert.Equal(t, f.Ceiling, 450.0)
			svg := string(f.SVG)
			assert.Assert(t, strings.HasPrefix(svg, "<svg"), svg[:40])
			// Size axis in bytes as people read them, log scale.
			for _, lbl := range []string{">8 B<", ">4 KiB<", ">1 GiB<", "ceiling 450 GB/s"} {
				assert.Assert(t, strings.Contains(svg, lbl), lbl)
			}
			// Nothing measured the baseline does not judge is marked.
			fails := 0
			for _, m := range test.Metrics {
				if m.Status == result.Fail {
					fails++
				}
			}
			assert.Equal(t, fails, c.fails)
		})
	}
	// No baseline: the curves alone.
	run, _ := realRun(t, "mpi")
	figs, err := Plot(run.Tests[0], nil)
	assert.NilError(t, err)
	assert.Equal(t, figs[0].Bands, 0)
	assert.Equal(t, len(figs[0].Curves), 2)
}

// The page stands alone: no script, nothing fetched, every plot inline.
func TestHTMLSelfContained(t *testing.T) {
	run, s := realRun(t, "p2poff")
	var b bytes.Buffer
	assert.NilError(t, HTML(&b, run, s))
	page := b.String()
	for _, bad := range []string{"<script", "<link", "<img", "@import", "url("} {
		assert.Assert(t, !strings.Contains(page, bad), bad)
	}
	urls := regexp.MustCompile(`https?://[^"' <]+`).FindAllString(page, -1)
	for _, u := range urls {
		assert.Assert(t, u == "http://www.w3.org/2000/svg" || u == "http://www.w3.org/1999/xlink", "network address %s in the page", u)
	}
	assert.Equal(t, strings.Count(page, `<div class="plot"`), len(run.Tests))
	assert.Equal(t, strings.Count(page, "<svg"), len(run.Tests))
	// The verdict table comes first.
	assert.Assert(t, strings.Index(page, `id="verdicts"`) < strings.Index(page, "<svg"))
	assert.Assert(t, strings.Contains(page, `<td>FAIL</td>`))
}

func TestPerNodeTables(t *testing.T) {
	tst := result.Test{Name: "ibperf.write_bw", Status: result.Fail, Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Metrics: []result.Judged{
		{Metric: result.Metric{Name: "bw_avg", Value: 390.1, Unit: "Gb/s", Labels: map[string]string{"pair": "n1-n2"}}, Status: result.Pass},
		{Metric: result.Metric{Name: "bw_avg", Value: 190.5, Unit: "Gb/s", Labels: map[string]string{"pair": "n0-n1"}}, Status: result.Fail},
	}}
	tables := perTables(tst)
	assert.Equal(t, len(tables), 1)
	assert.Equal(t, tables[0].Key, "pair")
	assert.Equal(t, tables[0].Rows[0].Labels["pair"], "n0-n1")
	var b bytes.Buffer
	assert.NilError(t, HTML(&b, &result.Run{SKU: "x", Suite: "s", Tests: []result.Test{tst}}, nil))
	assert.Assert(t, strings.Contains(b.String(), "<h3>per pair</h3>"))
	assert.Assert(t, strings.Contains(b.String(), `<tr class="fail"><td>n0-n1</td><td>bw_avg</td><td></td><td>190.50 Gb/s</td>`), b.String())
}

// chromium finds the headless browser: GPUACCEPT_CHROMIUM (scripts/testenv.sh
// up report) or chromium on PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("GPUACCEPT_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Missing(t, "chromium not found (Debian chromium; scripts/testenv.sh up report)")
	}
	return p
}

// screenshot renders page in headless Chromium and returns the image.
func screenshot(t *testing.T, browser, page string) image.Image {
	t.Helper()
	dir := t.TempDir()
	html := filepath.Join(dir, layout.HTML)
	assert.NilError(t, os.WriteFile(html, []byte(page), 0o644))
	shot := filepath.Join(dir, "shot.png")
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1000,1400", "--screenshot="+shot, "file://"+html)
	out, err := cmd.CombinedOutput()
	assert.NilError(t, err, string(out))
	f, err := os.Open(shot)
	assert.NilError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	assert.NilError(t, err)
	return img
}

// curvePixels counts pixels of the out-of-place curve's colour (#1F77B4)
// and of the baseline band's shading (a pale blue-brown) on screen.
func curvePixels(img image.Image) (curve, band int) {
	near := func(a, b uint32, tol int) bool { d := int(a>>8) - int(b); return d < tol && d > -tol }
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if near(cr, 0x1f, 30) && near(cg, 0x77, 30) && near(cb, 0xb4, 30) {
				curve++
			}
			// Both bands overlap into a brownish shade; out-of-place alone is pale blue.
			if near(cr, 0xd2, 30) && near(cg, 0xc3, 30) && near(cb, 0xb6, 40) || near(cr, 0xc6, 25) && near(cg, 0xdc, 25) && near(cb, 0xec, 25) {
				band++
			}
		}
	}
	return curve, band
}

// Looks at the page as people do: headless Chromium renders the report of
// a healthy real run, and the plot shows the measured curve and the band.
// The same check on the page with the curve drawn invisible (an empty
// plot) fails, so it catches a plot that draws nothing.
func TestHTMLScreenshot(t *testing.T) {
	browser := chromium(t)
	run, s := realRun(t, "mpi")
	run.Tests = run.Tests[:1] // one plot on screen
	var b bytes.Buffer
	assert.NilError(t, HTML(&b, run, s))
	curve, band := curvePixels(screenshot(t, browser, b.String()))
	t.Logf("curve pixels %d, band pixels %d", curve, band)
	assert.Assert(t, curve > 300, "the measured curve is not on screen (%d pixels)", curve)
	assert.Assert(t, band > 2000, "the baseline band is not on screen (%d pixels)", band)

	empty := strings.NewReplacer("stroke:#1F77B4", "stroke:#FFFFFF", "fill:#1F77B4", "fill:#FFFFFF").Replace(b.String())
	curve, _ = curvePixels(screenshot(t, browser, empty))
	assert.Assert(t, curve < 300, "an empty plot was not caught (%d curve pixels)", curve)
}

// The figure spans the page, its legend sits right of the plot area (over
// no curve, band, gridline or ceiling), and no band rises over the
// ceiling: nothing passes above the physical limit.
func TestPlotLayout(t *testing.T) {
	run, s := realRun(t, "mpi")
	for _, test := range run.Tests {
		t.Run(test.Name, func(t *testing.T) {
			for _, b := range bands(s, test, "busbw") {
				assert.Assert(t, b.ceiling > 0, b.label)
				for i, hi := range b.hi {
					assert.Assert(t, hi <= b.ceiling, "%s band at %g B reaches %g, over the ceiling %g", b.label, b.sizes[i], hi, b.ceiling)
				}
			}
			figs, err := Plot(test, s)
			assert.NilError(t, err)
			svg := string(figs[0].SVG)
			assert.Assert(t, strings.HasPrefix(svg, `<svg width="792pt" height="316.8pt"`), svg[:60])
			textX := func(re string) []float64 {
				var xs []float64
				for _, m := range regexp.MustCompile(`<text x="([0-9.]+)"[^>]*\n?[^>]*>(`+re+`)</text>`).FindAllStringSubmatch(svg, -1) {
					x, err := strconv.ParseFloat(m[1], 64)
					assert.NilError(t, err)
					xs = append(xs, x)
				}
				return xs
			}
			ticks := textX(`[0-9]+ (B|KiB|MiB|GiB)`)
			legend := textX(`busbw (in|out-of)-place[^<]*|ceiling [^<]*|baseline [^<]*`)
			assert.Assert(t, len(ticks) > 3 && len(legend) == len(figs[0].Curves)+figs[0].Bands+1, "ticks %v, legend %v", ticks, legend)
			for _, x := range legend {
				assert.Assert(t, x > slices.Max(ticks)+20, "legend text at x=%g inside the plot area (last size tick at %g)", x, slices.Max(ticks))
			}
		})
	}
	page := htmlCSS(t)
	assert.Assert(t, strings.Contains(page, ".plot svg { width: 100%; height: auto; }"), "plots scale to the page width")
}

func htmlCSS(t *testing.T) string {
	run, s := realRun(t, "mpi")
	var b bytes.Buffer
	assert.NilError(t, HTML(&b, run, s))
	return b.String()
}

// The datasheet efficiency shows under the verdicts and in each test's
// section, except for an error test, whose numbers are not to be trusted.
func TestHTMLEfficiency(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, HTML(&b, sample(), nil))
	page := b.String()
	assert.Assert(t, strings.Index(page, `id="verdicts"`) < strings.Index(page, `id="efficiency"`))
	assert.Equal(t, strings.Count(page, "peak 344.0 GB/s at 4 GiB, 76.5% of 450 GB/s (NVLink 4, one way)"), 2, "summary and section")
	assert.Equal(t, strings.Count(page, `<table class="efficiency">`), 2, "all_reduce and all_gather, not alltoall (error)")
	assert.Assert(t, !strings.Contains(page, "9999"))
}

// The HTML verdict table shows a test's whole message: a page wraps its
// cells, so the text table's cut ("...") would only hide findings there.
func TestHTMLDetailNotCut(t *testing.T) {
	run, s := realRun(t, "p2poff")
	long := ""
	for _, tt := range run.Tests {
		if len(tt.Message) > maxDetail {
			long = tt.Message
			break
		}
	}
	assert.Assert(t, long != "", "a real message longer than the text table's %d bytes", maxDetail)
	var page bytes.Buffer
	assert.NilError(t, HTML(&page, run, s))
	verdicts := page.String()[strings.Index(page.String(), `<table id="verdicts">`):]
	verdicts = verdicts[:strings.Index(verdicts, "</table>")]
	assert.Assert(t, strings.Contains(verdicts, "<td>"+html.EscapeString(long)+"</td>"), "the verdict table lacks the whole message %q", long)
	assert.Assert(t, !strings.Contains(verdicts, "...</td>"), verdicts)
}
