package nccltests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// parseJSONKnownVersion is the newest JSON file version (its "version"
// field) this parser was written for.
const parseJSONKnownVersion = 3

// parseJSONTailMax is how many of the last bytes read are kept to find
// where a syntax error is (the decoder reports the start of the value it
// failed in; the bytes from there are scanned again).
const parseJSONTailMax = 256 << 10

// ParseJSON reads the file nccl-tests writes with -J (format version 3, and
// the older 1 and 2) and returns what it says. The results are decoded one
// at a time, so a file cut short by a killed run still gives the results
// that were complete, with an Errors entry saying that it is truncated.
// Numbers written as strings and booleans written as "true"/"false" are
// taken as numbers and booleans. The error is for input that cannot be
// read or is not JSON (an empty file included); it names name and, where
// known, the line and byte offset.
func ParseJSON(r io.Reader, name string) (*Output, error) {
	return parseJSON(r, name)
}

// parseJSON is ParseJSON with named results, for the recover.
func parseJSON(r io.Reader, name string) (out *Output, err error) {
	defer func() {
		// A bug must not take the caller down.
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("parse nccl-tests JSON %s: %s: %v", name, parseInternalError, v)
		}
	}()
	tr := &jsonTrackReader{r: r}
	dec := json.NewDecoder(tr)
	p := &jsonParser{dec: dec, tr: tr, name: name, out: newOutput("json"), errs: newDiags("errors"), warn: newDiags("warnings")}
	return p.parse()
}

// jsonTrackReader counts the bytes and lines read, keeps the last bytes
// and remembers the first read error other than io.EOF.
type jsonTrackReader struct {
	r     io.Reader
	n     int64  // bytes read
	lines int    // '\n' read
	tail  []byte // the last bytes read, up to 2*parseJSONTailMax
	err   error
}

func (t *jsonTrackReader) Read(b []byte) (int, error) {
	k, err := t.r.Read(b)
	if k < 0 || k > len(b) {
		k, err = 0, fmt.Errorf("reader returned %d bytes for a %d byte buffer", k, len(b))
	}
	if k > 0 {
		t.n += int64(k)
		t.lines += bytes.Count(b[:k], []byte{'\n'})
		t.tail = append(t.tail, b[:k]...)
		if len(t.tail) > 2*parseJSONTailMax {
			t.tail = append(t.tail[:0], t.tail[len(t.tail)-parseJSONTailMax:]...)
		}
	}
	if err != nil && err != io.EOF && t.err == nil {
		t.err = err
	}
	return k, err
}

// kept returns the bytes read from offset off on, or nil when they are no
// longer kept.
func (t *jsonTrackReader) kept(off int64) []byte {
	start := t.n - int64(len(t.tail))
	if off < start || off > t.n {
		return nil
	}
	return t.tail[off-start:]
}

// lineAt returns the 1-based line of the byte at offset off, or 0 when
// that part of the input is no longer kept.
func (t *jsonTrackReader) lineAt(off int64) int {
	if off >= t.n {
		return t.lines + 1
	}
	b := t.kept(off)
	if b == nil {
		return 0
	}
	return t.lines - bytes.Count(b, []byte{'\n'}) + 1
}

// jsonParser is the state of one ParseJSON call.
type jsonParser struct {
	dec  *json.Decoder
	tr   *jsonTrackReader
	name string
	out  *Output
	errs textdiag.List
	warn textdiag.List

	where   string // the part being read, for messages
	results int    // complete results read
	set     RowSet // the rows, cycles folded as they are read
}

