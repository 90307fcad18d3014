package k8s

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cleanOrder is the order Clean deletes kinds in: workloads first (their
// pods go with them, foreground), then what they used.
var cleanOrder = []schema.GroupVersionResource{gvrJobSet, gvrVolcano, gvrMPIJob, gvrJob, gvrPod, gvrComputeDomain, gvrService, gvrSecret}

// CleanOptions select the cluster and namespace, as the launcher's flags do.
type CleanOptions struct {
	Kubeconfig, Context, Namespace string
	// Timeout bounds the whole cleanup; zero means 2 minutes.
	Timeout time.Duration
}

// Clean deletes every object labelled with run id runID in the namespace
// (workloads with foreground propagation, so their pods go first) and
// waits until they are gone. Kinds the cluster does not serve (no JobSet
// CRD, ...) are skipped. It returns how many objects it deleted.
func Clean(ctx context.Context, o CleanOptions, runID string) (int, error) {
	if runID == "" || strings.ContainsAny(runID, ",=! ") {
		return 0, fmt.Errorf("clean: run id %q: want the id gpuaccept printed (ga-...)", runID)
	}
	c, err := dial(o.Kubeconfig, o.Context, o.Namespace)
	if err != nil {
		return 0, err
	}
	return clean(ctx, c, runID, o.Timeout)
}

func clean(ctx context.Context, c *clients, runID string, timeout time.Duration) (int, error) {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sel := LabelRun + "=" + runID
	fg := metav1.DeletePropagationForeground
	n := 0
	var errs []string
	var served []schema.GroupVersionResource
	for _, gvr := range cleanOrder {
		ri := c.dyn.Resource(gvr).Namespace(c.namespace)
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // kind not served by this cluster
			}
			errs = append(errs, fmt.Sprintf("list %s: %v", gvr.Resource, err))
			continue
		}
		served = append(served, gvr)
		for _, it := range list.Items {
			err := ri.Delete(ctx, it.GetName(), metav1.DeleteOptions{PropagationPolicy: &fg})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Sprintf("delete %s %s: %v", it.GetKind(), it.GetName(), err))
				continue
			}
			n++
		}
	}
	for _, gvr := range served {
		if err := waitGone(ctx, c, gvr, c.namespace, "", sel); err != nil {
			errs = append(errs, fmt.Sprintf("wait for %s to go: %v", gvr.Resource, err))
		}
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("clean run %s in namespace %s: %s", runID, c.namespace, strings.Join(errs, "; "))
	}
	return n, nil
}
