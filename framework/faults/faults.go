// Package faults is gpuaccept's one table of fault codes: the stable code a
// failed health check carries (result.Check.Code), what it means, how bad
// it is, what to do about it, and which rule of other health checkers it
// corresponds to (azurehpc-health-checks' NHC20xx, DCGM's DCGM_FR_* names).
// docs/FAULTS.md is this table rendered by Markdown; a test keeps the two
// equal. A code, once published, is never reused for another fault.
package faults

import (
	"fmt"
	"sort"
	"strings"
)

// Severity says what a fault asks of the node's operator.
type Severity string

// The severities, from worst to least.
const (
	// Drain: take the node out of service (and usually RMA the part); it
	// cannot be trusted with work.
	Drain Severity = "drain"
	// Reset: reset the GPU (or reboot the node) before more work; the
	// fault clears with it unless it comes back.
	Reset Severity = "reset"
	// Fix: a setting or cabling to correct (persistence mode, ECC off, a
	// driver of another version); the hardware is not at fault.
	Fix Severity = "fix"
	// Warn: worth a look, not a reason to take the node out.
	Warn Severity = "warn"
)

// Fault is one row of the table.
type Fault struct {
	// Code is the stable identifier, GA-AREA-WHAT ("GA-GPU-ECC-UNCORR").
	Code string
	// Title is what went wrong, in a few words.
	Title string
	// Severity is what the fault asks for (Drain, Reset, Fix, Warn).
	Severity Severity
	// Remedy is what the operator does, in order.
	Remedy string
	// Source names the rules of other health checkers this one
	// corresponds to, with where they are written: azurehpc-health-checks
	// fault codes (triggerGHR/config/nhc_fault_dictionary.cfg, the check
	// in customTests/), DCGM failure reasons (dcgmlib/dcgm_errors.h).
	Source string
}

