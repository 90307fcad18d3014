package layout

import "testing"

// The names are the format of a results folder a customer keeps: a
// folder written before a rename must still verify, so a name changes
// here on purpose or not at all. Every other test takes them from the
// constants; this one holds the constants to the folders on disk.
func TestNames(t *testing.T) {
	for got, want := range map[string]string{
		Raw: "raw", Results: "results.json", Journal: "journal.jsonl", Baseline: "baseline",
		Outputs: "outputs.json", Localise: "localise", Hardware: "hardware.json",
		Manifest: "manifest.json", SigFile: "manifest.json.sig", AttemptSep: ".attempt-",
		JUnit: "junit.xml", HTML: "report.html", Markdown: "summary.md", Table: "table.txt",
		StepLog("all_reduce"): "all_reduce.log", StepFiles("all_reduce"): "all_reduce.files",
		SlurmJobScript: "slurm-job.sh", SlurmJobOutput: "slurm-job.out", "x" + SlurmRanksExt: "x.ranks",
	} {
		if got != want {
			t.Errorf("name %q, want %q", got, want)
		}
	}
	if len(Reports) != 5 || Reports[0] != Results {
		t.Errorf("Reports = %q: results.json and the four reports rendered from it", Reports)
	}
}
