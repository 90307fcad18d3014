package sku

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kubernetes is the SKU file's "kubernetes:" section: what the pods of a
// test need on this hardware, as the k8s launcher puts it on every pod it
// creates. It is data, not code, because it differs per cluster and vendor:
// the seeds ask for nvidia.com/gpu plus rdma/... or nvidia.com/mlnxnics, a
// Multus or GKE multi-network annotation, a large /dev/shm and IPC_LOCK.
// Values are kept as the file gives them; the launcher checks Kubernetes
// syntax (quantities, label keys) and names Line in its errors.
//
//	kubernetes:
//	  image: nvcr.io/nvidia/pytorch:25.01-py3
//	  gpu_resource: nvidia.com/gpu        # count = --gpus-per-node
//	  resources: {nvidia.com/mlnxnics: "4"}
//	  annotations: {k8s.v1.cni.cncf.io/networks: "sriov-ib0,sriov-ib1"}
//	  shm_size: 64Gi
//	  ipc_lock: true
//	  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
//	  node_selector: {cloud.google.com/gke-accelerator: nvidia-gb200}
//	  queue: team-a-gpu
type Kubernetes struct {
	// Image is the container image holding the benchmarks, mpirun and sshd
	// (--image overrides it).
	Image string `yaml:"image"`
	// GPUResource is the extended resource name of one GPU
	// ("nvidia.com/gpu", "amd.com/gpu"); each pod asks for as many as the
	// run's GPUs per node. Empty: no GPU resource is requested.
	GPUResource string `yaml:"gpu_resource"`
	// Resources are further per-pod resources, name to quantity, set as
	// both request and limit: RDMA devices ("rdma/rdma_shared_device_a": "1",
	// "nvidia.com/mlnxnics": "4"), "cpu", "memory", ...
	Resources map[string]string `yaml:"resources"`
	// Annotations go on every pod: network attachments
	// ("k8s.v1.cni.cncf.io/networks" for Multus,
	// "networking.gke.io/interfaces" for GKE multi-network), ...
	Annotations map[string]string `yaml:"annotations"`
	// Labels go on every pod (and are not used to select them).
	Labels map[string]string `yaml:"labels"`
	// ShmSize is the size of /dev/shm, a memory-backed emptyDir, as a
	// Kubernetes quantity ("64Gi"); empty leaves the runtime's default
	// (64 MiB on most, far too small for NCCL).
	ShmSize string `yaml:"shm_size"`
	// IPCLock adds the IPC_LOCK capability, which RDMA needs to pin memory.
	IPCLock bool `yaml:"ipc_lock"`
	// Privileged runs the containers privileged (some RDMA setups need it).
	Privileged bool `yaml:"privileged"`
	// HostNetwork puts the pods on their nodes' network namespace.
	HostNetwork bool `yaml:"host_network"`
	// Tolerations let the pods onto tainted GPU nodes.
	Tolerations []*Toleration `yaml:"tolerations"`
	// NodeSelector restricts the pods to nodes with these labels.
	NodeSelector map[string]string `yaml:"node_selector"`
	// ServiceAccount is the pods' service account; empty: the namespace's
	// default.
	ServiceAccount string `yaml:"service_account"`
	// PriorityClass is the pods' priority class name.
	PriorityClass string `yaml:"priority_class"`
	// Queue is the Kueue LocalQueue (label kueue.x-k8s.io/queue-name) or,
	// for Volcano, the Volcano queue (--k8s-queue overrides it).
	Queue string `yaml:"queue"`
	// Env is added to every container's environment (NCCL_IB_HCA,
	// NCCL_SOCKET_IFNAME, ...); the plan's own variables win.
	Env map[string]string `yaml:"env"`
	// Line is the section's line in the SKU file, for messages.
	Line int `yaml:"-"`
	// Lines are the lines of the section's fields, by key ("shm_size"),
	// and of the entries of its maps, by key and entry
	// ("resources.nvidia.com/gpu"); see LineOf.
	Lines map[string]int `yaml:"-"`
}

// LineOf is the line of field ("shm_size", or "resources.NAME" for one
// entry of a map), for messages: the field's own line when the file gives
// it, else its map's, else the section's.
func (k *Kubernetes) LineOf(field string) int {
	if l := k.Lines[field]; l > 0 {
		return l
	}
	if m, _, ok := strings.Cut(field, "."); ok && k.Lines[m] > 0 {
		return k.Lines[m]
	}
	return k.Line
}

// Toleration is one pod toleration, as Kubernetes spells it.
type Toleration struct {
	Key string `yaml:"key"`
	// Operator is "Exists" or "Equal" (the default when Value is set).
	Operator string `yaml:"operator"`
	Value    string `yaml:"value"`
	// Effect is "NoSchedule", "PreferNoSchedule", "NoExecute" or empty
	// (all effects).
	Effect string `yaml:"effect"`
	// Seconds bounds how long a NoExecute taint is tolerated; nil: forever.
	Seconds *int64 `yaml:"toleration_seconds"`
	Line    int    `yaml:"-"`
}

// UnmarshalYAML reads the section strictly (a misspelt key is an error with
// its line) and records its line.
func (k *Kubernetes) UnmarshalYAML(n *yaml.Node) error {
	type raw Kubernetes
	if err := strictDecode(n, (*raw)(k)); err != nil {
		return err
	}
	k.Line = n.Line
	k.Lines = map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, v := n.Content[i], n.Content[i+1]
		k.Lines[key.Value] = key.Line
		if v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				k.Lines[key.Value+"."+v.Content[j].Value] = v.Content[j].Line
			}
		}
	}
	return asTypeError(k.validate())
}

// UnmarshalYAML reads a toleration strictly and records its line.
func (t *Toleration) UnmarshalYAML(n *yaml.Node) error {
	type raw Toleration
	if err := strictDecode(n, (*raw)(t)); err != nil {
		return err
	}
	t.Line = n.Line
	return nil
}

// validate checks what needs no Kubernetes library: enumerations and
// empty names.
func (k *Kubernetes) validate() error {
	for i, t := range k.Tolerations {
		if t == nil {
			return problemAt(k.Line, "kubernetes.tolerations", "entry %d is empty", i+1)
		}
		switch t.Operator {
		case "", "Equal", "Exists":
		default:
			return problemAt(t.Line, "kubernetes.tolerations.operator", "%q is not Equal or Exists", t.Operator)
		}
		if t.Operator == "Exists" && t.Value != "" {
			return problemAt(t.Line, "kubernetes.tolerations.value", "must be empty with operator Exists")
		}
		switch t.Effect {
		case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			return problemAt(t.Line, "kubernetes.tolerations.effect", "%q is not NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
		}
	}
	for _, m := range []struct {
		field string
		kv    map[string]string
	}{{"resources", k.Resources}, {"annotations", k.Annotations}, {"labels", k.Labels}, {"node_selector", k.NodeSelector}, {"env", k.Env}} {
		for key := range m.kv {
			if strings.TrimSpace(key) == "" {
				return problemAt(k.LineOf(m.field), "kubernetes."+m.field, "empty name")
			}
		}
	}
	return nil
}
