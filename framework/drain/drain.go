// Package drain tells a scheduler which nodes a health check failed, so
// that it stops placing work on them. Slurm needs nothing of gpuaccept
// but an exit code (HealthCheckProgram, Prolog and Epilog drain a node
// whose program exits non-zero: gpuaccept health --slurm-check); on
// Kubernetes this package taints and labels the Node objects, opt-in
// (gpuaccept health --taint-on-fail, --label), with only get and patch
// on nodes (deploy/health-rbac.yaml).
package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The keys gpuaccept sets on a Node.
const (
	// TaintKey is the taint of a node that failed health, with value
	// TaintValue and effect NoSchedule: pods that do not tolerate it are
	// not scheduled there (running pods stay).
	TaintKey   = "gpuaccept.io/health"
	TaintValue = "failed"
	// LabelKey is the label of a checked node: LabelFailed or
	// LabelPassed, for node selectors and kubectl get nodes -l.
	LabelKey    = "gpuaccept.io/health"
	LabelFailed = "failed"
	LabelPassed = "passed"
	// CodeAnnotation holds the fault codes of a failed node (comma-
	// separated, framework/faults); ReasonAnnotation the first failed
	// check's reason (result.PreflightSkip). A node that passes has both
	// removed.
	CodeAnnotation   = "gpuaccept.io/health-code"
	ReasonAnnotation = "gpuaccept.io/health-reason"
)

// Options say what to mark.
type Options struct {
	// Taint taints each failed node (TaintKey) and, on a node that
	// passed, removes that taint if gpuaccept set it before.
	Taint bool
	// Label labels every checked node LabelFailed or LabelPassed.
	Label bool
}

// Dial builds a client from a kubeconfig file and context ("" for the
// defaults: $KUBECONFIG, ~/.kube/config, in-cluster).
func Dial(kubeconfig, kubeContext string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("mark nodes: load kubeconfig (--kubeconfig %q, --context %q): %w", kubeconfig, kubeContext, err)
	}
	rc.UserAgent = "gpuaccept-health"
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("mark nodes: client for %s: %w", rc.Host, err)
	}
	return c, nil
}

// Verdicts are the nodes a run's preflight tests checked: Failed maps a
// bad node to its failed checks (result.Run.BadNodes, in order); Passed
// are the other nodes a check named (none of them failed), sorted. A node whose checks could not be made (a warning)
// counts as passed: it is no known fault.
type Verdicts struct {
	Failed map[string][]result.BadNode
	Passed []string
}

// VerdictsOf reads the verdicts of run's nodes. A run whose preflight
// tests errored without naming a node has no passed node: what was not
// checked cannot pass.
func VerdictsOf(run *result.Run) Verdicts {
	v := Verdicts{Failed: map[string][]result.BadNode{}}
	for _, b := range run.BadNodes {
		v.Failed[b.Host] = append(v.Failed[b.Host], b)
	}
	checked := map[string]bool{}
	for _, t := range run.Tests {
		if !t.Preflight {
			continue
		}
		if t.Status == result.Error && len(t.Checks) == 0 {
			return Verdicts{Failed: v.Failed}
		}
		for _, c := range t.Checks {
			if c.Host != "" {
				checked[c.Host] = true
			}
		}
	}
	// Only a node a check named passes: the run's hosts are not enough.
	// Under Kubernetes the checks name the ranks' pods (their DNS names)
	// unless the launcher gives the node's name; marking the run's hosts
	// passed would mark a node passed whose checks went under another
	// name, its failure untainted.
	for h := range checked {
		if _, bad := v.Failed[h]; !bad {
			v.Passed = append(v.Passed, h)
		}
	}
	sort.Strings(v.Passed)
	return v
}

// Mark taints and labels, as o asks, the Kubernetes nodes a health run
// judged (VerdictsOf, Kubernetes) through the client of kubeconfig and
// kubeContext (Dial), writing each node marked to w as a line. Errors:
// the client cannot be built, or the nodes it could not mark.
func Mark(ctx context.Context, kubeconfig, kubeContext string, run *result.Run, o Options, w io.Writer) error {
	client, err := Dial(kubeconfig, kubeContext)
	if err != nil {
		return err
	}
	done, err := Kubernetes(ctx, client, VerdictsOf(run), o)
	for _, d := range done {
		fmt.Fprintln(w, d)
	}
	return err
}

