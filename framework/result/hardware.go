package result

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// HardwareInfo is the key of result.Parsed.Info under which a plugin
// names the hardware its raw outputs show: a JSON list of Device. The
// framework takes it out of Info before judging (StripHardware), so no
// verdict, report or re-judging of a folder made before it existed
// depends on it; the run's devices, merged (MergeHardware), are the
// results folder's hardware.json (framework/resultsdir/layout.Hardware).
const HardwareInfo = "hardware"

// Device is one GPU or network adapter as a raw output shows it: what a
// customer matches against the hardware they received. Every field is
// text as the output prints it, "" when it shows none.
type Device struct {
	// Host is the node the output names for the device ("" when it
	// names none: a single-node output without a host name).
	Host string `json:"host,omitempty"`
	// Kind is "gpu" or "nic".
	Kind string `json:"kind"`
	// Name is the model ("NVIDIA H100 80GB HBM3") or, for a NIC, the
	// adapter's name ("mlx5_0").
	Name string `json:"name,omitempty"`
	// UUID and Serial identify a GPU (nvidia-smi's "GPU-..." and board
	// serial number).
	UUID   string `json:"uuid,omitempty"`
	Serial string `json:"serial,omitempty"`
	// BusID is the PCI bus id as the output prints it ("00000000:18:00.0",
	// or nccl-tests' "0x18").
	BusID string `json:"bus_id,omitempty"`
	// GUID is a NIC's node GUID ("0xa088c20300a1b2c3"); PortGUIDs its
	// ports'.
	GUID      string   `json:"guid,omitempty"`
	PortGUIDs []string `json:"port_guids,omitempty"`
	// Tests are the tests whose raw outputs show the device (set by
	// MergeHardware, not by plugins).
	Tests []string `json:"tests,omitempty"`
}

// Kinds of Device.
const (
	GPUDevice = "gpu"
	NICDevice = "nic"
)

// busKey is a PCI bus id as domain:bus:device in lower-case hex, each
// eight digits wide, whichever way the output prints it ("00000000:18:00.0"
// nvidia-smi, "0000:18:00" nccl-tests, "0x18" older nccl-tests: bus only),
// so that one GPU seen by two tools is one device; the id as printed when
// it reads as none of these.
func busKey(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	if b, ok := strings.CutPrefix(id, "0x"); ok {
		return hexWidth("0") + ":" + hexWidth(b) + ":" + hexWidth("0")
	}
	parts := strings.Split(strings.SplitN(id, ".", 2)[0], ":")
	if len(parts) != 3 {
		return id
	}
	for i := range parts {
		parts[i] = hexWidth(parts[i])
	}
	return strings.Join(parts, ":")
}

// hexWidth writes a hex number of a bus id eight digits wide, so that
// bus ids of any printed width compare equal and sort in bus order.
func hexWidth(h string) string {
	h = strings.TrimLeft(h, "0")
	if len(h) < 8 {
		h = strings.Repeat("0", 8-len(h)) + h
	}
	return h
}

// same says a and b are one device: one host and kind, and the same
// UUID, serial, GUID or bus id, the first that both show; devices that
// show none of them are one by their name.
func same(a, b Device) bool {
	if a.Host != b.Host || a.Kind != b.Kind {
		return false
	}
	for _, f := range []struct{ x, y string }{{a.UUID, b.UUID}, {a.Serial, b.Serial}, {a.GUID, b.GUID}, {busKey(a.BusID), busKey(b.BusID)}} {
		if f.x != "" && f.y != "" {
			return f.x == f.y
		}
	}
	return a.Name == b.Name
}

// String names the device in one line: "host gpu NAME uuid U serial S
// bus B" (the fields it has).
func (d Device) String() string {
	parts := []string{cmp.Or(d.Host, "(no host named)"), d.Kind}
	for _, f := range []struct{ k, v string }{{"", d.Name}, {"uuid", d.UUID}, {"serial", d.Serial}, {"bus", d.BusID}, {"guid", d.GUID}, {"ports", strings.Join(d.PortGUIDs, ",")}} {
		if f.v == "" {
			continue
		}
		if f.k == "" {
			parts = append(parts, fmt.Sprintf("%q", f.v))
		} else {
			parts = append(parts, f.k+" "+f.v)
		}
	}
	return strings.Join(parts, " ")
}

// StripHardware takes the HardwareInfo key out of p.Info and returns p
// without it and the devices it lists. A value that is no JSON list of
// Device is an error naming the key; p is returned without it either way.
func StripHardware(p Parsed) (Parsed, []Device, error) {
	v, ok := p.Info[HardwareInfo]
	if !ok {
		return p, nil, nil
	}
	info := make(map[string]string, len(p.Info)-1)
	for k, x := range p.Info {
		if k != HardwareInfo {
			info[k] = x
		}
	}
	if len(info) == 0 {
		info = nil
	}
	p.Info = info
	var ds []Device
	if err := json.Unmarshal([]byte(v), &ds); err != nil {
		return p, nil, fmt.Errorf("info %q: not a JSON list of devices: %w", HardwareInfo, err)
	}
	for i, d := range ds {
		if d.Kind != GPUDevice && d.Kind != NICDevice {
			return p, nil, fmt.Errorf("info %q: device %d: kind %q is neither %s nor %s", HardwareInfo, i, d.Kind, GPUDevice, NICDevice)
		}
	}
	return p, ds, nil
}

// HardwareValue is the Info value a plugin sets under HardwareInfo for
// devices ds: their JSON list; "" when there are none.
func HardwareValue(ds []Device) string {
	if len(ds) == 0 {
		return ""
	}
	data, err := json.Marshal(ds)
	if err != nil {
		return "" // a Device holds only strings: cannot happen
	}
	return string(data)
}

// MergeHardware adds the devices test's outputs show to list: a device
// already listed (same host and kind, and the same UUID, serial, GUID or
// bus id, the first that both show) gets the fields it lacked and test
// among its Tests. The list stays sorted by host, kind, bus id and key, so the same
// outputs give the same list whatever the order of the tests.
func MergeHardware(list []Device, test string, ds []Device) []Device {
	for _, d := range ds {
		d.Tests = nil
		i := slices.IndexFunc(list, func(x Device) bool { return same(x, d) })
		if i < 0 {
			d.Tests = []string{test}
			list = append(list, d)
			continue
		}
		x := &list[i]
		x.Name, x.UUID, x.Serial = cmp.Or(x.Name, d.Name), cmp.Or(x.UUID, d.UUID), cmp.Or(x.Serial, d.Serial)
		x.BusID, x.GUID = cmp.Or(x.BusID, d.BusID), cmp.Or(x.GUID, d.GUID)
		for _, g := range d.PortGUIDs {
			if !slices.Contains(x.PortGUIDs, g) {
				x.PortGUIDs = append(x.PortGUIDs, g)
			}
		}
		if !slices.Contains(x.Tests, test) {
			x.Tests = append(x.Tests, test)
			slices.Sort(x.Tests)
		}
	}
	slices.SortStableFunc(list, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Kind, b.Kind), cmp.Compare(busKey(a.BusID), busKey(b.BusID)),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.UUID, b.UUID), cmp.Compare(a.Serial, b.Serial), cmp.Compare(a.GUID, b.GUID))
	})
	return list
}
