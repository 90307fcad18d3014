package k8s

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Commands implements launch.Launcher: the exact manifests Launch would
// create, one YAML stream per step (the first also holding the run's ssh
// Secret, whose key is made at launch). Object names carry this launcher's
// run id and the test's number, counted as Launch counts them.
func (l *Launcher) Commands(req launch.Request) ([]string, error) {
	l.mu.Lock()
	l.n++
	prefix := fmt.Sprintf("%s-%d", l.RunID, l.n)
	l.mu.Unlock()
	r, err := l.render(req, prefix, l.namespace(), nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, w := range r.steps {
		objs := w.objects
		if i == 0 && r.secret != nil {
			objs = append([]*unstructured.Unstructured{r.secret}, objs...)
		}
		y, err := YAML(objs)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("# step %s: %s\n%s", w.step.Name, w.command, y))
	}
	return out, nil
}

// Launch implements launch.Launcher. Steps run in the order and overlap
// of launch.Sequence; a step's ReadyMarker is looked for in its lead pod's
// log. Every object created is deleted (foreground propagation: the pods go
// before their Job) before Launch returns, whether the steps ended, timed
// out or were cancelled.
func (l *Launcher) Launch(ctx context.Context, req launch.Request) ([]plan.Output, error) {
	c, err := l.connect()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.n++
	prefix := fmt.Sprintf("%s-%d", l.RunID, l.n)
	l.mu.Unlock()
	var keys map[string][]byte
	if needsKeys(req, l.cfg.Flavor) {
		if keys, err = newSSHKeys("gpuaccept " + l.RunID); err != nil {
			return nil, err
		}
	}
	r, err := l.render(req, prefix, c.namespace, keys)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(l.progress(), "k8s: %s: run %s in namespace %s (leftovers: gpuaccept clean --run %s --namespace %s)\n",
		req.Test, l.RunID, c.namespace, l.RunID, c.namespace)
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	var mu sync.Mutex
	var created []*unstructured.Unstructured
	defer func() {
		// Cleanup runs on its own clock: ctx may be what ended.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		mu.Lock()
		objs := append([]*unstructured.Unstructured(nil), created...)
		mu.Unlock()
		if derr := deleteAll(dctx, c, objs); derr != nil {
			fmt.Fprintf(l.progress(), "k8s: %s: cleanup: %v (gpuaccept clean --run %s removes what is left)\n", req.Test, derr, l.RunID)
		}
	}()
	create := func(o *unstructured.Unstructured) error {
		gvr, err := gvrOf(o)
		if err != nil {
			return err
		}
		got, err := c.dyn.Resource(gvr).Namespace(c.namespace).Create(ctx, o, metav1.CreateOptions{FieldManager: "gpuaccept"})
		if err != nil {
			return fmt.Errorf("create %s %s in namespace %s: %w", o.GetKind(), o.GetName(), c.namespace, err)
		}
		mu.Lock()
		created = append(created, got)
		mu.Unlock()
		return nil
	}
	outs := make([]plan.Output, len(r.steps))
	for i, w := range r.steps {
		outs[i] = plan.Output{Step: w.step.Name, Role: w.step.Role, ExitCode: -1, Command: w.command}
	}
	if r.secret != nil {
		if err := create(r.secret); err != nil {
			for i := range outs {
				outs[i].LaunchError = err.Error()
			}
			return outs, nil
		}
	}
	steps := make([]plan.Step, len(r.steps))
	for i, w := range r.steps {
		steps[i] = w.step
	}
	// The test's timeout is ctx's already: it bounds the Secret too.
	return launch.Sequence{Steps: steps,
		Run: func(ctx context.Context, i int, ready func()) plan.Output {
			return l.runStep(ctx, c, req, r.steps[i], create, ready, outs[i])
		},
		NotStarted: func(i int, why string) plan.Output {
			o := outs[i]
			o.LaunchError = why
			return o
		},
	}.Launch(ctx), nil
}

func needsKeys(req launch.Request, flavor string) bool {
	for _, s := range req.Plan.Steps {
		if nodesOf(s) > 1 && flavor != FlavorMPIJob {
			return true
		}
	}
	return false
}

