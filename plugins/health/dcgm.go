package health

// This file: dcgmi diag -j, in both of its shapes: DCGM 3.x ("DCGM GPU
// Diagnostic", one result per GPU with gpu_ids, warnings as text or
// objects) and 4.x ("DCGM Diagnostic", results per entity with entity_id,
// a test_summary per test, warnings with error_id and error_severity).

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// dcgmFinding is one test's verdict on one GPU (or on all of them).
type dcgmFinding struct {
	category, test string
	gpus           string // "0", "0,1,2,3" or "" (the test's summary)
	status         string // "pass", "fail", "warn", "skip", "not run", ...
	warnings       []dcgmWarning
}

type dcgmWarning struct {
	text string
	// reason is the DCGM_FR_* name of error_id ("" without one).
	reason string
	// severity is the dcgmErrorSeverity_t name ("DCGM_ERROR_ISOLATE"),
	// "" without one.
	severity string
}

// dcgmRun is a parsed dcgmi diag document.
type dcgmRun struct {
	version  string
	findings []dcgmFinding
	where    string
}

// dcgmSeverities are dcgmErrorSeverity_t's names by value
// (NVIDIA/DCGM dcgmlib/dcgm_errors.h): the JSON carries the number, the
// verdict is made on the name.
var dcgmSeverities = map[int64]string{
	0: "DCGM_ERROR_NONE", 1: "DCGM_ERROR_MONITOR", 2: "DCGM_ERROR_ISOLATE", 3: "DCGM_ERROR_UNKNOWN",
	4: "DCGM_ERROR_TRIAGE", 5: "DCGM_ERROR_CONFIG", 6: "DCGM_ERROR_RESET",
}

// dcgmReasons are the DCGM_FR_* names (dcgm_errors.h dcgmError_t) of the
// error_ids a health check is likely to meet; others print as their number.
var dcgmReasons = map[int64]string{
	4: "DCGM_FR_VOLATILE_DBE_DETECTED", 6: "DCGM_FR_PENDING_PAGE_RETIREMENTS", 9: "DCGM_FR_CORRUPT_INFOROM",
	10: "DCGM_FR_CLOCKS_EVENT_THERMAL", 12: "DCGM_FR_CLOCKS_EVENT_POWER", 14: "DCGM_FR_NVLINK_DOWN",
	20: "DCGM_FR_DEVICE_COUNT_MISMATCH", 23: "DCGM_FR_DENYLISTED_DRIVER", 25: "DCGM_FR_GRAPHICS_PROCESSES",
	28: "DCGM_FR_BAD_CUDA_ENV", 29: "DCGM_FR_PERSISTENCE_MODE", 30: "DCGM_FR_LOW_BANDWIDTH",
	40: "DCGM_FR_THERMAL_VIOLATIONS", 43: "DCGM_FR_CLOCKS_EVENT_VIOLATION", 45: "DCGM_FR_PCIE_GENERATION",
	46: "DCGM_FR_PCIE_WIDTH", 52: "DCGM_FR_FAULTY_MEMORY", 55: "DCGM_FR_ECC_DISABLED", 57: "DCGM_FR_CUDA_DBE",
	58: "DCGM_FR_MEMORY_MISMATCH", 62: "DCGM_FR_MEMORY_BANDWIDTH", 80: "DCGM_FR_ROW_REMAP_FAILURE",
	81: "DCGM_FR_UNCONTAINED_ERROR", 84: "DCGM_FR_UNCORRECTABLE_ROW_REMAP", 85: "DCGM_FR_PENDING_ROW_REMAP",
	99: "DCGM_FR_GPU_EXPECTED_NVLINKS_UP", 101: "DCGM_FR_XID_ERROR", 103: "DCGM_FR_DBE_VIOLATION",
	118: "DCGM_FR_SRAM_THRESHOLD", 120: "DCGM_FR_FALLEN_OFF_BUS", 125: "DCGM_FR_GPU_RECOVERY_RESET",
	126: "DCGM_FR_GPU_RECOVERY_REBOOT", 128: "DCGM_FR_GPU_RECOVERY_DRAIN_RESET",
}

type dcgmDoc struct {
	V3       *dcgmBody      `json:"DCGM GPU Diagnostic"`
	V4       *dcgmBody      `json:"DCGM Diagnostic"`
	Metadata map[string]any `json:"metadata"`
}

type dcgmBody struct {
	Categories   []*dcgmCategory `json:"test_categories"`
	Version      string          `json:"version"`
	RuntimeError string          `json:"runtime_error"`
}