func (p *jsonParser) parse() (*Output, error) {
	p.where = "the first value"
	tok, err := p.dec.Token()
	if err == io.EOF {
		return nil, fmt.Errorf("parse nccl-tests JSON %s: the file is empty", p.name)
	}
	if err != nil {
		return nil, p.fail(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("parse nccl-tests JSON %s: line 1: the file does not hold a JSON object (it starts with %s)", p.name, jsonShow(tok))
	}
	for {
		p.where = "the top-level object"
		tok, err := p.dec.Token()
		if err != nil {
			return p.stop(err)
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			break
		}
		key, _ := tok.(string)
		p.where = strconv.Quote(key)
		if err := p.field(key); err != nil {
			return p.stop(err)
		}
	}
	if _, err := p.dec.Token(); err != io.EOF {
		p.warn.Add(0, "data after the JSON object ignored")
	}
	return p.result(), nil
}

// result finishes the parse and returns the Output.
func (p *jsonParser) result() *Output {
	o := p.out
	o.Rows = p.set.Rows()
	o.Errors = p.errs.Done()
	o.Warnings = p.warn.Done()
	o.Groups = outputGroups(o.Ranks)
	return o
}

// fail turns a decoding error into ParseJSON's error, with the line and
// byte offset where known.
func (p *jsonParser) fail(err error) error {
	if p.tr.err != nil {
		return fmt.Errorf("read nccl-tests JSON %s: %w", p.name, p.tr.err)
	}
	// The decoder stands at the start of the value it failed in; its
	// SyntaxError offsets do not count what Token read, so the value is
	// scanned again to find the bad byte.
	off := p.dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		var raw json.RawMessage
		if err2 := json.NewDecoder(bytes.NewReader(p.tr.kept(off))).Decode(&raw); err2 != nil {
			if se2, ok := err2.(*json.SyntaxError); ok && se2.Offset > 0 {
				off += se2.Offset - 1
			}
		}
	}
	at := fmt.Sprintf("byte %d", off+1)
	if l := p.tr.lineAt(off); l > 0 {
		at = fmt.Sprintf("line %d, byte %d", l, off+1)
	}
	return fmt.Errorf("parse nccl-tests JSON %s: %s, in %s: %w", p.name, at, p.where, err)
}

// stop ends the parse at an error: a file that ends early keeps what was
// read, with an Errors entry; anything else is ParseJSON's error.
func (p *jsonParser) stop(err error) (*Output, error) {
	if p.tr.err == nil && (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)) {
		p.errs.Add(0, fmt.Sprintf("JSON file ends early, at byte %d in %s: output truncated (run killed?); %d complete results kept", p.tr.n, p.where, p.results))
		return p.result(), nil
	}
	return nil, p.fail(err)
}

// decode decodes the next value into v; a value of the wrong kind is
// reported as a warning and skipped (skipped is then true).
func (p *jsonParser) decode(v any) error {
	_, err := p.decodeSkip(v)
	return err
}

// decodeSkip is decode that says whether the value was skipped.
func (p *jsonParser) decodeSkip(v any) (skipped bool, err error) {
	err = p.dec.Decode(v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		what := p.where
		if te.Field != "" {
			what += " field " + strconv.Quote(te.Field)
		}
		p.warn.Add(0, fmt.Sprintf("JSON %s is a %s, which is not what nccl-tests writes there: ignored", what, te.Value))
		return true, nil
	}
	return false, err
}

