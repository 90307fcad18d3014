package drain

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// A run whose health test found node B bad (two checks) and A and C good.
func healthRun(a, b, c string) *result.Run {
	run := &result.Run{Hosts: []string{a, b, c}, Tests: []result.Test{{Name: "health.node", Preflight: true, Status: result.Fail, Checks: []result.Check{
		{Name: "ECC", OK: true, Host: a},
		{Name: "ECC", OK: false, Host: b, Code: "GA-TEST-ECC", Message: "2 uncorrected volatile errors on GPU 3"},
		{Name: "PCIe", OK: false, Host: b, Code: "GA-TEST-PCIE", Message: "x8, want x16"},
		{Name: "ECC", OK: true, Host: c},
	}}, {Name: "nccl.all_reduce", Status: result.Skip}}}
	run.Finish()
	return run
}

func TestVerdictsOf(t *testing.T) {
	v := VerdictsOf(healthRun("a", "b", "c"))
	assert.DeepEqual(t, v.Passed, []string{"a", "c"})
	assert.Equal(t, len(v.Failed["b"]), 2)
	// A health test that could not run checked nothing: nothing passed.
	errored := &result.Run{Hosts: []string{"a"}, Tests: []result.Test{{Name: "health.node", Preflight: true, Status: result.Error}}}
	errored.Finish()
	assert.DeepEqual(t, VerdictsOf(errored).Passed, []string(nil))
	// Checks that name the ranks' pods, not the run's nodes (Kubernetes
	// without the node's name): the nodes are neither failed nor passed,
	// so the failing one is never marked passed and untainted.
	pods := healthRun("pod-a.svc", "pod-b.svc", "pod-c.svc")
	pods.Hosts = []string{"node-a", "node-b", "node-c"}
	v = VerdictsOf(pods)
	assert.DeepEqual(t, v.Passed, []string{"pod-a.svc", "pod-c.svc"})
	_, nodeB := v.Failed["node-b"]
	assert.Assert(t, !nodeB)
}

// The ClusterRole and binding of deploy/health-rbac.yaml.
func rbac(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	t.Helper()
	data, err := os.ReadFile("../../deploy/health-rbac.yaml")
	assert.NilError(t, err)
	docs := strings.Split(string(data), "\n---\n")
	assert.Equal(t, len(docs), 2)
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	assert.NilError(t, yaml.UnmarshalStrict([]byte(docs[0]), &role))
	assert.NilError(t, yaml.UnmarshalStrict([]byte(docs[1]), &binding))
	return &role, &binding
}

