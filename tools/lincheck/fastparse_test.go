package main

import (
	"bytes"
	"reflect"
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
	if accepted != 4 {
		t.Errorf("fast path accepted %d seed lines, want 4", accepted)
	}
	// The recorder's lines (as produced by jsonl) take the fast path.
	if _, ok := fastScan([]byte(scanSeeds[0])); !ok {
		t.Error("fast path rejects the documented example line")
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
