package pluginapi

import (
	"context"
	"errors"
	"math"
	"os"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	pb "github.com/gpuaccept/gpuaccept/framework/pluginapi/proto"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Handshake is the go-plugin handshake every gpuaccept test plugin uses. A
// plugin started by anything else than gpuaccept exits with a message
// instead of serving.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "GPUACCEPT_PLUGIN",
	MagicCookieValue: "test-plugin-v1",
}

// pluginKey is the name the plugin is dispensed under in go-plugin's map.
const pluginKey = "test"

// grpcPlugin adapts a Plugin to go-plugin's GRPCPlugin.
type grpcPlugin struct {
	goplugin.Plugin
	impl Plugin
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPluginServer(s, &server{impl: p.impl})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &client{c: pb.NewPluginClient(c)}, nil
}

// Serve serves impl over go-plugin on stdin/stdout; it returns when the
// host ends the plugin. Plugin executables call it from main.
func Serve(impl Plugin) {
	go exitWithParent(os.Getppid(), time.Second)
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         goplugin.PluginSet{pluginKey: &grpcPlugin{impl: impl}},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}

// exitWithParent ends the plugin process once its parent (gpuaccept) is
// gone: go-plugin stops a plugin only when the host calls Kill, so a host
// killed with SIGKILL would otherwise leave its plugins running forever.
// A process whose parent died is re-parented, so its parent pid changes.
func exitWithParent(parent int, every time.Duration) {
	for range time.Tick(every) {
		if os.Getppid() != parent {
			os.Exit(3)
		}
	}
}

// server is the plugin side of the gRPC transport.
type server struct {
	pb.UnimplementedPluginServer
	impl Plugin
}

func (s *server) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.Description, error) {
	d, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, err
	}
	out := &pb.Description{Name: d.Name, Version: d.Version}
	for _, t := range d.Tests {
		ti := &pb.TestInfo{Name: t.Name, Description: t.Description, HcaMapParam: t.HCAMapParam, PairLabel: t.PairLabel, Roles: t.Roles, Preflight: t.Preflight}
		for _, p := range t.Params {
			ti.Params = append(ti.Params, &pb.Param{Name: p.Name, Default: p.Default, Unit: p.Unit, Description: p.Description})
		}
		for _, m := range t.Metrics {
			ti.Metrics = append(ti.Metrics, &pb.MetricInfo{Name: m.Name, Unit: m.Unit, Description: m.Description, Labels: m.Labels, LabelDefaults: m.LabelDefaults, InstanceLabels: m.InstanceLabels,
				Better: string(m.Better), Plot: string(m.Plot), Record: m.Record, KeyLabels: m.KeyLabels})
		}
		out.Tests = append(out.Tests, ti)
	}
	return out, nil
}

func (s *server) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	p, err := s.impl.Plan(ctx, PlanRequest{Test: req.Test, Params: req.Params, Topology: topoFromPB(req.Topology)})
	if err != nil {
		return nil, err
	}
	out := &pb.PlanResponse{}
	for _, st := range p.Steps {
		out.Steps = append(out.Steps, &pb.Step{
			Name: st.Name, Role: st.Role, Argv: st.Argv, Env: st.Env,
			Procs: int32(st.Procs), ProcsPerNode: int32(st.ProcsPerNode), Mpi: st.MPI, Host: int32(st.Host),
			ReadyMarker: st.ReadyMarker, TimeoutMs: st.Timeout.Milliseconds(), Files: st.Files,
		})
	}
	return out, nil
}

func (s *server) Parse(ctx context.Context, req *pb.ParseRequest) (*pb.ParseResponse, error) {
	r := ParseRequest{Test: req.Test, Params: req.Params, Topology: topoFromPB(req.Topology)}
	for _, o := range req.Outputs {
		r.Outputs = append(r.Outputs, plan.Output{
			Step: o.Step, Role: o.Role, Host: o.Host, ExitCode: int(o.ExitCode), LaunchError: o.LaunchError,
			Log: o.Log, Files: o.Files, Command: o.Command, RankHosts: o.RankHosts,
		})
	}
	p, err := s.impl.Parse(ctx, r)
	if err != nil {
		return nil, err
	}
	out := &pb.ParseResponse{Error: p.Error, Info: p.Info}
	for _, m := range p.Metrics {
		out.Metrics = append(out.Metrics, &pb.Metric{Name: m.Name, Value: m.Value, Unit: m.Unit, Size: m.Size, Labels: m.Labels,
			Cycles: int32(min(m.Cycles, math.MaxInt32)), Min: m.Min, Median: m.Median, Max: m.Max})
	}
	for _, c := range p.Checks {
		out.Checks = append(out.Checks, &pb.Check{Name: c.Name, Ok: c.OK, Message: c.Message, Warn: c.Warn, Error: c.Error, Host: c.Host, Code: c.Code})
	}
	for _, d := range p.Diagnostics {
		out.Diagnostics = append(out.Diagnostics, &pb.Diagnostic{Level: string(d.Level), Message: d.Message, Source: d.Source})
	}
	return out, nil
}

