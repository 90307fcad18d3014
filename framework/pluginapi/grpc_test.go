package pluginapi

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	pb "github.com/gpuaccept/gpuaccept/framework/pluginapi/proto"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// filler sets every field of a value, recursively, to a non-zero value
// that differs from field to field, so that a field the Go<->proto mapping
// drops, or two fields it swaps, shows in a comparison.
type filler struct {
	t *testing.T
	n int
}

func (f *filler) fill(v reflect.Value, path string) {
	f.n++
	switch {
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		// Step.Timeout travels in whole milliseconds.
		v.SetInt(int64(f.n) * int64(time.Millisecond))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", path, f.n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.n))
	case reflect.Float64:
		v.SetFloat(float64(f.n) + 0.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		f.fill(s.Index(0), path+"[0]")
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		f.fill(k, path+".key")
		e := reflect.New(v.Type().Elem()).Elem()
		f.fill(e, path+"[k]")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			sf := v.Type().Field(i)
			if !sf.IsExported() {
				f.t.Fatalf("%s.%s: unexported field in a type that crosses the plugin boundary", path, sf.Name)
			}
			f.fill(v.Field(i), path+"."+sf.Name)
		}
	default:
		// A field of a new kind: teach the filler, so the field is tested.
		f.t.Fatalf("%s: cannot fill a %s", path, v.Type())
	}
}

// filled returns a T with every field set (filler).
func filled[T any](t *testing.T, f *filler) T {
	var v T
	f.fill(reflect.ValueOf(&v).Elem(), reflect.TypeOf(v).String())
	return v
}

// allSet fails t for each field of m, recursively, that is not set: a
// proto field the Go->proto side of the mapping never fills.
func allSet(t *testing.T, m protoreflect.Message) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			t.Errorf("%s.%s is not set: the mapping from Go does not fill it", m.Descriptor().FullName(), fd.Name())
			continue
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := m.Get(fd).List()
			for j := 0; j < l.Len(); j++ {
				allSet(t, l.Get(j).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			m.Get(fd).Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				allSet(t, v.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			allSet(t, m.Get(fd).Message())
		}
	}
}

// wire is a pb.PluginClient that hands each message to the server side
// through its wire encoding, as gRPC does, and checks that the messages
// either side builds from Go values set every proto field.
type wire struct {
	t   *testing.T
	srv *server
}

func through[T proto.Message](w *wire, m T) T {
	w.t.Helper()
	allSet(w.t, m.ProtoReflect())
	data, err := proto.Marshal(m)
	assert.NilError(w.t, err)
	out := m.ProtoReflect().New().Interface().(T)
	assert.NilError(w.t, proto.Unmarshal(data, out))
	return out
}

func (w *wire) Describe(ctx context.Context, in *pb.DescribeRequest, _ ...grpc.CallOption) (*pb.Description, error) {
	d, err := w.srv.Describe(ctx, in)
	if err != nil {
		return nil, err
	}
	return through(w, d), nil
}

func (w *wire) Plan(ctx context.Context, in *pb.PlanRequest, _ ...grpc.CallOption) (*pb.PlanResponse, error) {
	r, err := w.srv.Plan(ctx, through(w, in))
	if err != nil {
		return nil, err
	}
	return through(w, r), nil
}

func (w *wire) Parse(ctx context.Context, in *pb.ParseRequest, _ ...grpc.CallOption) (*pb.ParseResponse, error) {
	r, err := w.srv.Parse(ctx, through(w, in))
	if err != nil {
		return nil, err
	}
	return through(w, r), nil
}

// echo answers with fixed values and keeps the requests it got.
type echo struct {
	desc     Description
	plan     plan.Plan
	parsed   result.Parsed
	planReq  *PlanRequest
	parseReq *ParseRequest
}

func (e *echo) Describe(context.Context) (Description, error) { return e.desc, nil }
func (e *echo) Plan(_ context.Context, r PlanRequest) (plan.Plan, error) {
	e.planReq = &r
	return e.plan, nil
}
func (e *echo) Parse(_ context.Context, r ParseRequest) (result.Parsed, error) {
	e.parseReq = &r
	return e.parsed, nil
}

// Every field of every value that crosses the plugin boundary, in both
// directions, arrives as it was sent: a field added to a Go type or to the
// proto and not mapped fails here (the filler sets it, or allSet finds the
// proto field empty).
func TestMappingCarriesEveryField(t *testing.T) {
	f := &filler{t: t}
	e := &echo{desc: filled[Description](t, f), plan: filled[plan.Plan](t, f), parsed: filled[result.Parsed](t, f)}
	c := &client{c: &wire{t: t, srv: &server{impl: e}}}
	ctx := context.Background()

	d, err := c.Describe(ctx)
	assert.NilError(t, err)
	assert.DeepEqual(t, d, e.desc)

	planReq := filled[PlanRequest](t, f)
	p, err := c.Plan(ctx, planReq)
	assert.NilError(t, err)
	assert.DeepEqual(t, *e.planReq, planReq)
	assert.DeepEqual(t, p, e.plan)

	parseReq := filled[ParseRequest](t, f)
	got, err := c.Parse(ctx, parseReq)
	assert.NilError(t, err)
	assert.DeepEqual(t, *e.parseReq, parseReq)
	assert.DeepEqual(t, got, e.parsed)
}

// The filler itself is checked: a value it made has no zero field left,
// so the comparisons above compare something in every field.
func TestFillerSetsEveryField(t *testing.T) {
	f := &filler{t: t}
	for _, v := range []any{filled[Description](t, f), filled[plan.Plan](t, f), filled[result.Parsed](t, f), filled[PlanRequest](t, f), filled[ParseRequest](t, f)} {
		var zero []string
		var walk func(v reflect.Value, path string)
		walk = func(v reflect.Value, path string) {
			if v.IsZero() {
				zero = append(zero, path)
				return
			}
			switch v.Kind() {
			case reflect.Struct:
				for i := 0; i < v.NumField(); i++ {
					walk(v.Field(i), path+"."+v.Type().Field(i).Name)
				}
			case reflect.Slice:
				for i := 0; i < v.Len(); i++ {
					walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
				}
			}
		}
		walk(reflect.ValueOf(v), reflect.TypeOf(v).String())
		assert.Assert(t, cmp.Equal(zero, []string(nil)), "zero fields: %v", zero)
	}
}