// Kubernetes marks the nodes of v as o asks, each node by its name (the
// host the check named must be the Node's name). It returns one line per
// node marked ("tainted node2 gpuaccept.io/health=failed:NoSchedule
// (GA-GPU-ECC)", "labelled node1 gpuaccept.io/health=passed") and an
// error naming every node it could not mark (not found, forbidden), after
// trying them all.
func Kubernetes(ctx context.Context, c kubernetes.Interface, v Verdicts, o Options) ([]string, error) {
	if !o.Taint && !o.Label {
		return nil, nil
	}
	var done []string
	var errs []error
	failed := make([]string, 0, len(v.Failed))
	for h := range v.Failed {
		failed = append(failed, h)
	}
	sort.Strings(failed)
	for _, h := range failed {
		msgs, err := markFailed(ctx, c, h, v.Failed[h], o)
		done = append(done, msgs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range v.Passed {
		msgs, err := markPassed(ctx, c, h, o)
		done = append(done, msgs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return done, errors.Join(errs...)
}

// maxConflicts bounds the retries of a taint update that raced another
// writer of the node (the kubelet, the node lifecycle controller).
const maxConflicts = 5

func markFailed(ctx context.Context, c kubernetes.Interface, node string, bad []result.BadNode, o Options) ([]string, error) {
	var codes []string
	seen := map[string]bool{}
	for _, b := range bad {
		if b.Code != "" && !seen[b.Code] {
			seen[b.Code] = true
			codes = append(codes, b.Code)
		}
	}
	code := strings.Join(codes, ",")
	meta := map[string]any{"annotations": map[string]any{CodeAnnotation: code, ReasonAnnotation: result.PreflightSkip(bad)}}
	if o.Label {
		meta["labels"] = map[string]any{LabelKey: LabelFailed}
	}
	if err := mergePatch(ctx, c, node, meta); err != nil {
		return nil, err
	}
	var done []string
	if o.Label {
		done = append(done, fmt.Sprintf("labelled %s %s=%s", node, LabelKey, LabelFailed))
	}
	if o.Taint {
		taint := corev1.Taint{Key: TaintKey, Value: TaintValue, Effect: corev1.TaintEffectNoSchedule}
		if err := setTaints(ctx, c, node, func(ts []corev1.Taint) []corev1.Taint {
			return append(withoutOurs(ts), taint)
		}); err != nil {
			return done, err
		}
		done = append(done, fmt.Sprintf("tainted %s %s=%s:%s (%s)", node, TaintKey, TaintValue, corev1.TaintEffectNoSchedule, code))
	}
	return done, nil
}

func markPassed(ctx context.Context, c kubernetes.Interface, node string, o Options) ([]string, error) {
	// null removes a key in a merge patch: a node that passes now keeps
	// no fault of an earlier check.
	meta := map[string]any{"annotations": map[string]any{CodeAnnotation: nil, ReasonAnnotation: nil}}
	if o.Label {
		meta["labels"] = map[string]any{LabelKey: LabelPassed}
	}
	if err := mergePatch(ctx, c, node, meta); err != nil {
		return nil, err
	}
	var done []string
	if o.Label {
		done = append(done, fmt.Sprintf("labelled %s %s=%s", node, LabelKey, LabelPassed))
	}
	if o.Taint {
		removed := false
		if err := setTaints(ctx, c, node, func(ts []corev1.Taint) []corev1.Taint {
			kept := withoutOurs(ts)
			removed = len(kept) != len(ts)
			return kept
		}); err != nil {
			return done, err
		}
		if removed {
			done = append(done, fmt.Sprintf("untainted %s %s", node, TaintKey))
		}
	}
	return done, nil
}

func mergePatch(ctx context.Context, c kubernetes.Interface, node string, meta map[string]any) error {
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return fmt.Errorf("node %s: patch: %w", node, err)
	}
	if _, err := c.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "gpuaccept"}); err != nil {
		return fmt.Errorf("node %s: label and annotate: %w", node, err)
	}
	return nil
}

// setTaints replaces the node's taints with edit's answer. Taints are a
// list a merge patch replaces whole, so the patch tests the
// resourceVersion it was made from: a taint another writer added in
// between is not lost, the edit is made again on the new node.
func setTaints(ctx context.Context, c kubernetes.Interface, node string, edit func([]corev1.Taint) []corev1.Taint) error {
	for i := 0; ; i++ {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("node %s: read taints: %w", node, err)
		}
		want := edit(append([]corev1.Taint(nil), n.Spec.Taints...))
		if len(want) == len(n.Spec.Taints) && sameTaints(want, n.Spec.Taints) {
			return nil
		}
		ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": n.ResourceVersion}}
		if n.Spec.Taints == nil {
			ops = append(ops, map[string]any{"op": "add", "path": "/spec/taints", "value": want})
		} else {
			ops = append(ops, map[string]any{"op": "replace", "path": "/spec/taints", "value": want})
		}
		body, err := json.Marshal(ops)
		if err != nil {
			return fmt.Errorf("node %s: taint: %w", node, err)
		}
		_, err = c.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: "gpuaccept"})
		if err == nil {
			return nil
		}
		// A failed test op is answered 422 (Invalid) or 409 (Conflict).
		if i < maxConflicts && (apierrors.IsConflict(err) || apierrors.IsInvalid(err)) {
			continue
		}
		return fmt.Errorf("node %s: taint: %w", node, err)
	}
}

func withoutOurs(ts []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(ts))
	for _, t := range ts {
		if t.Key != TaintKey {
			out = append(out, t)
		}
	}
	return out
}

func sameTaints(a, b []corev1.Taint) bool {
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Effect != b[i].Effect {
			return false
		}
	}
	return true
}
