// Package gpuaccept holds the real recordings embedded in the gpuaccept
// binary: what `gpuaccept demo` replays through the whole pipeline.
package gpuaccept

import (
	"embed"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Recordings holds the folders of testdata/recordings that the demo
// replays (DemoRecordings' Dir, and nothing else: the other recordings are
// test data, read from disk): real nccl-tests outputs laid out as a results
// folder's raw/ (see testdata/recordings/README.md). A recording added to
// DemoRecordings is added here too; TestRecordingsEmbedDemoOnly says so.
//
//go:embed testdata/recordings/h200-1x2-healthy
//go:embed testdata/recordings/h200x2-2026-11-30/ga-p2poff/raw
var Recordings embed.FS

// DemoRecording is one recording the demo replays, with the verdict the
// h200 baseline must give it.
type DemoRecording struct {
	// Dir is the recording's folder inside Recordings.
	Dir string
	// Name names the demo's results folder and report files for it.
	Name  string
	Title string
	// Params are the suite parameters the recording was made with.
	Params map[string]string
	// Want is the run status the demo expects.
	Want result.Status
}

// DemoRecordings are replayed by `gpuaccept demo`, in order.
var DemoRecordings = []DemoRecording{
	{Dir: "testdata/recordings/h200-1x2-healthy", Name: "healthy", Title: "healthy: 2 x H200 (NVLink NV18), nccl-tests 2.19.6, NCCL 2.28.9, one process on both GPUs", Want: result.Pass},
	{Dir: "testdata/recordings/h200x2-2026-11-30/ga-p2poff/raw", Name: "p2p-off", Title: "degraded: the same kind of node with NVLink peer-to-peer disabled (NCCL_P2P_DISABLE=1)", Want: result.Fail},
}
