package train

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/plugins/internal/torchbench"
	"github.com/gpuaccept/gpuaccept/plugins/internal/trainlog"
)

// parseCommand reads train.command's outputs: each node's log through
// trainlog (Megatron-LM, Primus, torchtitan, NeMo), the gates, and the
// per-GPU throughput the log states (rank 0's view of the job).
func parseCommand(req pluginapi.ParseRequest, s settings) result.Parsed {
	var p result.Parsed
	var errs []string
	judged := 0
	for _, o := range req.Outputs {
		if o.LaunchError != "" {
			errs = append(errs, fmt.Sprintf("step %s: %s", o.Step, o.LaunchError))
		}
		read := 0
		for _, path := range torchbench.Paths(o) {
			name := filepath.Base(path)
			f, err := os.Open(path)
			if err != nil {
				errs = append(errs, fmt.Sprintf("open %s: %v", name, err))
				continue
			}
			l, err := trainlog.Read(f)
			f.Close()
			if err != nil {
				if path == o.Log && s.logFile != "" {
					continue // the output may only wrap the log file
				}
				errs = append(errs, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			read++
			judged += len(trainlog.Judged(l, s.warmup)) + len(l.Failures)
			judgeLog(&p, l, s.warmup, o.Host, name)
		}
		if read == 0 && o.ExitCode != 0 {
			errs = append(errs, fmt.Sprintf("step %s exited with status %d", o.Step, o.ExitCode))
		} else if o.ExitCode != 0 {
			p.Checks = append(p.Checks, exitCheck(o))
		}
		if s.logFile != "" && o.Files[s.logFile] == "" && o.LaunchError == "" {
			errs = append(errs, fmt.Sprintf("step %s: the log file %s (parameter log) was not written", o.Step, s.logFile))
		}
	}
	if judged == 0 && len(errs) == 0 && !failedCheck(p) {
		errs = append(errs, "no judged training step in the log")
	}
	if len(errs) > 0 {
		p.Error = strings.Join(errs, "; ")
	}
	return p
}

// judgeLog adds one log's gates and figures.
func judgeLog(p *result.Parsed, l trainlog.Log, warmup int, host, name string) {
	for _, g := range trainlog.Gates(l, warmup) {
		g.Name += " " + name
		g.Host = host
		p.Checks = append(p.Checks, g)
	}
	var tps, tfl []float64
	for _, st := range trainlog.Judged(l, warmup) {
		if st.TokensPerSecPerGPU > 0 {
			tps = append(tps, st.TokensPerSecPerGPU)
		}
		if st.TFLOPSPerGPU > 0 {
			tfl = append(tfl, st.TFLOPSPerGPU)
		}
	}
	labels := map[string]string{"dtype": "bf16", "gpu": "all"}
	if m := l.Info["model"]; m != "" {
		labels["model"] = m
	}
	if host != "" {
		labels["host"] = host
	}
	if len(tps) > 0 {
		p.Metrics = append(p.Metrics, result.Metric{Name: "tokens_per_s", Value: result.Median(tps), Unit: "tokens/s", Labels: maps.Clone(labels)})
	}
	if len(tfl) > 0 {
		p.Metrics = append(p.Metrics, result.Metric{Name: "tflops", Value: result.Median(tfl), Unit: "TFLOPS", Labels: maps.Clone(labels)})
	}
	if p.Info == nil {
		p.Info = map[string]string{}
	}
	for k, v := range l.Info {
		if strings.HasSuffix(k, "version") || k == "gpu" || k == "model" || k == "world_size" {
			p.Info[k] = v
		}
	}
	p.Info["writer"] = l.Writer
	if l.Formula != "" {
		p.Diagnostics = append(p.Diagnostics, result.Diagnostic{Level: result.Info, Message: fmt.Sprintf("%s: %s log; TFLOP/s by its formula: %s", name, l.Writer, l.Formula)})
	}
}