// table is every fault, in the order docs/FAULTS.md lists them.
var table = []Fault{
	{"GA-GPU-COUNT", "fewer or more GPUs than the SKU has", Drain,
		"Check `nvidia-smi -L` / `amd-smi list` / `lspci | grep -i -e nvidia -e amd` for a GPU that fell off the bus; reboot once; if it is still missing, drain the node and RMA the GPU or baseboard.",
		"azurehpc-health-checks NHC2009 (customTests/azure_gpu_count.nhc); DCGM_FR_DEVICE_COUNT_MISMATCH"},
	{"GA-GPU-MODEL", "a GPU of another model than the node's others or the SKU's", Drain,
		"Confirm the node is the hardware the SKU describes (`nvidia-smi -q | grep 'Product Name'`); a mixed node is mis-built: drain it and have the vendor fix the build.",
		"gpuaccept's own (the framework's GPU model gate judges the SKU's model)"},
	{"GA-GPU-ECC-OFF", "ECC is disabled", Fix,
		"Enable ECC (`nvidia-smi -e 1`) and reset the GPU or reboot; ECC must be on for acceptance.",
		"DCGM_FR_ECC_DISABLED"},
	{"GA-GPU-ECC-UNCORR", "uncorrected (double-bit) ECC errors since the driver loaded", Reset,
		"Reset the GPU (`nvidia-smi -r -i N`; AMD: `amd-smi reset -G -g N`) or reboot so that the row remap or page retirement takes effect; if the errors come back, drain the node and RMA the GPU.",
		"azurehpc-health-checks NHC2019 (customTests/azure_gpu_ecc.nhc); DCGM_FR_VOLATILE_DBE_DETECTED, DCGM_FR_DBE_VIOLATION; amd-smi metric total_uncorrectable_count"},
	{"GA-GPU-ECC-DEFERRED", "deferred (poisoned, not yet consumed) ECC errors on an AMD GPU", Warn,
		"Reset the GPU (`amd-smi reset -G -g N`) at the next drain; if the deferred or uncorrectable count grows, drain the node and RMA the GPU (`amd-smi bad-pages` lists the retired pages).",
		"amd-smi metric --ecc total_deferred_count (ROCm/amdsmi amdsmi_cli/amdsmi_commands.py)"},
	{"GA-GPU-ECC-AGGREGATE", "uncorrected ECC errors in the GPU's lifetime (none since the driver loaded)", Warn,
		"Watch the count: row remapping has likely repaired them. Drain and RMA if the aggregate keeps growing or a row remap fails.",
		"azurehpc-health-checks NHC2019 (customTests/azure_gpu_ecc.nhc, aggregate counts)"},
	{"GA-GPU-RETIRED-PENDING", "memory pages are waiting to be retired", Reset,
		"Reset the GPU or reboot so that the pending pages are retired; if pages keep being retired, drain and RMA the GPU.",
		"azurehpc-health-checks NHC2018 (customTests/azure_gpu_ecc.nhc); DCGM_FR_PENDING_PAGE_RETIREMENTS, DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS"},
	{"GA-GPU-ROWREMAP-PENDING", "a row remap is pending", Reset,
		"Reset the GPU (`nvidia-smi -r -i N`) or reboot: the remap takes effect at the next reset. Until then the GPU runs with the bad row.",
		"azurehpc-health-checks NHC2007 (customTests/azure_gpu_ecc.nhc, \"Row remap pending\"); DCGM_FR_PENDING_ROW_REMAP"},
	{"GA-GPU-ROWREMAP-FAIL", "a row remap failed: the GPU has no spare rows left", Drain,
		"Drain the node and RMA the GPU: a failed row remap cannot be repaired in the field.",
		"azurehpc-health-checks NHC2007 (customTests/azure_gpu_ecc.nhc, \"Row remap error\"); DCGM_FR_ROW_REMAP_FAILURE"},
	{"GA-GPU-THROTTLE", "clocks held down by a hardware or thermal slowdown", Drain,
		"Check cooling, fans, power supply and the inlet temperature (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`); a GPU that slows down at idle has a hardware fault: drain and have it serviced.",
		"azurehpc-health-checks customTests/azure_gpu_clock_throttling.nhc; DCGM_FR_CLOCKS_EVENT_VIOLATION, DCGM_FR_CLOCKS_EVENT_THERMAL"},
	{"GA-PCIE-DOWNGRADE", "a PCIe link trained below its width or generation", Drain,
		"Reseat the GPU (or the riser/cable of its switch) and reboot; check the BIOS PCIe settings; if the link still trains low, drain and RMA the baseboard or riser.",
		"azurehpc-health-checks customTests/azure_hw_topology_check.nhc (NHC2010); DCGM_FR_PCIE_WIDTH, DCGM_FR_PCIE_GENERATION"},
	{"GA-NVLINK-INACTIVE", "NVLink links inactive", Drain,
		"Check the fabric manager (`systemctl status nvidia-fabricmanager`) and reset the GPUs; if links stay down, drain the node and have the baseboard serviced.",
		"azurehpc-health-checks NHC2016 (customTests/azure_gpu_nvlink.nhc); DCGM_FR_NVLINK_DOWN, DCGM_FR_GPU_EXPECTED_NVLINKS_UP"},
	{"GA-GPU-XGMI", "XGMI (AMD GPU-to-GPU link) errors", Drain,
		"Note the count, clear it (`amd-smi reset --xgmierr`) and rerun the check; if errors come back, reset the GPUs or reboot, and if they persist drain the node and have the baseboard or OAM serviced.",
		"amd-smi metric --xgmi-err (amdsmi_xgmi_status_t ERROR, MULTIPLE_ERRORS); the XGMI_WAFL uncorrectable count, where MI300-series GPUs report XGMI faults (ROCm/rocm-systems issue 11468)"},
	{"GA-GPU-PERSISTENCE", "persistence mode is disabled", Fix,
		"Enable it (`nvidia-smi -pm 1`, or run nvidia-persistenced): without it every job pays the driver's start-up and GPU state is lost between jobs.",
		"azurehpc-health-checks customTests/azure_gpu_persistence.nhc (NHC2015); DCGM_FR_PERSISTENCE_MODE"},
	{"GA-GPU-XID", "a fatal XID event in the kernel log", Reset,
		"Look the XID up (https://docs.nvidia.com/deploy/xid-errors/); reset the GPU or reboot; if the XID comes back, drain the node and RMA the GPU.",
		"azurehpc-health-checks customTests/azure_gpu_xid.nhc (NHC2001, its XID list); NHC2011 (XID 95), NHC2012 (XID 94), NHC2014 (XID 48); DCGM_FR_XID_ERROR"},
	{"GA-GPU-OFFBUS", "XID 79, or the driver's \"GPU has fallen off the bus\": the GPU has fallen off the bus", Drain,
		"Drain the node; reseat the GPU and check its power and the PCIe path; RMA the GPU if it happens again.",
		"azurehpc-health-checks NHC2013 (XID79FallenOffBus); DCGM_FR_FALLEN_OFF_BUS; leptonai/gpud components/accelerator/nvidia/xid/kmsg.go (RegexNVRMFallenOffBusSingleLine, RegexNVRMFallenOffBusMultiline)"},
	{"GA-GPU-INIT", "the driver could not initialise a GPU (RmInitAdapter failed, probe failed, a GPU the driver does not support)", Drain,
		"Read the NVRM lines the message names; check the driver supports the GPU (open kernel modules need a GSP GPU) and that the GPU, its power and PCIe slot are sound; reboot once; if it fails again, drain the node and RMA the GPU.",
		"gpuaccept's own (the NVRM kernel messages RmInitAdapter failed, probe failed, \"is not supported by the NVIDIA driver\")"},
	{"GA-DRIVER-MISMATCH", "a node runs another NVIDIA driver version than the others", Fix,
		"Install the driver the rest of the cluster runs (`nvidia-smi --query-gpu=driver_version --format=csv`) and reboot.",
		"AMD CVS preflight (driver/ROCm version consistency); gpuaccept's own for NVIDIA"},
	{"GA-VBIOS-MISMATCH", "a GPU runs another VBIOS version than the others", Fix,
		"Flash the VBIOS the vendor specifies for the SKU on every GPU, then reset them.",
		"azurehpc-health-checks NHC2001 (customTests/azure_gpu_vbios.nhc)"},
	{"GA-DCGM-DIAG", "a DCGM diagnostic test failed (severity ISOLATE, TRIAGE or UNKNOWN)", Drain,
		"Read the test's warning (DCGM_FR_* name in the message) and the DCGM error guide; drain the node until the GPU is triaged or replaced.",
		"azurehpc-health-checks NHC2020 (HpcGpuDcgmDiagFailure); cluster-health-scanner dcgmi diag; DCGM dcgmErrorSeverity_t DCGM_ERROR_ISOLATE, DCGM_ERROR_TRIAGE, DCGM_ERROR_UNKNOWN"},
	{"GA-DCGM-RESET", "a DCGM diagnostic test failed and asks for a GPU reset (severity RESET)", Reset,
		"Drain the GPU's work, reset it (`nvidia-smi -r -i N`) and run the diagnostic again; RMA if it fails again.",
		"DCGM dcgmErrorSeverity_t DCGM_ERROR_RESET (\"Drain and reset GPU\"); DCGM_FR_GPU_RECOVERY_RESET"},
	{"GA-DCGM-CONFIG", "a DCGM diagnostic test failed on a setting (severity CONFIG)", Fix,
		"Correct the setting the warning names (persistence mode, a CUDA environment variable, a denylisted driver) and run the diagnostic again.",
		"DCGM dcgmErrorSeverity_t DCGM_ERROR_CONFIG (\"This error can be configured\")"},
	{"GA-DCGM-WARN", "a DCGM diagnostic test warned (severity MONITOR)", Warn,
		"Keep the node in service and watch the value the warning names.",
		"DCGM dcgmErrorSeverity_t DCGM_ERROR_MONITOR (\"Can perform workload, but needs to be monitored\")"},
	{"GA-IB-PORT-DOWN", "an InfiniBand/RoCE port is not ACTIVE", Drain,
		"Check the cable and the switch port (`ibstat`, the LEDs); reseat or replace the cable or transceiver; check the subnet manager for an InfiniBand port stuck in INIT.",
		"azurehpc-health-checks NHC2004 (IBPortDown), NHC2005 (IBPortFlapping)"},
	{"GA-IB-RATE", "an InfiniBand/RoCE port runs below the SKU's rate, or an InfiniBand port at 1X or below the width or rate of its HCA model's other ports on the node", Drain,
		"Reseat or replace the cable or transceiver (a lane down trains at a lower width); check the switch port's configured speed.",
		"azurehpc-health-checks NHC2003 (IBPerformance)"},
	{"GA-IB-COUNT", "fewer InfiniBand HCAs than the SKU has", Drain,
		"Check `ibstat -l` / `lspci | grep Mellanox` for a missing HCA, the driver (`mlx5_core`) and the firmware; reseat or RMA the HCA.",
		"azurehpc-health-checks NHC2002 (MissingIB)"},
	{"GA-ROCE-GID", "a RoCE port has no GID (no IP address on its netdev)", Fix,
		"Give the port's netdev its address (`ibdev2netdev`, `ip addr`); RoCE needs a GID to connect.",
		"AMD CVS preflight (RDMA link up); gpuaccept's own"},
	{"GA-TOOL-MISSING", "a tool the SKU's hardware needs is not installed on the node", Warn,
		"Install it (nvidia-smi, dcgmi, ibstat or infiniband-diags) so that the node can be checked; until then the check it makes is not made.",
		"gpuaccept's own"},
}