// runStep creates a step's objects, follows its pods to their end, and
// collects the logs; ready is called when the step's ReadyMarker shows.
func (l *Launcher) runStep(ctx context.Context, c *clients, req launch.Request, w *workload, create func(*unstructured.Unstructured) error,
	ready func(), out plan.Output) plan.Output {
	s := w.step
	logw, logPath, err := launch.CreateLog(req, s.Name)
	if err != nil {
		out.LaunchError = err.Error()
		return out
	}
	out.Log = logPath
	defer logw.Close()
	fail := func(msg string) plan.Output {
		out.LaunchError = msg
		fmt.Fprintf(logw, "gpuaccept: step %s: %s\n", s.Name, msg)
		return out
	}
	for _, o := range w.objects {
		if err := create(o); err != nil {
			return fail(err.Error())
		}
	}
	if s.ReadyMarker != "" {
		// The marker watch ends with the step: a followed stream of a
		// pod that ended without the marker may never close by itself.
		mctx, stopMarker := context.WithCancel(ctx)
		defer stopMarker()
		go func() { _ = l.waitMarker(mctx, c, w, ready) }()
	}
	f := &follower{l: l, w: w, pods: map[string]*corev1.Pod{}, start: time.Now()}
	ferr := f.follow(ctx, c)
	lead := f.lead()
	if lead != nil {
		out.Host = lead.Spec.NodeName
		if code, ok := exitCode(lead); ok {
			out.ExitCode = code
		}
	}
	// Logs are read once the pods have ended (or been given up on): a
	// followed stream may never end (kwok's never do), a finished one
	// always does.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var leadLog io.Writer = logw
	if s.ReadyMarker != "" {
		// A pod may end before the followed log showed its marker: the
		// marker in the log read at its end counts all the same.
		leadLog = &launch.MarkerWriter{W: logw, Marker: []byte(s.ReadyMarker), Found: ready}
	}
	if lerr := l.collectLogs(lctx, c, req, w, f.sorted(), lead, leadLog, &out); lerr != nil && ferr == nil {
		ferr = lerr
	}
	if ferr != nil {
		why := ferr.Error()
		if errors.Is(ferr, context.DeadlineExceeded) {
			why = fmt.Sprintf("timed out after %s waiting for its pods (%s); everything created is deleted", time.Since(f.start).Round(time.Millisecond), f.summary())
		} else if errors.Is(ferr, context.Canceled) {
			why = launch.StopReason(ctx, f.start) + "; everything created is deleted"
		}
		out.ExitCode = -1
		return fail(why)
	}
	return out
}

// workerGrace is how long worker pods may outlive the lead.
const workerGrace = 30 * time.Second

// follower tracks the pods of one step through a watch.
type follower struct {
	l     *Launcher
	w     *workload
	pods  map[string]*corev1.Pod
	start time.Time
	// seen holds every pod name observed, deleted ones included.
	seen map[string]bool
}

func (f *follower) sorted() []*corev1.Pod {
	names := make([]string, 0, len(f.pods))
	for n := range f.pods {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*corev1.Pod, len(names))
	for i, n := range names {
		out[i] = f.pods[n]
	}
	return out
}

// lead is the pod whose log is the step's: labelled lead, or index 0 of
// an Indexed Job.
func (f *follower) lead() *corev1.Pod {
	for _, p := range f.sorted() {
		if isLead(p) {
			return p
		}
	}
	return nil
}

func isLead(p *corev1.Pod) bool {
	if r, ok := p.Labels[LabelRole]; ok {
		return r == "lead"
	}
	idx, ok := p.Labels["batch.kubernetes.io/job-completion-index"]
	if !ok {
		idx, ok = p.Annotations["batch.kubernetes.io/job-completion-index"]
	}
	return ok && idx == "0"
}

func (f *follower) summary() string {
	if len(f.pods) == 0 {
		return "no pod was created: a quota, a suspended Job (Kueue) or a missing controller for this flavor"
	}
	var parts []string
	for _, p := range f.sorted() {
		parts = append(parts, fmt.Sprintf("%s %s", p.Name, p.Status.Phase))
	}
	return strings.Join(parts, ", ")
}

