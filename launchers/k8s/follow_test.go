package k8s

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podWith(status corev1.PodStatus) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-0"}, Status: status}
}

func waiting(reason, msg string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}
}

// Status texts below are the kubelet's, as kubectl describe shows them.
func TestPodProblem(t *testing.T) {
	cases := []struct {
		name   string
		status corev1.PodStatus
		want   string // empty: no problem
	}{
		{"running", corev1.PodStatus{Phase: corev1.PodRunning}, ""},
		{"pulling is not yet a problem", waiting("ErrImagePull", "rpc error: code = NotFound"), ""},
		{"image pull back-off", waiting("ImagePullBackOff", `Back-off pulling image "nvcr.io/nvidia/pytorch:99.99-py3"`),
			`pod p-0 container main: ImagePullBackOff: Back-off pulling image "nvcr.io/nvidia/pytorch:99.99-py3"`},
		{"bad config", waiting("CreateContainerConfigError", `secret "x" not found`), `CreateContainerConfigError: secret "x" not found`},
		{"oom", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}},
			"pod p-0 container main: OOMKilled (exit 137)"},
		{"evicted", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."},
			"pod p-0 failed: Evicted: The node was low on resource: memory."},
		{"plain failure is an exit status, not a problem", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := podProblem(podWith(c.status))
			if c.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestFollowerDone(t *testing.T) {
	pod := func(name, role string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelRole: role}}, Status: corev1.PodStatus{Phase: phase}}
	}
	indexed := func(name, idx string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"batch.kubernetes.io/job-completion-index": idx}}, Status: corev1.PodStatus{Phase: phase}}
	}
	cases := []struct {
		name string
		want int
		pods []*corev1.Pod
		seen int // extra names seen (deleted pods)
		done bool
	}{
		{"nothing yet", 2, nil, 0, false},
		{"lead running", 2, []*corev1.Pod{indexed("a", "0", corev1.PodRunning), indexed("b", "1", corev1.PodRunning)}, 0, false},
		{"worker still up", 2, []*corev1.Pod{indexed("a", "0", corev1.PodSucceeded), indexed("b", "1", corev1.PodRunning)}, 0, false},
		{"all ended", 2, []*corev1.Pod{indexed("a", "0", corev1.PodSucceeded), indexed("b", "1", corev1.PodSucceeded)}, 0, true},
		{"lead failed", 2, []*corev1.Pod{indexed("a", "0", corev1.PodFailed), indexed("b", "1", corev1.PodRunning)}, 0, true},
		{"worker not created yet", 2, []*corev1.Pod{indexed("a", "0", corev1.PodSucceeded)}, 0, false},
		{"workers removed by their controller", 3, []*corev1.Pod{pod("l", "lead", corev1.PodSucceeded)}, 2, true},
		{"worker alone", 1, []*corev1.Pod{pod("w", "worker", corev1.PodSucceeded)}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &follower{w: &workload{pods: c.want}, pods: map[string]*corev1.Pod{}, seen: map[string]bool{}}
			for _, p := range c.pods {
				f.pods[p.Name], f.seen[p.Name] = p, true
			}
			for i := 0; i < c.seen; i++ {
				f.seen[strings.Repeat("x", i+1)] = true
			}
			assert.Equal(t, f.done(), c.done)
		})
	}
}