// field reads the value of one top-level key.
func (p *jsonParser) field(key string) error {
	o := p.out
	switch key {
	case "version":
		var v jsonNum
		if err := p.decode(&v); err != nil {
			return err
		}
		if v.isInt && v.i > parseJSONKnownVersion {
			p.warn.Add(0, fmt.Sprintf("JSON format version %d is newer than this parser knows (%d)", v.i, parseJSONKnownVersion))
		}
	case "nccl_version":
		var v jsonNum
		if err := p.decode(&v); err != nil {
			return err
		}
		if v.isInt {
			o.NCCLVersion = outputNCCLVersion(v.i)
		}
	case "args":
		var a []jsonStr
		if err := p.decode(&a); err != nil {
			return err
		}
		if len(a) > 0 {
			o.Collective = outputCleanText(outputCollective(a[0].s))
		}
	case "config":
		var c jsonConfig
		if err := p.decode(&c); err != nil {
			return err
		}
		p.config(&c)
	case "results":
		return p.resultList()
	case "out_of_bounds":
		var b jsonBounds
		if err := p.decode(&b); err != nil {
			return err
		}
		if b.Count.isInt && b.Count.i >= 0 && b.Count.i <= math.MaxInt32 {
			o.OutOfBounds = int(b.Count.i)
		}
		o.FooterSeen = true
		o.OutOfBoundsFailed = b.Okay.set && !b.Okay.v || !b.Okay.set && o.OutOfBounds > 0
	case "average_bus_bandwidth", "average_bus_bandwidith":
		var a jsonAvg
		if err := p.decode(&a); err != nil {
			return err
		}
		if a.bw.set {
			o.AvgBusBW = a.bw.f
		}
		if a.okay.set && !a.okay.v {
			p.warn.Add(0, "nccl-tests reports the average bus bandwidth "+strconv.FormatFloat(a.bw.f, 'g', -1, 64)+" GB/s as not okay (below NCCL_TESTS_MIN_BW)")
		}
	case "errors":
		var e []jsonStr
		if err := p.decode(&e); err != nil {
			return err
		}
		for _, s := range e {
			if strings.TrimSpace(s.s) != "" {
				p.errs.Add(0, "nccl-tests: error: "+s.s)
			}
		}
	default:
		var skip jsonSkip
		return p.decode(&skip)
	}
	return nil
}

// config takes the run's parameters and ranks from the config object.
func (p *jsonParser) config(c *jsonConfig) {
	o := p.out
	small := func(n jsonNum) int {
		if n.isInt && n.i > 0 && n.i <= 1<<30 {
			return int(n.i)
		}
		return 0
	}
	o.NThreads, o.NGPUs = small(c.NThreads), small(c.NGPUs)
	if c.MinBytes.isInt && c.MinBytes.i > 0 {
		o.MinBytes = c.MinBytes.i
	}
	if c.MaxBytes.isInt && c.MaxBytes.i > 0 {
		o.MaxBytes = c.MaxBytes.i
	}
	if c.StepFactor.isInt && c.StepFactor.i > 1 {
		o.StepFactor = c.StepFactor.i
	}
	for _, d := range c.Devices {
		o.Ranks = append(o.Ranks, Rank{
			Rank: d.Rank.int(), Group: d.Group.int(), Pid: d.Pid.int(), Device: d.Device.int(),
			Host: outputCleanText(d.Hostname.s), BusID: outputCleanText(d.DeviceHex.s), DeviceName: outputCleanText(d.DeviceInfo.s),
		})
	}
	if n := len(c.Devices); n > 0 {
		o.RankCount = n * max(o.NThreads, 1) * max(o.NGPUs, 1)
	}
}

// resultList reads the results array one element at a time.
func (p *jsonParser) resultList() error {
	tok, err := p.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
	case nil:
		return nil
	case json.Delim('{'):
		p.warn.Add(0, "JSON \"results\" is an object, not a list: ignored")
		return jsonSkipRest(p.dec)
	default:
		p.warn.Add(0, "JSON \"results\" is "+jsonShow(tok)+", not a list: ignored")
		return nil
	}
	for i := 0; p.dec.More(); i++ {
		p.where = fmt.Sprintf("results[%d]", i)
		var res jsonResult
		skipped, err := p.decodeSkip(&res)
		if err != nil {
			return err
		}
		if !skipped {
			if row, ok := p.row(&res); ok {
				p.set.Add(row)
			}
		}
		p.results++
	}
	p.where = "results"
	_, err = p.dec.Token()
	return err
}