func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// follow watches the step's pods until the lead has ended and the workers
// with it, or a pod cannot run. It returns nil when the pods ended (even
// with a failing exit status), else why they could not.
func (f *follower) follow(ctx context.Context, c *clients) error {
	f.seen = map[string]bool{}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = f.w.selector
			return c.core.CoreV1().Pods(c.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = f.w.selector
			return c.core.CoreV1().Pods(c.namespace).Watch(ctx, o)
		},
	}
	// A pod that stays unschedulable sends no further events, so a timer
	// (not a poll of the API) ends the wait after PendingTimeout.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var pendErr error
	var graceOver bool
	var grace *time.Timer
	timers := map[string]*time.Timer{}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, t := range timers {
			t.Stop()
		}
		if grace != nil {
			grace.Stop()
		}
	}()
	// Workers end when the lead tells them; should that word be lost, they
	// are given workerGrace after the lead, then left to the cleanup.
	finished := func() bool {
		if f.done() {
			return true
		}
		if lead := f.lead(); lead != nil && ended(lead) && grace == nil {
			grace = time.AfterFunc(workerGrace, func() {
				mu.Lock()
				graceOver = true
				mu.Unlock()
				cancel()
			})
		}
		return false
	}
	cond := func(ev watch.Event) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case watch.Error:
			return false, apierrors.FromObject(ev.Object)
		case watch.Deleted:
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				return false, nil
			}
			if lead := f.lead(); lead != nil && ended(lead) && lead.Name != p.Name {
				// Once the lead has ended, controllers remove the
				// workers (mpi-operator, Volcano's CompleteJob): done.
				delete(f.pods, p.Name)
				return finished(), nil
			}
			if !ended(p) {
				return false, fmt.Errorf("pod %s was deleted before it ended (preempted, evicted or removed by someone else)", p.Name)
			}
			return false, nil
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		f.pods[p.Name] = p
		f.seen[p.Name] = true
		if err := podProblem(p); err != nil {
			return false, err
		}
		name := p.Name
		if unschedulable(p) != "" {
			if _, seen := timers[name]; !seen {
				timers[name] = time.AfterFunc(f.l.cfg.PendingTimeout, func() {
					mu.Lock()
					if pendErr == nil {
						pendErr = fmt.Errorf("pod %s cannot be scheduled (for %s): %s%s", name, f.l.cfg.PendingTimeout, condMessage(f.pods[name], corev1.PodScheduled), pinNote(f.w.pin))
					}
					mu.Unlock()
					cancel()
				})
			}
		} else if t, seen := timers[name]; seen {
			t.Stop()
			delete(timers, name)
		}
		return finished(), nil
	}
	_, err := watchtools.UntilWithSync(wctx, lw, &corev1.Pod{}, nil, cond)
	mu.Lock()
	defer mu.Unlock()
	switch {
	case pendErr != nil:
		return pendErr
	case graceOver && ctx.Err() == nil:
		return nil
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

// done reports whether the step is over: the lead has ended and every pod
// with it (workers end when the lead tells them), or the lead has failed,
// where workers of a failed mpirun may wait forever.
func (f *follower) done() bool {
	lead := f.lead()
	if lead == nil || !ended(lead) {
		return false
	}
	all := len(f.seen) >= f.w.pods
	for _, q := range f.pods {
		all = all && ended(q)
	}
	return all || lead.Status.Phase == corev1.PodFailed
}

// condMessage is the reason and message of a pod condition, as the
// scheduler wrote them (the same text as its FailedScheduling event).
func condMessage(p *corev1.Pod, t corev1.PodConditionType) string {
	if p == nil {
		return "unknown"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return "no " + string(t) + " condition"
}

func unschedulable(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// fatalWaiting are container waiting reasons that will not resolve by
// themselves.
var fatalWaiting = map[string]bool{
	"ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true, "RunContainerError": true,
}

// podProblem reports a pod that cannot run or was killed by the system:
// image pull back-off, bad configuration, OOM kill, eviction.
func podProblem(p *corev1.Pod) error {
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			return fmt.Errorf("pod %s container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			return fmt.Errorf("pod %s container %s: OOMKilled (exit %d): the container ran out of memory: raise its memory limit (kubernetes.resources.memory in the SKU file)", p.Name, cs.Name, t.ExitCode)
		}
	}
	if p.Status.Phase == corev1.PodFailed && p.Status.Reason != "" {
		return fmt.Errorf("pod %s failed: %s: %s", p.Name, p.Status.Reason, p.Status.Message)
	}
	return nil
}

// exitCode is the main container's exit status, once it has terminated.
func exitCode(p *corev1.Pod) (int, bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Terminated != nil {
			return int(cs.State.Terminated.ExitCode), true
		}
	}
	return 0, false
}

// collectLogs writes the lead pod's log as the step's log (files taken
// out, see splitFiles) and the other pods' logs as files of the step.
func (l *Launcher) collectLogs(ctx context.Context, c *clients, req launch.Request, w *workload, pods []*corev1.Pod, lead *corev1.Pod,
	logw io.Writer, out *plan.Output) error {
	var errs []string
	for _, p := range pods {
		if p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "" {
			continue // never ran: no log
		}
		// Streamed, not read whole: a chatty benchmark's log can be large.
		rc, err := c.core.CoreV1().Pods(c.namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: containerName}).Stream(ctx)
		if err != nil {
			errs = append(errs, fmt.Sprintf("read log of pod %s: %v", p.Name, err))
			continue
		}
		if p != lead {
			if _, err := launch.CollectFile(req, w.step.Name, "pod-"+p.Name+".log", rc); err != nil {
				errs = append(errs, err.Error())
			}
			rc.Close()
			continue
		}
		err = splitFiles(rc, logw, func(name string, content []byte) error {
			if !wanted(w.step.Files, name) {
				return fmt.Errorf("pod %s printed file %q, which step %s does not list", p.Name, name, w.step.Name)
			}
			path, err := launch.CollectFile(req, w.step.Name, name, bytes.NewReader(content))
			if err != nil {
				return err
			}
			if out.Files == nil {
				out.Files = map[string]string{}
			}
			out.Files[name] = path
			return nil
		})
		rc.Close()
		if err != nil {
			errs = append(errs, fmt.Sprintf("log of pod %s: %v", p.Name, err))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func wanted(files []string, name string) bool {
	for _, f := range files {
		if f == name {
			return true
		}
	}
	return false
}

// waitMarker follows the lead pod's log until the step's ReadyMarker
// shows, then calls ready. Following is right here: the server keeps
// running while the client starts, so its log cannot be read at its end.
func (l *Launcher) waitMarker(ctx context.Context, c *clients, w *workload, ready func()) error {
	pods := c.core.CoreV1().Pods(c.namespace)
	sel := w.selector + "," + LabelRole + "=lead"
	for ctx.Err() == nil {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		var name string
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodPending {
				name = p.Name
			}
		}
		if name == "" {
			// Not running yet: wait for the next change of its pods.
			wi, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
			if err != nil {
				return err
			}
			select {
			case <-wi.ResultChan():
			case <-ctx.Done():
			}
			wi.Stop()
			continue
		}
		rc, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: containerName, Follow: true}).Stream(ctx)
		if err != nil {
			return err
		}
		// The one marker matcher (launch.MarkerWriter), lines of any
		// length included; the stream ends once it has matched.
		found := false
		mw := &launch.MarkerWriter{W: io.Discard, Marker: []byte(w.step.ReadyMarker), Found: func() {
			found = true
			ready()
			rc.Close()
		}}
		_, err = io.Copy(mw, rc)
		rc.Close()
		if found {
			return nil
		}
		return err
	}
	return ctx.Err()
}