// client is the host side of the gRPC transport; it implements Plugin.
type client struct{ c pb.PluginClient }

func (c *client) Describe(ctx context.Context) (Description, error) {
	d, err := c.c.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return Description{}, fromRPC(err)
	}
	out := Description{Name: d.Name, Version: d.Version}
	for _, t := range d.Tests {
		ti := TestInfo{Name: t.Name, Description: t.Description, HCAMapParam: t.HcaMapParam, PairLabel: t.PairLabel, Roles: t.Roles, Preflight: t.Preflight}
		for _, p := range t.Params {
			ti.Params = append(ti.Params, Param{Name: p.Name, Default: p.Default, Unit: p.Unit, Description: p.Description})
		}
		for _, m := range t.Metrics {
			ti.Metrics = append(ti.Metrics, MetricInfo{Name: m.Name, Unit: m.Unit, Description: m.Description, Labels: m.Labels, LabelDefaults: m.LabelDefaults, InstanceLabels: m.InstanceLabels,
				Better: result.Better(m.Better), Plot: result.Plot(m.Plot), Record: m.Record, KeyLabels: m.KeyLabels})
		}
		out.Tests = append(out.Tests, ti)
	}
	return out, nil
}

func (c *client) Plan(ctx context.Context, req PlanRequest) (plan.Plan, error) {
	r, err := c.c.Plan(ctx, &pb.PlanRequest{Test: req.Test, Params: req.Params, Topology: topoToPB(req.Topology)})
	if err != nil {
		return plan.Plan{}, fromRPC(err)
	}
	var p plan.Plan
	for _, s := range r.Steps {
		p.Steps = append(p.Steps, plan.Step{
			Name: s.Name, Role: s.Role, Argv: s.Argv, Env: s.Env,
			Procs: int(s.Procs), ProcsPerNode: int(s.ProcsPerNode), MPI: s.Mpi, Host: int(s.Host),
			ReadyMarker: s.ReadyMarker, Timeout: time.Duration(s.TimeoutMs) * time.Millisecond, Files: s.Files,
		})
	}
	return p, nil
}

func (c *client) Parse(ctx context.Context, req ParseRequest) (result.Parsed, error) {
	r := &pb.ParseRequest{Test: req.Test, Params: req.Params, Topology: topoToPB(req.Topology)}
	for _, o := range req.Outputs {
		r.Outputs = append(r.Outputs, &pb.Output{
			Step: o.Step, Role: o.Role, Host: o.Host, ExitCode: int32(o.ExitCode), LaunchError: o.LaunchError,
			Log: o.Log, Files: o.Files, Command: o.Command, RankHosts: o.RankHosts,
		})
	}
	resp, err := c.c.Parse(ctx, r)
	if err != nil {
		return result.Parsed{}, fromRPC(err)
	}
	out := result.Parsed{Error: resp.Error, Info: resp.Info}
	for _, m := range resp.Metrics {
		out.Metrics = append(out.Metrics, result.Metric{Name: m.Name, Value: m.Value, Unit: m.Unit, Size: m.Size, Labels: m.Labels,
			Cycles: int(m.Cycles), Min: m.Min, Median: m.Median, Max: m.Max})
	}
	for _, ch := range resp.Checks {
		out.Checks = append(out.Checks, result.Check{Name: ch.Name, OK: ch.Ok, Message: ch.Message, Warn: ch.Warn, Error: ch.Error, Host: ch.Host, Code: ch.Code})
	}
	for _, d := range resp.Diagnostics {
		out.Diagnostics = append(out.Diagnostics, result.Diagnostic{Level: result.Level(d.Level), Message: d.Message, Source: d.Source})
	}
	return out, nil
}

// fromRPC turns an error the plugin returned into its own message, without
// gRPC's "rpc error: code = Unknown desc =" wrapping; transport failures
// (the plugin died, the call timed out) keep theirs.
func fromRPC(err error) error {
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unknown {
		return errors.New(st.Message())
	}
	return err
}

func topoToPB(t plan.Topology) *pb.Topology {
	return &pb.Topology{Nodes: int32(t.Nodes), GpusPerNode: int32(t.GPUsPerNode), Hosts: t.Hosts, Nics: t.NICs}
}

func topoFromPB(t *pb.Topology) plan.Topology {
	if t == nil {
		return plan.Topology{}
	}
	return plan.Topology{Scope: plan.Scope{Nodes: int(t.Nodes), GPUsPerNode: int(t.GpusPerNode)}, Hosts: t.Hosts, NICs: t.Nics}
}