// row makes a Row of one result.
func (p *jsonParser) row(res *jsonResult) (Row, bool) {
	if !res.Size.isInt || res.Size.i < 0 {
		p.warn.Add(0, fmt.Sprintf("JSON %s: size %s is not a byte count: result ignored", p.where, res.Size.show()))
		return Row{}, false
	}
	row := Row{Size: res.Size.i, Type: outputCleanText(res.Type.s), Redop: outputCleanText(res.Redop.s), Root: -1}
	if res.Count.isInt && res.Count.i >= 0 {
		row.Count = res.Count.i
	}
	if res.Root.isInt && res.Root.i >= math.MinInt32 && res.Root.i <= math.MaxInt32 {
		row.Root = int(res.Root.i)
	}
	row.OutOfPlace = res.OutOfPlace.perf(res.OutOfPlaceIter)
	row.InPlace = res.InPlace.perf(res.InPlaceIter)
	return row, true
}

// jsonShow shows a token in a message.
func jsonShow(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return string(v)
	case string:
		return outputCleanText(strconv.Quote(v))
	case nil:
		return "null"
	}
	return fmt.Sprint(tok)
}

// jsonSkipRest skips the rest of an object or list whose opening token
// was read.
func jsonSkipRest(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// jsonSkip takes any JSON value and keeps nothing.
type jsonSkip struct{}

func (*jsonSkip) UnmarshalJSON([]byte) error { return nil }

// jsonNum is a lenient number: a JSON number, or a string holding one
// (nccl-tests writes the root as "    -1" and NaN as "nan"). It never
// fails to decode; set says whether it held a number.
type jsonNum struct {
	f     float64
	i     int64
	set   bool // a number was found
	isInt bool // it is an integer that fits int64 (i)
	null  bool
	raw   string // the JSON text it was decoded from, for messages
}

func (n *jsonNum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*n = jsonNum{raw: outputCleanText(string(b))}
	if string(b) == "null" {
		n.null = true
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) != nil {
			return nil
		}
		b = []byte(strings.TrimSpace(s))
	}
	if i, ok := jsonParseInt(b); ok {
		n.i, n.f, n.set, n.isInt = i, float64(i), true, true
		return nil
	}
	if f, ok := parseFloat(b); ok {
		n.f, n.set = f, true
		if f == math.Trunc(f) && f >= -(1<<53) && f <= 1<<53 {
			n.i, n.isInt = int64(f), true
		}
		return nil
	}
	return nil
}

// jsonParseInt parses an integer with an optional sign that fits int64.
func jsonParseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	v, ok := parseUint(b)
	if neg {
		v = -v
	}
	return v, ok
}

// int returns the number as an int, 0 when it is none or too big.
func (n jsonNum) int() int {
	if n.isInt && n.i >= math.MinInt32 && n.i <= math.MaxInt32 {
		return int(n.i)
	}
	return 0
}

// show shows the value in a message.
func (n jsonNum) show() string {
	switch {
	case n.set:
		return strconv.FormatFloat(n.f, 'g', -1, 64)
	case n.null:
		return "null"
	case n.raw == "":
		return "missing"
	}
	return n.raw
}

// jsonStr is a lenient string: a JSON string, or the text of any other
// scalar; null and objects give "".
type jsonStr struct{ s string }

func (s *jsonStr) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	s.s = ""
	switch {
	case len(b) == 0 || string(b) == "null" || b[0] == '{' || b[0] == '[':
	case b[0] == '"':
		_ = json.Unmarshal(b, &s.s)
	default:
		s.s = string(b)
	}
	return nil
}

// jsonBool is a lenient boolean: true, false, "true", "false", 1, 0, "1",
// "0"; anything else (such as "unchecked") leaves it unset.
type jsonBool struct{ v, set bool }

func (v *jsonBool) UnmarshalJSON(b []byte) error {
	s := strings.ToLower(strings.Trim(string(bytes.TrimSpace(b)), `" `))
	*v = jsonBool{}
	switch s {
	case "true", "1", "yes", "ok":
		v.v, v.set = true, true
	case "false", "0", "no", "failed":
		v.v, v.set = false, true
	}
	return nil
}