// deleteAll deletes objs (newest first) with foreground propagation and
// waits, through watches, until each is gone.
func deleteAll(ctx context.Context, c *clients, objs []*unstructured.Unstructured) error {
	var errs []string
	fg := metav1.DeletePropagationForeground
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		gvr, err := gvrOf(o)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		err = c.dyn.Resource(gvr).Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &fg})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Sprintf("delete %s %s: %v", o.GetKind(), o.GetName(), err))
		}
	}
	for _, o := range objs {
		gvr, err := gvrOf(o)
		if err != nil {
			continue
		}
		if err := waitGone(ctx, c, gvr, o.GetNamespace(), fields.OneTermEqualSelector("metadata.name", o.GetName()).String(), ""); err != nil {
			errs = append(errs, fmt.Sprintf("wait for %s %s to go: %v", o.GetKind(), o.GetName(), err))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// waitGone waits until no object of gvr in namespace matches the field and
// label selectors: a list, then a watch from its resource version that
// counts deletions.
func waitGone(ctx context.Context, c *clients, gvr schema.GroupVersionResource, namespace, fieldSel, labelSel string) error {
	ri := c.dyn.Resource(gvr).Namespace(namespace)
	for {
		list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: fieldSel, LabelSelector: labelSel})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil // the kind is not served here
			}
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		left := map[string]bool{}
		for _, it := range list.Items {
			left[it.GetName()] = true
		}
		wi, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: fieldSel, LabelSelector: labelSel, ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			return err
		}
		restart := false
		for len(left) > 0 && !restart {
			select {
			case ev, ok := <-wi.ResultChan():
				if !ok {
					restart = true // the server closed the watch: list again
					break
				}
				if ev.Type == watch.Error {
					restart = true
					break
				}
				if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Deleted {
					delete(left, u.GetName())
				}
			case <-ctx.Done():
				wi.Stop()
				return fmt.Errorf("%d left (%s): %w", len(left), strings.Join(sortedSet(left), ", "), ctx.Err())
			}
		}
		wi.Stop()
		if !restart {
			return nil
		}
	}
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pinNote says, after the scheduler's words, which nodes a pinned pod was
// held to: its NodeAffinity message does not name them.
func pinNote(nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	return " (pinned by --hosts to node " + strings.Join(nodes, ", ") + ")"
}