// All returns every fault, in table order. The slice is a copy.
func All() []Fault { return append([]Fault(nil), table...) }

// Lookup returns the fault of code and whether the table has it.
func Lookup(code string) (Fault, bool) {
	for _, f := range table {
		if f.Code == code {
			return f, true
		}
	}
	return Fault{}, false
}

// Advice is the one line a report prints for a failed check with code:
// "GA-GPU-ROWREMAP-FAIL (drain): a row remap failed: ... Remedy: ...";
// for a code the table does not hold, the code and that it is unknown (an
// external plugin's code, or one of a newer gpuaccept).
func Advice(code string) string {
	f, ok := Lookup(code)
	if !ok {
		return code + ": not in gpuaccept's fault table (docs/FAULTS.md)"
	}
	return fmt.Sprintf("%s (%s): %s. Remedy: %s", f.Code, f.Severity, f.Title, f.Remedy)
}

// Markdown renders the table as docs/FAULTS.md holds it.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# gpuaccept fault codes\n\n")
	b.WriteString("A failed health check carries one of these codes (`code` of the check in\n")
	b.WriteString("results.json); every report prints the code with its remedy. Severity:\n")
	b.WriteString("`drain` take the node out of service, `reset` reset the GPU or reboot\n")
	b.WriteString("before more work, `fix` correct a setting, `warn` worth a look.\n\n")
	b.WriteString("Generated from framework/faults (faults.go): edit the table there and run\n")
	b.WriteString("`GPUACCEPT_UPDATE_FAULTS=1 go test ./framework/faults/`.\n\n")
	b.WriteString("| code | fault | severity | remedy | corresponds to |\n|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, f := range table {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Code, cell(f.Title), f.Severity, cell(f.Remedy), cell(f.Source))
	}
	return b.String()
}

// Codes returns every code, sorted.
func Codes() []string {
	out := make([]string, len(table))
	for i, f := range table {
		out[i] = f.Code
	}
	sort.Strings(out)
	return out
}
