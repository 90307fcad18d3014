package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// gzipFile writes data gzip-compressed to dir/name.
func gzipFile(t *testing.T, data []byte, dir, name string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	assert.NilError(t, err)
	assert.NilError(t, zw.Close())
	p := filepath.Join(dir, name)
	assert.NilError(t, os.WriteFile(p, b.Bytes(), 0o644))
	return p
}

// checkSummary is what check prints as JSON that must not depend on how
// the log was given: status, message and the busbw at 4 GiB out of place.
type checkSummary struct {
	Status, Message string
	Busbw           float64
}

func summarize(t *testing.T, out string) checkSummary {
	t.Helper()
	var doc struct {
		Status string
		Tests  []struct {
			Status, Message string
			Metrics         []struct {
				Name   string
				Value  float64
				Size   int64
				Labels map[string]string
			}
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, len(doc.Tests), 1, out)
	s := checkSummary{Status: doc.Tests[0].Status, Message: doc.Tests[0].Message}
	for _, m := range doc.Tests[0].Metrics {
		if m.Name == "busbw" && m.Size == 4<<30 && m.Labels["placement"] == "out-of-place" {
			s.Busbw = m.Value
		}
	}
	return s
}

// check reads a .gz and standard input ("-", gzip or not) as it reads the
// plain log: the same verdict and numbers, from a real H200 recording.
func TestCheckGzipAndStdin(t *testing.T) {
	data := []byte(readFile(t, healthy+"/nccl.all_reduce/all_reduce.log"))
	dir := t.TempDir()
	plain := filepath.Join(dir, "all_reduce.log")
	assert.NilError(t, os.WriteFile(plain, data, 0o644))
	args := []string{"check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", "--format", "json"}
	code, out, errs := cli(t, append(args, plain)...)
	assert.Equal(t, code, 0, errs)
	want := summarize(t, out)
	assert.Equal(t, want.Status, "pass")
	assert.Assert(t, want.Busbw > 344 && want.Busbw < 345, "%+v", want)

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(data)
	assert.NilError(t, err)
	assert.NilError(t, zw.Close())
	for _, c := range []struct {
		name  string
		file  string
		stdin []byte
	}{
		{".gz", gzipFile(t, data, t.TempDir(), "all_reduce.log.gz"), nil},
		{"stdin", "-", data},
		{"stdin, gzip", "-", gz.Bytes()},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := cliStdin(t, c.stdin, append(args, c.file)...)
			assert.Equal(t, code, 0, errs)
			assert.DeepEqual(t, summarize(t, out), want)
		})
	}
}

// A .gz that cannot be read whole stops check before judging: exit 2 and
// an error naming the file.
func TestCheckBadGzip(t *testing.T) {
	data := []byte(readFile(t, healthy+"/nccl.all_reduce/all_reduce.log"))
	dir := t.TempDir()
	whole := gzipFile(t, data, dir, "whole.log.gz")
	zipped, err := os.ReadFile(whole)
	assert.NilError(t, err)
	cut := filepath.Join(dir, "cut.log.gz")
	assert.NilError(t, os.WriteFile(cut, zipped[:len(zipped)/3], 0o644))
	notGz := filepath.Join(dir, "text.log.gz")
	assert.NilError(t, os.WriteFile(notGz, data, 0o644))
	for _, c := range []struct{ file, want string }{
		{notGz, "gpuaccept: log file " + notGz + ": not gzip data"},
		{cut, "gpuaccept: log file " + cut + ": gzip data cut short or corrupt"},
	} {
		code, out, errs := cli(t, "check", "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", c.file)
		assert.Equal(t, code, 2, out+errs)
		assert.Assert(t, strings.Contains(errs, c.want), errs)
	}
}

// check --out keeps what it read: the results folder of a .gz or of
// standard input verifies and re-renders like any other.
func TestCheckOutOfGzipVerifies(t *testing.T) {
	data := []byte(readFile(t, healthy+"/nccl.all_reduce/all_reduce.log"))
	for _, c := range []struct {
		name, file, kept string
		stdin            []byte
	}{
		{".gz", gzipFile(t, data, t.TempDir(), "all_reduce.log.gz"), "raw/nccl.all_reduce/all_reduce.log", nil},
		{"stdin", "-", "raw/nccl.all_reduce/stdin", data},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "check")
			code, stdout, errs := cliStdin(t, c.stdin, "check", "--out", out, "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", c.file)
			assert.Equal(t, code, 0, stdout+errs)
			assert.Equal(t, readFile(t, filepath.Join(out, c.kept)), string(data), "the decompressed bytes are kept")
			code, vout, verrs := cli(t, "verify", out)
			assert.Equal(t, code, 0, vout+verrs)
			assert.Assert(t, strings.Contains(vout, "1 test re-judged"), vout)
			code, rout, rerrs := cli(t, "report", out)
			assert.Equal(t, code, 0, rout+rerrs)
		})
	}
}
