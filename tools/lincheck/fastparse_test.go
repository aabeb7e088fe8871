package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

var scanSeeds = []string{
	`{"history": 3, "thread": 1, "op": "insert", "args": [5, 50], "result": 1, "call": 1234, "return": 1300}`,
	`{"history":3,"thread":1,"op":"dequeue","args":[],"result":null,"call":1,"return":2}`,
	`  { "return" : 9 , "call" : -5 , "result" : -9223372036854775808 , "args" : [ -1 , 0 ] , "op" : "x" , "thread" : 0 , "history" : 0 }  `,
	`{"history": 3, "thread": 1, "op": "insert", "args": [5], "result": 9223372036854775808, "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "insert", "args": [05], "result": 1, "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "in\u0073ert", "args": [5], "result": 1, "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "insert", "args": [5], "result": 1e0, "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "insert", "args": [5], "result": 1.0, "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "insert", "args": [5], "result": 1, "call": 1, "return": 2, "history": 4}`,
	`{"History": 3, "thread": 1, "op": "insert", "args": [5], "result": 1, "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "insert", "args": [5,], "result": 1, "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "insert", "args": [5], "result": 1, "call": 1, "return": 2}}`,
	`{"history": 3, "thread": 1, "op": "insert", "args": [5], "result": nul, "call": 1, "return": 2}`,
	`{"history": -0, "thread": 1, "op": "", "args": [5], "result": 1, "call": 1, "return": 2}`,
	`{"meta": {"seed": 1}}`,
	`{}`,
	`{"history":3,"thread":1,"op":"dequeue_batch","args":[2],"result":[],"call":1,"return":2}`,
	`{"history": 3, "thread": 1, "op": "pop_batch", "args": [3], "result": [ -1 , 9223372036854775807,-9223372036854775808 ], "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "pop_batch", "args": [3], "result": [1, "a"], "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "pop_batch", "args": [3], "result": [1,], "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "pop_batch", "args": [3], "result": [[1], 2], "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "pop_batch", "args": [3], "result": [1.0], "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "pop_batch", "args": [3], "result": [9223372036854775808], "call": 1, "return": 2}`,
	`{"history": 3, "thread": 1, "op": "pop_batch", "args": [3], "result": [1, 2, "call": 1, "return": 2}`,
}

// checkScanAgrees: whenever the fast path accepts a line, encoding/json
// accepts it too and decodes the same fields.
func checkScanAgrees(t *testing.T, line []byte) {
	line = bytes.TrimSpace(line)
	fast, ok := fastScan(line)
	if !ok {
		return
	}
	slow, meta, err := slowScan(line, 1)
	if err != nil || meta != nil {
		t.Fatalf("fast path accepts %q, encoding/json says meta=%q err=%v", line, meta, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: fast path %+v, encoding/json %+v", line, fast, slow)
	}
}

func TestFastScanAgrees(t *testing.T) {
	accepted := 0
	for _, s := range scanSeeds {
		checkScanAgrees(t, []byte(s))
		if _, ok := fastScan(bytes.TrimSpace([]byte(s))); ok {
			accepted++
		}
	}
	if accepted != 6 {
		t.Errorf("fast path accepted %d seed lines, want 6", accepted)
	}
	// The recorder's lines (as produced by jsonl) take the fast path.
	if _, ok := fastScan([]byte(scanSeeds[0])); !ok {
		t.Error("fast path rejects the documented example line")
	}
}

// List results, through parseLine: the fast path takes the well-formed
// ones, and bad ones are one-line input errors.
func TestListResults(t *testing.T) {
	cases := []struct {
		result string
		fast   bool   // taken by the fast path
		want   string // the result as Value.String(), or the error
	}{
		{`[]`, true, "[]"},
		{`[ ]`, true, "[]"},
		{`[7]`, true, "[7]"},
		{`[3, -2, 0, -9223372036854775808]`, true, "[3,-2,0,-9223372036854775808]"},
		{`[-0]`, true, "[0]"},
		{`[1, "a"]`, false, `line 7: "result" must be an integer, null or an array of integers`},
		{`[[1]]`, false, `line 7: "result" must be an integer, null or an array of integers`},
		{`[1.5]`, false, `line 7: "result" must be an integer, null or an array of integers`},
		{`[1e3]`, false, `line 7: "result" must be an integer, null or an array of integers`},
		{`[null]`, false, `line 7: "result" must be an integer, null or an array of integers`},
		{`[9223372036854775808]`, false, `line 7: "result" must be an integer, null or an array of integers`},
		{`[1,]`, false, "line 7: invalid JSON"},
		{`[,1]`, false, "line 7: invalid JSON"},
		{`[01]`, false, "line 7: invalid JSON"},
		{`[1 2]`, false, "line 7: invalid JSON"},
		{`null`, true, `line 7: op "dequeue_batch" of model queue returns an array of integers, got null`},
	}
	for _, tc := range cases {
		line := []byte(`{"history": 1, "thread": 1, "op": "dequeue_batch", "args": [4], "result": ` + tc.result + `, "call": 1, "return": 2}`)
		if _, ok := fastScan(line); ok != tc.fast {
			t.Errorf("%s: fast path ok=%v, want %v", tc.result, ok, tc.fast)
		}
		checkScanAgrees(t, line)
		rec, err := parseLine(line, 7, registry["queue"])
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = rec.result.String()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.result, got, tc.want)
		}
	}
}

func FuzzFastScanAgrees(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkScanAgrees(t, line) })
}

// Arbitrary input never panics the reader, whichever model.
func FuzzReadRecording(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add(s + "\n" + scanSeeds[0])
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, name := range modelNames() {
			if rec, err := ReadRecording(bytes.NewReader([]byte(text)), registry[name]); err == nil {
				CheckHistories(ModelOf(registry[name]), rec.Histories, time.Second, true)
			}
		}
	})
}