type dcgmCategory struct {
	Category string      `json:"category"`
	Tests    []*dcgmTest `json:"tests"`
}

type dcgmTest struct {
	Name    string        `json:"name"`
	Results []*dcgmResult `json:"results"`
	Summary *struct {
		Status string `json:"status"`
	} `json:"test_summary"`
}

type dcgmResult struct {
	GPUIDs   json.RawMessage `json:"gpu_ids"`
	GPUID    json.RawMessage `json:"gpu_id"`
	EntityID json.RawMessage `json:"entity_id"`
	Status   string          `json:"status"`
	Warnings json.RawMessage `json:"warnings"`
}

// rawID reads a gpu id that is a number or a string ("0,1,2").
func rawID(r json.RawMessage) string {
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(r, &n) == nil {
		return n.String()
	}
	return ""
}

// enumName reads an error_severity or error_id: a number (looked up in
// names), or already a name.
func enumName(r json.RawMessage, names map[int64]string, prefix string) string {
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	var n int64
	if json.Unmarshal(r, &n) == nil {
		if name, ok := names[n]; ok {
			return name
		}
		return prefix + strconv.FormatInt(n, 10)
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		s = strings.ToUpper(strings.TrimSpace(s))
		if s != "" && !strings.HasPrefix(s, prefix) {
			s = prefix + s
		}
		return s
	}
	return ""
}

func parseWarnings(r json.RawMessage) []dcgmWarning {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	var objs []struct {
		Warning  string          `json:"warning"`
		ErrorID  json.RawMessage `json:"error_id"`
		Severity json.RawMessage `json:"error_severity"`
	}
	if json.Unmarshal(r, &objs) == nil {
		var out []dcgmWarning
		for _, o := range objs {
			out = append(out, dcgmWarning{text: o.Warning, reason: enumName(o.ErrorID, dcgmReasons, "DCGM_FR_"), severity: enumName(o.Severity, dcgmSeverities, "DCGM_ERROR_")})
		}
		return out
	}
	var texts []string
	if json.Unmarshal(r, &texts) == nil {
		var out []dcgmWarning
		for _, t := range texts {
			out = append(out, dcgmWarning{text: t})
		}
		return out
	}
	var one string
	if json.Unmarshal(r, &one) == nil && one != "" {
		return []dcgmWarning{{text: one}}
	}
	return nil
}

// parseDCGM reads a dcgmi diag -j document; text before the first "{"
// (dcgmi's "Successfully ran diagnostic for group." or a warning) is
// skipped. The error names the file.
func parseDCGM(s *section) (*dcgmRun, error) {
	text := s.text()
	i := strings.IndexByte(text, '{')
	if i < 0 {
		return nil, fmt.Errorf("%s: no JSON document in the dcgmi diag output", s.where())
	}
	var doc dcgmDoc
	if err := json.NewDecoder(strings.NewReader(text[i:])).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: dcgmi diag -j output is not JSON: %w", s.where(), err)
	}
	body := doc.V4
	if body == nil {
		body = doc.V3
	}
	if body == nil {
		return nil, fmt.Errorf("%s: neither \"DCGM Diagnostic\" (DCGM 4) nor \"DCGM GPU Diagnostic\" (DCGM 3) in the JSON", s.where())
	}
	run := &dcgmRun{version: body.Version, where: s.where()}
	if v, ok := doc.Metadata["version"].(string); ok && run.version == "" {
		run.version = v
	}
	if body.RuntimeError != "" {
		return run, fmt.Errorf("%s: dcgmi diag could not run: %s", s.where(), body.RuntimeError)
	}
	for _, c := range body.Categories {
		if c == nil {
			continue
		}
		for _, t := range c.Tests {
			if t == nil { // DCGM 3.1 writes null between tests
				continue
			}
			for _, r := range t.Results {
				if r == nil {
					continue
				}
				ids := rawID(r.EntityID)
				if ids == "" {
					ids = rawID(r.GPUID)
				}
				if ids == "" {
					ids = rawID(r.GPUIDs)
				}
				run.findings = append(run.findings, dcgmFinding{category: c.Category, test: t.Name, gpus: ids, status: strings.ToLower(strings.TrimSpace(r.Status)), warnings: parseWarnings(r.Warnings)})
			}
			if t.Summary != nil {
				run.findings = append(run.findings, dcgmFinding{category: c.Category, test: t.Name, status: strings.ToLower(strings.TrimSpace(t.Summary.Status))})
			}
		}
	}
	return run, nil
}
