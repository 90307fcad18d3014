package health

// This file: nvidia-smi's default view (no options), the table people
// paste most: its banner gives the driver, each GPU's first row the
// index, name, persistence mode, bus id and volatile uncorrected ECC
// count. collect.sh never prints it (it asks for -q -x and the CSV); it is
// read for gpuaccept check and the GPU names --sku auto matches.

import (
	"fmt"
	"regexp"
	"strings"
)

// smiTableBanner is the table's banner: "| NVIDIA-SMI 580.159.04
// Driver Version: 580.159.04     CUDA Version: 13.0     |".
var smiTableBanner = regexp.MustCompile(`(?m)^\|\s*NVIDIA-SMI\s+\S+\s+Driver Version:\s*(\S+)`)

// smiTableGPU is a GPU's first row: "|   0  NVIDIA H100 80GB HBM3
// On  |   00000000:00:06.0 Off |                    0 |" (persistence On
// or Off; the bus id; Disp.A; the volatile uncorrected ECC count, or
// N/A).
var smiTableGPU = regexp.MustCompile(`^\|\s*(\d{1,4})\s+(\S.*?)\s+(On|Off)\s+\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+\S+\s+\|\s*(\S+)\s*\|`)

// parseSMITable reads nvidia-smi's default table. A table that elides
// GPUs (a line "..." between its rows, as pages shorten it) returns the
// GPUs it lists and an error: their count is not the node's, so the
// count check must not fail the node on it. No GPU row read is an error
// naming the file.
func parseSMITable(s *section) ([]gpu, error) {
	var out []gpu
	driver := ""
	elided := 0
	for _, l := range s.lines {
		t := strings.TrimSpace(l.text)
		if m := smiTableBanner.FindStringSubmatch(t); m != nil && driver == "" {
			driver = m[1]
			continue
		}
		if t == "..." && len(out) > 0 && elided == 0 {
			elided = l.no
			continue
		}
		m := smiTableGPU.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		g := newGPU(len(out), fmt.Sprintf("%s:%d", s.file, l.no))
		if n := num(m[1]); n >= 0 {
			g.index = int(n)
		}
		g.name, g.busID, g.driver = m[2], m[4], driver
		// -q and the CSV print Enabled/Disabled for what the table
		// prints On/Off.
		g.persistence = map[string]string{"On": "Enabled", "Off": "Disabled"}[m[3]]
		g.uncorrVol = num(m[5])
		out = append(out, g)
	}
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("%s: no GPU row of nvidia-smi's table read (\"|   0  NAME  On  |  BUS-ID  Off |  0 |\")", s.where())
	case elided > 0:
		return out, fmt.Errorf("%s:%d: the nvidia-smi table elides GPUs (\"...\"): %s listed, the node's GPU count is not known", s.file, elided, countGPUs(len(out)))
	}
	return out, nil
}

func countGPUs(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}