// jsonConfig is the config object.
type jsonConfig struct {
	NThreads   jsonNum      `json:"nthreads"`
	NGPUs      jsonNum      `json:"ngpus"`
	MinBytes   jsonNum      `json:"minimum_bytes"`
	MaxBytes   jsonNum      `json:"maximum_bytes"`
	StepFactor jsonNum      `json:"step_factor"`
	Devices    []jsonDevice `json:"devices"`
}

// jsonDevice is one element of config.devices: the first rank line of one
// process.
type jsonDevice struct {
	Rank       jsonNum `json:"rank"`
	Group      jsonNum `json:"group"`
	Pid        jsonNum `json:"pid"`
	Hostname   jsonStr `json:"hostname"`
	Device     jsonNum `json:"device"`
	DeviceHex  jsonStr `json:"device_hex"`
	DeviceInfo jsonStr `json:"device_info"`
}

// jsonResult is one element of results.
type jsonResult struct {
	Size           jsonNum   `json:"size"`
	Count          jsonNum   `json:"count"`
	Type           jsonStr   `json:"type"`
	Redop          jsonStr   `json:"redop"`
	Root           jsonNum   `json:"root"`
	OutOfPlace     *jsonPerf `json:"out_of_place"`
	InPlace        *jsonPerf `json:"in_place"`
	OutOfPlaceIter *jsonIter `json:"out_of_place_per_iter"`
	InPlaceIter    *jsonIter `json:"in_place_per_iter"`
}

// jsonPerf is out_of_place or in_place of a result.
type jsonPerf struct {
	Time    jsonNum `json:"time"`
	CPUTime jsonNum `json:"cpu_time"`
	AlgBW   jsonNum `json:"alg_bw"`
	BusBW   jsonNum `json:"bus_bw"`
	NWrong  jsonNum `json:"nwrong"`
}

// jsonIter is out_of_place_per_iter or in_place_per_iter of a result (-I).
type jsonIter struct {
	Min jsonNum `json:"min_us"`
	Max jsonNum `json:"max_us"`
	P99 jsonNum `json:"p99_us"`
	CV  jsonNum `json:"cv_pct"`
}

// perf makes a Perf; nil for a measurement that is null or absent.
func (j *jsonPerf) perf(it *jsonIter) *Perf {
	if j == nil {
		return nil
	}
	f := &Perf{Time: j.Time.f, AlgBW: j.AlgBW.f, BusBW: j.BusBW.f, Wrong: -1}
	if !j.Time.set {
		f.Time = j.CPUTime.f
	}
	if j.NWrong.set && j.NWrong.f >= 0 && j.NWrong.f < math.MaxInt64 {
		f.Wrong = int64(j.NWrong.f)
	}
	if it != nil {
		f.IMin, f.IMax, f.IP99, f.ICV = it.Min.f, it.Max.f, it.P99.f, it.CV.f
	}
	return f
}

// jsonBounds is the out_of_bounds object.
type jsonBounds struct {
	Count jsonNum  `json:"count"`
	Okay  jsonBool `json:"okay"`
}

// jsonAvg is average_bus_bandwidth: an object with the bandwidth (spelled
// "bandwidith" in format version 1) and whether it passed, or a number.
type jsonAvg struct {
	bw   jsonNum
	okay jsonBool
}

func (a *jsonAvg) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*a = jsonAvg{}
	if len(b) == 0 || b[0] != '{' {
		return a.bw.UnmarshalJSON(b)
	}
	var obj struct {
		Bandwidth  jsonNum  `json:"bandwidth"`
		Bandwidith jsonNum  `json:"bandwidith"`
		Okay       jsonBool `json:"okay"`
	}
	if json.Unmarshal(b, &obj) != nil {
		return nil
	}
	a.bw, a.okay = obj.Bandwidth, obj.Okay
	if !a.bw.set {
		a.bw = obj.Bandwidith
	}
	return nil
}
