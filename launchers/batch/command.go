package batch

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// CommandTimeout bounds one scheduler command (sbatch, squeue, qstat): a
// controller that does not answer must not hang the run.
const CommandTimeout = 60 * time.Second

// ExecFunc runs a command in env and returns its standard output and
// error; err is the command's exit (exec.Cmd.Run's).
type ExecFunc func(ctx context.Context, env []string, name string, args ...string) (stdout, stderr string, err error)

// Command runs a scheduler's command with CommandTimeout in env through
// exe (nil: the command itself; tests replay captured answers) and returns
// its standard output; a failure is a *CommandError.
func Command(ctx context.Context, exe ExecFunc, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, CommandTimeout)
	defer cancel()
	if exe == nil {
		exe = execCommand
	}
	out, errOut, err := exe(ctx, env, name, args...)
	if err != nil {
		msg := strings.TrimSpace(errOut)
		if msg == "" {
			msg = strings.TrimSpace(out)
		}
		return out, &CommandError{Cmd: name + " " + strings.Join(args, " "), Msg: msg, Err: err}
	}
	return out, nil
}

func execCommand(ctx context.Context, env []string, name string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// CommandError is a scheduler command that failed, with what it printed.
type CommandError struct {
	// Cmd is the command line; Msg what it printed (standard error, else
	// standard output), trimmed; Err its exit.
	Cmd, Msg string
	Err      error
}

// Error leads with what the command said ("sbatch: error: Invalid
// partition name specified"): tables cut long messages, and the command
// line, with its paths, is the least telling part.
func (e *CommandError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("%s: %v", e.Cmd, e.Err)
	}
	return fmt.Sprintf("%s (%s: %v)", e.Msg, e.Cmd, e.Err)
}

func (e *CommandError) Unwrap() error { return e.Err }
