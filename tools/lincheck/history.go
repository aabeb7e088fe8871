package main

// Reading recorded histories (JSON lines).
//
// One operation per line:
//
//	{"history": 3, "thread": 1, "op": "insert", "args": [5, 50], "result": 1, "call": 1234, "return": 1300}
//
// optionally preceded by one {"meta": {...}} line (the first non-blank line).
// "result" is an int64, null, or an array of int64 (what a batch operation took).
// Lines are parsed in parallel; the error reported is the one on the lowest
// line number.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/anishathalye/porcupine"
)

// InputError is a problem with the input file, reported as "line N: msg".
type InputError struct {
	Line int
	Msg  string
}

func (e *InputError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// History is one recorded history, ready for porcupine: Operation.Input and
// .Metadata are *Input, .Output is Value, .ClientId is the thread's index
// among the history's threads sorted by id.
type History struct {
	ID  int64
	Ops []porcupine.Operation
}

// Recording is the content of one input file.
type Recording struct {
	Meta      string     // the meta line's value as compact JSON; "" if none
	Histories []*History // sorted by ID
}

// rawLine is one input line as decoded by encoding/json. Pointers and raw
// messages distinguish absent/null fields from zero values.
type rawLine struct {
	Meta    json.RawMessage `json:"meta"`
	History *int64          `json:"history"`
	Thread  *int64          `json:"thread"`
	Op      *string         `json:"op"`
	Args    *[]int64        `json:"args"`
	Result  json.RawMessage `json:"result"`
	Call    *int64          `json:"call"`
	Return  *int64          `json:"return"`
}

// record is one parsed operation line (or the meta line, when meta != nil).
type record struct {
	line    int
	meta    []byte
	history int64
	call    int64
	ret     int64
	input   *Input
	result  Value
}

// ReadRecording reads and validates a whole input file against spec.
func ReadRecording(r io.Reader, spec SequentialSpec) (*Recording, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}

	// Parse chunks of lines in parallel; each chunk stops at its first error.
	workers := runtime.GOMAXPROCS(0)
	chunk := (len(lines) + workers - 1) / workers
	if chunk < 1024 {
		chunk = 1024
	}
	nChunks := (len(lines) + chunk - 1) / chunk
	recs := make([][]record, nChunks)
	errs := make([]error, nChunks)
	var wg sync.WaitGroup
	for c := 0; c < nChunks; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			lo, hi := c*chunk, (c+1)*chunk
			if hi > len(lines) {
				hi = len(lines)
			}
			out := make([]record, 0, hi-lo)
			for i := lo; i < hi; i++ {
				line := bytes.TrimSpace(lines[i])
				if len(line) == 0 {
					continue
				}
				rec, err := parseLine(line, i+1, spec)
				if err != nil {
					errs[c] = err
					return
				}
				out = append(out, rec)
			}
			recs[c] = out
		}(c)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	rec := &Recording{}
	byID := make(map[int64]*History)
	first := true
	for _, chunk := range recs {
		for i := range chunk {
			r := &chunk[i]
			if r.meta != nil {
				if !first {
					return nil, &InputError{r.line, `a "meta" line must be the first line of the file`}
				}
				rec.Meta = string(r.meta)
			} else {
				h := byID[r.history]
				if h == nil {
					h = &History{ID: r.history}
					byID[r.history] = h
					rec.Histories = append(rec.Histories, h)
				}
				h.Ops = append(h.Ops, porcupine.Operation{
					Input:    r.input,
					Call:     r.call,
					Output:   r.result,
					Return:   r.ret,
					Metadata: r.input,
				})
			}
			first = false
		}
	}
	sort.Slice(rec.Histories, func(i, j int) bool { return rec.Histories[i].ID < rec.Histories[j].ID })
	for _, h := range rec.Histories {
		if err := assignClients(h); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// assignClients sets each operation's ClientId to its thread's index among
// the history's threads sorted by id (porcupine's visualisation wants dense
// zero-based ids), and checks that each thread's operations do not overlap
// in time: a thread runs one operation at a time, so an overlap means the
// recorder mixed up threads or clocks.
func assignClients(h *History) error {
	byThread := make(map[int64][]int) // thread -> indices into h.Ops
	var threads []int64
	for i := range h.Ops {
		t := h.Ops[i].Input.(*Input).Thread
		if _, ok := byThread[t]; !ok {
			threads = append(threads, t)
		}
		byThread[t] = append(byThread[t], i)
	}
	sort.Slice(threads, func(i, j int) bool { return threads[i] < threads[j] })
	for client, t := range threads {
		idx := byThread[t]
		sort.Slice(idx, func(a, b int) bool {
			x, y := &h.Ops[idx[a]], &h.Ops[idx[b]]
			if x.Call != y.Call {
				return x.Call < y.Call
			}
			return x.Input.(*Input).Line < y.Input.(*Input).Line
		})
		for k, i := range idx {
			h.Ops[i].ClientId = client
			if k == 0 {
				continue
			}
			prev, cur := &h.Ops[idx[k-1]], &h.Ops[i]
			if cur.Call < prev.Return {
				return &InputError{cur.Input.(*Input).Line, fmt.Sprintf(
					"history %d thread %d: operation (call %d) overlaps the thread's operation on line %d (return %d)",
					h.ID, t, cur.Call, prev.Input.(*Input).Line, prev.Return)}
			}
		}
	}
	return nil
}

var fieldKinds = map[string]string{
	"history": "an integer",
	"thread":  "an integer",
	"call":    "an integer",
	"return":  "an integer",
	"op":      "a string",
	"args":    "an array of integers",
	"result":  "an integer, null or an array of integers",
}

// parseLine parses one non-blank line: fastScan for the common case, else
// encoding/json (slowScan), then the checks that need no JSON.
func parseLine(line []byte, lineNo int, spec SequentialSpec) (record, error) {
	f, ok := fastScan(line)
	if !ok {
		var meta []byte
		var err error
		if f, meta, err = slowScan(line, lineNo); err != nil {
			return record{}, err
		}
		if meta != nil {
			return record{line: lineNo, meta: meta}, nil
		}
	}
	if f.call > f.ret {
		return record{}, &InputError{lineNo, fmt.Sprintf(`"call" (%d) is after "return" (%d)`, f.call, f.ret)}
	}
	if err := spec.CheckOp(f.op, f.args, f.result); err != nil {
		return record{}, &InputError{lineNo, err.Error()}
	}
	return record{
		line:    lineNo,
		history: f.history,
		call:    f.call,
		ret:     f.ret,
		input:   &Input{Op: f.op, Args: f.args, Line: lineNo, Thread: f.thread},
		result:  f.result,
	}, nil
}

// slowScan decodes a line with encoding/json. It returns the compacted meta
// value for a meta line, else the operation's fields, or an error naming
// what is wrong.
func slowScan(line []byte, lineNo int) (f fastFields, meta []byte, err error) {
	fail := func(format string, a ...interface{}) (fastFields, []byte, error) {
		return f, nil, &InputError{lineNo, fmt.Sprintf(format, a...)}
	}
	var raw rawLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if i := strings.IndexByte(field, '.'); i >= 0 {
				field = field[:i]
			}
			if kind, ok := fieldKinds[field]; ok {
				return fail("%q must be %s", field, kind)
			}
			return fail("a line must be a JSON object")
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fail("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return fail("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("invalid JSON: trailing data after the object")
	}

	if raw.Meta != nil {
		if raw.History != nil || raw.Thread != nil || raw.Op != nil || raw.Args != nil ||
			raw.Result != nil || raw.Call != nil || raw.Return != nil {
			return fail(`a "meta" line must have no other field`)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw.Meta); err != nil {
			return fail("invalid JSON in \"meta\": %v", err)
		}
		return f, b.Bytes(), nil
	}
	for _, fd := range []struct {
		name    string
		present bool
	}{
		{"history", raw.History != nil}, {"thread", raw.Thread != nil}, {"op", raw.Op != nil},
		{"args", raw.Args != nil}, {"result", raw.Result != nil},
		{"call", raw.Call != nil}, {"return", raw.Return != nil},
	} {
		if !fd.present {
			if fd.name == "result" {
				return fail(`missing "result" (use null for "nothing")`)
			}
			return fail("missing or null %q (must be %s)", fd.name, fieldKinds[fd.name])
		}
	}
	switch {
	case string(raw.Result) == "null":
		f.result = Nothing
	case raw.Result[0] == '[':
		var l []*int64 // pointers: encoding/json would decode [null] as [0]
		if err := json.Unmarshal(raw.Result, &l); err != nil {
			return fail(`"result" must be %s`, fieldKinds["result"])
		}
		ws := make([]int64, len(l))
		for i, p := range l {
			if p == nil {
				return fail(`"result" must be %s`, fieldKinds["result"])
			}
			ws[i] = *p
		}
		f.result = ListOf(ws...)
	default:
		v, err := strconv.ParseInt(string(raw.Result), 10, 64)
		if err != nil {
			return fail(`"result" must be %s`, fieldKinds["result"])
		}
		f.result = Some(v)
	}
	f.history, f.thread, f.op, f.args, f.call, f.ret =
		*raw.History, *raw.Thread, *raw.Op, *raw.Args, *raw.Call, *raw.Return
	return f, nil, nil
}
