package launch

import (
	"context"
	"os/exec"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/proc"
)

// GroupStop says how RunGroup starts a step's local processes and stops
// them when the step's ctx ends first.
type GroupStop struct {
	// Name names the step to framework/proc (its cgroup's name).
	Name string
	// Grace is how long the process group has between SIGTERM and
	// SIGKILL; zero sends SIGKILL at once (a plain ssh client, which
	// holds nothing worth a clean exit).
	Grace time.Duration
	// First, when set, runs before the group gets SIGTERM: the ssh
	// launcher stops the remote side of a single-host step first, since
	// closing the connection does not stop a command without a terminal.
	First func()
	// HostPIDs: the step shares gpuaccept's pid namespace
	// (proc.Options.HostPIDs), for an evidence step.
	HostPIDs bool
}

// GroupEnd says how a step's process group ended (RunGroup).
type GroupEnd struct {
	// Err is the leader's exit (exec.Cmd.Wait's error; ExitCode turns it
	// into a status) when it exited by itself; nil when it was stopped.
	Err error
	// Stopped is why it was stopped (StopReason: "timed out after 2s",
	// "cancelled", the Sequence's reason); empty when the leader exited
	// by itself.
	Stopped string
	// Ending is what proc.Group.Close found: processes the step left
	// running (killed), survivors of SIGKILL.
	proc.Ending
}

// RunGroup starts cmd as a step through framework/proc (its own process
// group, and cgroup where the kernel allows) and waits until its leader
// exits or ctx ends. When ctx ends first it stops the group: First, then
// SIGTERM to the process group and its cgroup, and SIGKILL for whatever
// is left after Grace. Either way it closes the group before it returns,
// so nothing the step started on this host runs on, and its output is
// all written. The error is the start's (proc.Start); use cmd.Args[0] to
// name the program in it.
func RunGroup(ctx context.Context, cmd *exec.Cmd, st GroupStop) (GroupEnd, error) {
	began := time.Now()
	g, err := proc.Start(cmd, proc.Options{Name: st.Name, HostPIDs: st.HostPIDs})
	if err != nil {
		return GroupEnd{}, err
	}
	var end GroupEnd
	select {
	case <-g.Exited():
		end.Err = g.Err()
	case <-ctx.Done():
		end.Stopped = StopReason(ctx, began)
		if st.First != nil {
			st.First()
		}
		if st.Grace > 0 {
			g.Stop(st.Grace)
		}
	}
	end.Ending = g.Close()
	return end, nil
}
