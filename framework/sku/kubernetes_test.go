package sku

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

const k8sBase = `sku: t
gpus_per_node: 4
`

func TestKubernetesSection(t *testing.T) {
	s, err := Parse([]byte(k8sBase+`kubernetes:
  image: img:1
  gpu_resource: amd.com/gpu
  resources: {rdma/rdma_shared_device_a: "1"}
  annotations: {k8s.v1.cni.cncf.io/networks: "a,b"}
  shm_size: 64Gi
  ipc_lock: true
  tolerations:
    - {key: amd.com/gpu, operator: Exists, effect: NoSchedule}
  node_selector: {pool: mi355x}
  queue: q
`), "t.yaml")
	assert.NilError(t, err)
	k := s.Kubernetes
	assert.Assert(t, k != nil)
	assert.Equal(t, k.Image, "img:1")
	assert.Equal(t, k.GPUResource, "amd.com/gpu")
	assert.Equal(t, k.Resources["rdma/rdma_shared_device_a"], "1")
	assert.Equal(t, k.ShmSize, "64Gi")
	assert.Equal(t, k.IPCLock, true)
	assert.Equal(t, k.Line, 4)
	assert.Equal(t, len(k.Tolerations), 1)
	assert.Equal(t, k.Tolerations[0].Line, 11)
	assert.Equal(t, k.Tolerations[0].Operator, "Exists")

	s, err = Parse([]byte(k8sBase), "t.yaml")
	assert.NilError(t, err)
	assert.Assert(t, s.Kubernetes == nil)
}

func TestKubernetesSectionErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"misspelt key", "kubernetes:\n  image: i\n  shm: 1Gi\n", `t.yaml: line 5: field "shm" is not known here`},
		{"misspelt toleration key", "kubernetes:\n  tolerations:\n    - {key: a, efect: NoSchedule}\n", `t.yaml: line 5: field "efect" is not known here`},
		{"bad operator", "kubernetes:\n  tolerations:\n    - {key: a, operator: In}\n", `t.yaml: line 5: field kubernetes.tolerations.operator: "In" is not Equal or Exists`},
		{"bad effect", "kubernetes:\n  tolerations:\n    - {key: a, effect: Never}\n", `line 5: field kubernetes.tolerations.effect`},
		{"exists with value", "kubernetes:\n  tolerations:\n    - {key: a, operator: Exists, value: x}\n", "must be empty with operator Exists"},
		{"empty toleration", "kubernetes:\n  tolerations:\n    -\n", "entry 1 is empty"},
		{"not a mapping", "kubernetes: yes\n", "t.yaml: line 3: want a mapping"},
		{"wrong type", "kubernetes:\n  ipc_lock: sure\n", "t.yaml: line 4"},
		{"empty resource name", "kubernetes:\n  resources: {\"\": \"1\"}\n", "field kubernetes.resources: empty name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(k8sBase+c.yaml), "t.yaml")
			assert.ErrorContains(t, err, c.want)
			assert.Assert(t, strings.HasPrefix(err.Error(), "t.yaml: "), err.Error())
		})
	}
}

// The kubernetes section never panics the SKU parser, whatever it holds.
func FuzzKubernetesSection(f *testing.F) {
	f.Add("kubernetes:\n  image: i\n  resources: {a/b: \"1\"}\n  tolerations:\n    - {key: a, operator: Exists}\n")
	f.Add("kubernetes:\n  tolerations:\n    -\n    - {}\n")
	f.Add("kubernetes: []\n")
	f.Add("kubernetes:\n  tolerations: {a: b}\n  env: [x]\n")
	f.Fuzz(func(t *testing.T, section string) {
		s, err := Parse([]byte(k8sBase+section), "f.yaml")
		if err == nil && s.Kubernetes != nil {
			for _, tol := range s.Kubernetes.Tolerations {
				if tol == nil {
					t.Fatal("nil toleration accepted")
				}
			}
		}
	})
}