// On the testenv's kube-apiserver, as its gpuaccept-user bound to
// nothing but deploy/health-rbac.yaml's ClusterRole: the failed node is
// tainted NoSchedule with its codes in an annotation and labelled
// failed, the others labelled passed and left untainted, other taints
// kept; a second check that finds B healthy takes the taint and the
// annotations away. Without the binding the user may not.
func TestKubernetesRBAC(t *testing.T) {
	admin := testenv.Need(t, "GPUACCEPT_K8S_KUBECONFIG", "k8s")
	user := testenv.Need(t, "GPUACCEPT_K8S_USER_KUBECONFIG", "k8s")
	ctx := context.Background()
	ac, err := Dial(admin, "")
	assert.NilError(t, err)
	uc, err := Dial(user, "")
	assert.NilError(t, err)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	// Nodes of this test's own: the testenv's kwok nodes run other tests'
	// pods, which a taint would keep off.
	names := []string{"ga-health-a-" + id, "ga-health-b-" + id, "ga-health-c-" + id}
	other := corev1.Taint{Key: "example.com/maintenance", Value: "planned", Effect: corev1.TaintEffectPreferNoSchedule}
	for i, n := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if i == 1 {
			node.Spec.Taints = []corev1.Taint{other}
		}
		_, err := ac.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		assert.NilError(t, err)
		t.Cleanup(func() { _ = ac.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	run := healthRun(names[0], names[1], names[2])
	opts := Options{Taint: true, Label: true}

	_, err = Kubernetes(ctx, uc, VerdictsOf(run), opts)
	assert.Assert(t, apierrors.IsForbidden(errorsCause(err)), "without the binding: %v", err)

	role, binding := rbac(t)
	if _, err := ac.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		assert.NilError(t, err)
	}
	binding.Name += "-" + id
	_, err = ac.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	assert.NilError(t, err)
	t.Cleanup(func() {
		_ = ac.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	// The API server's RBAC cache takes the new binding a moment later
	// (seen: "cannot patch resource nodes" under load): wait until the
	// user may patch nodes, as the server itself answers.
	for i := 0; ; i++ {
		r, err := uc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes"}}}, metav1.CreateOptions{})
		assert.NilError(t, err)
		if r.Status.Allowed {
			break
		}
		assert.Assert(t, i < 100, "the binding gave no right to patch nodes in 10 s: %s", r.Status.Reason)
		time.Sleep(100 * time.Millisecond)
	}

	done, err := Kubernetes(ctx, uc, VerdictsOf(run), opts)
	assert.NilError(t, err)
	assert.DeepEqual(t, done, []string{
		"labelled " + names[1] + " gpuaccept.io/health=failed",
		"tainted " + names[1] + " gpuaccept.io/health=failed:NoSchedule (GA-TEST-ECC,GA-TEST-PCIE)",
		"labelled " + names[0] + " gpuaccept.io/health=passed",
		"labelled " + names[2] + " gpuaccept.io/health=passed",
	})
	ours := corev1.Taint{Key: TaintKey, Value: TaintValue, Effect: corev1.TaintEffectNoSchedule}
	want := map[string]struct {
		label  string
		taints []corev1.Taint
		code   string
	}{
		names[0]: {LabelPassed, nil, ""},
		names[1]: {LabelFailed, []corev1.Taint{other, ours}, "GA-TEST-ECC,GA-TEST-PCIE"},
		names[2]: {LabelPassed, nil, ""},
	}
	check := func(t *testing.T, c kubernetes.Interface) {
		t.Helper()
		for n, w := range want {
			node, err := c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			assert.NilError(t, err)
			assert.Equal(t, node.Labels[LabelKey], w.label, n)
			assert.Equal(t, node.Annotations[CodeAnnotation], w.code, n)
			var taints []corev1.Taint
			for _, tt := range node.Spec.Taints {
				if strings.HasPrefix(tt.Key, "node.kubernetes.io/") {
					// The node lifecycle controller's (not-ready): these
					// nodes have no kubelet. They are kept too.
					continue
				}
				taints = append(taints, corev1.Taint{Key: tt.Key, Value: tt.Value, Effect: tt.Effect})
			}
			assert.DeepEqual(t, taints, w.taints)
		}
	}
	check(t, ac)
	reason, _ := ac.CoreV1().Nodes().Get(ctx, names[1], metav1.GetOptions{})
	assert.Equal(t, reason.Annotations[ReasonAnnotation], "node "+names[1]+" failed health: GA-TEST-ECC 2 uncorrected volatile errors on GPU 3 (and 1 more check)")

	// Marked again, nothing changes; B healthy again is untainted, its
	// other taint kept.
	_, err = Kubernetes(ctx, uc, VerdictsOf(run), opts)
	assert.NilError(t, err)
	check(t, ac)
	// Healthy again: every node's checks hold (a node no check names
	// is not marked passed: VerdictsOf).
	var hold []result.Check
	for _, n := range names {
		hold = append(hold, result.Check{Name: "ECC", OK: true, Host: n})
	}
	healed := &result.Run{Hosts: names, Tests: []result.Test{{Name: "health.node", Preflight: true, Status: result.Pass, Checks: hold}}}
	healed.Finish()
	done, err = Kubernetes(ctx, uc, VerdictsOf(healed), opts)
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(strings.Join(done, "\n"), "untainted "+names[1]+" gpuaccept.io/health"), "%q", done)
	want[names[1]] = struct {
		label  string
		taints []corev1.Taint
		code   string
	}{LabelPassed, []corev1.Taint{other}, ""}
	check(t, ac)
}

// errorsCause is the first error errors.Join joined (the first node's).
func errorsCause(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		err = j.Unwrap()[0]
	}
	return err
}

// Mark without a cluster: a kubeconfig that cannot be read is the error,
// and nothing is written.
func TestMarkNoCluster(t *testing.T) {
	var b strings.Builder
	missing := t.TempDir() + "/no-kubeconfig"
	err := Mark(context.Background(), missing, "", &result.Run{}, Options{Taint: true}, &b)
	assert.ErrorContains(t, err, "no-kubeconfig")
	assert.Equal(t, b.String(), "")
}
