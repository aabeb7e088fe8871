package main

// Test helpers: building histories, rendering them as the recorder's JSON
// lines, a random generator of linearizable histories, and a brute-force
// linearizability oracle to cross-check porcupine + our models.

import (
	"bytes"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// hop is one recorded operation of a test history.
type hop struct {
	thread    int64
	call, ret int64
	op        string
	args      []int64
	result    Value
}

// o builds a hop: result is nil (null), an int, or a []int64 (a list).
func o(thread, call, ret int64, op string, result interface{}, args ...int64) hop {
	h := hop{thread: thread, call: call, ret: ret, op: op, args: args}
	switch r := result.(type) {
	case int:
		h.result = Some(int64(r))
	case []int64:
		h.result = ListOf(r...)
	}
	if h.args == nil {
		h.args = []int64{}
	}
	return h
}

// jsonl renders histories (history id = index + first) as input lines.
func jsonl(meta string, first int, histories ...[]hop) string {
	var b strings.Builder
	if meta != "" {
		fmt.Fprintf(&b, "{\"meta\": %s}\n", meta)
	}
	for i, h := range histories {
		for _, op := range h {
			args := make([]string, len(op.args))
			for k, a := range op.args {
				args[k] = strconv.FormatInt(a, 10)
			}
			fmt.Fprintf(&b, `{"history": %d, "thread": %d, "op": %q, "args": [%s], "result": %s, "call": %d, "return": %d}`+"\n",
				first+i, op.thread, op.op, strings.Join(args, ", "), op.result, op.call, op.ret)
		}
	}
	return b.String()
}

// load parses JSON lines for a model, failing the test on input errors.
func load(t testing.TB, model string, text string) *Recording {
	t.Helper()
	rec, err := ReadRecording(strings.NewReader(text), registry[model])
	if err != nil {
		t.Fatalf("ReadRecording: %v", err)
	}
	return rec
}

// check runs porcupine on one hand-written history (through the parser).
func check(t testing.TB, model string, ops []hop) porcupine.CheckResult {
	t.Helper()
	rec := load(t, model, jsonl("", 0, ops))
	v := CheckHistories(ModelOf(registry[model]), rec.Histories, time.Minute, true)
	return v[0].Result
}

// opGen draws a random operation of a model with small keys/values.
type opGen func(r *rand.Rand) (string, []int64)

var opGens = map[string]opGen{
	"set": func(r *rand.Rand) (string, []int64) {
		return []string{"insert", "erase", "contains"}[r.Intn(3)], []int64{int64(r.Intn(4))}
	},
	"map": func(r *rand.Rand) (string, []int64) {
		k := int64(r.Intn(3))
		switch r.Intn(5) {
		case 0:
			return "insert", []int64{k, int64(r.Intn(3))}
		case 1:
			return "erase", []int64{k}
		case 2:
			return "find_or_insert", []int64{k, int64(r.Intn(3))}
		case 3:
			return "assign", []int64{k, int64(r.Intn(3))}
		}
		return "find", []int64{k}
	},
	"queue": withBatches(func(r *rand.Rand) (string, []int64) {
		if r.Intn(2) == 0 {
			return "enqueue", []int64{int64(r.Intn(4))}
		}
		return "dequeue", []int64{}
	}, "enqueue_batch", "dequeue_batch"),
	"stack": withBatches(func(r *rand.Rand) (string, []int64) {
		if r.Intn(2) == 0 {
			return "push", []int64{int64(r.Intn(4))}
		}
		return "pop", []int64{}
	}, "push_batch", "pop_batch"),
	"pqueue": func(r *rand.Rand) (string, []int64) {
		switch r.Intn(3) {
		case 0:
			return "insert", []int64{int64(r.Intn(4))}
		case 1:
			return "delete_min", []int64{}
		}
		return "find_min", []int64{}
	},
}

// withBatches makes a third of single's operations batches of 1-3 items
// (small values, so that batches and single items share values).
func withBatches(single opGen, in, out string) opGen {
	return func(r *rand.Rand) (string, []int64) {
		switch r.Intn(6) {
		case 0:
			return in, []int64{int64(r.Intn(4)), int64(1 + r.Intn(3))}
		case 1:
			return out, []int64{int64(1 + r.Intn(3))}
		}
		return single(r)
	}
}

// mutate returns a random result of v's kind (the input rejects a list
// result for a non-list op, and the reverse), often a wrong one. A list
// loses its order or its last item (near misses), or is replaced.
func mutate(r *rand.Rand, v Value) Value {
	if v.IsList {
		l := make([]int64, v.L.n())
		for i := range l {
			l[i] = v.L.at(i)
		}
		switch {
		case len(l) >= 2 && r.Intn(3) == 0:
			l[0], l[1] = l[1], l[0]
		case len(l) >= 1 && r.Intn(2) == 0:
			l = l[:len(l)-1]
		default:
			l = l[:0]
			for n := r.Intn(4); n > 0; n-- {
				l = append(l, int64(r.Intn(4)))
			}
		}
		return ListOf(l...)
	}
	if r.Intn(4) == 0 {
		return Nothing
	}
	return Some(int64(r.Intn(4)))
}

// genLinearizable simulates `threads` threads running `total` operations
// against the sequential spec: at each step a random thread either calls its
// next operation, reaches the linearization point of its pending operation
// (where the spec computes the result), or returns. The history is thus
// linearizable by construction, with arbitrary overlap.
func genLinearizable(r *rand.Rand, spec SequentialSpec, gen opGen, threads, total int) []hop {
	const (
		idle = iota
		called
		linearized
	)
	type thr struct {
		phase int
		left  int
		cur   hop
	}
	ts := make([]thr, threads)
	for i := 0; i < total; i++ {
		ts[r.Intn(threads)].left++
	}
	state := spec.Init()
	var out []hop
	var clock int64 = 1000
	for {
		var active []int
		for i := range ts {
			if ts[i].left > 0 || ts[i].phase != idle {
				active = append(active, i)
			}
		}
		if len(active) == 0 {
			return out
		}
		ti := active[r.Intn(len(active))]
		t := &ts[ti]
		switch t.phase {
		case idle:
			op, args := gen(r)
			t.cur = hop{thread: int64(ti), call: clock, op: op, args: args}
			t.left--
			t.phase = called
		case called:
			state, t.cur.result = spec.Apply(state, t.cur.op, t.cur.args)
			t.phase = linearized
		default:
			t.cur.ret = clock
			out = append(out, t.cur)
			t.phase = idle
		}
		clock += 1 + int64(r.Intn(5))
	}
}

// bruteForce decides linearizability by trying every real-time-consistent
// order (closed intervals: a precedes b iff a.ret < b.call). For tiny
// histories only.
func bruteForce(spec SequentialSpec, ops []hop) bool {
	done := make([]bool, len(ops))
	var rec func(state State, n int) bool
	rec = func(state State, n int) bool {
		if n == len(ops) {
			return true
		}
	next:
		for i := range ops {
			if done[i] {
				continue
			}
			for j := range ops {
				if !done[j] && j != i && ops[j].ret < ops[i].call {
					continue next // j must come first
				}
			}
			ns, res := spec.Apply(state, ops[i].op, ops[i].args)
			if res != ops[i].result {
				continue
			}
			done[i] = true
			ok := rec(ns, n+1)
			done[i] = false
			if ok {
				return true
			}
		}
		return false
	}
	return rec(spec.Init(), 0)
}

// runCLI runs the command in-process.
func runCLI(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}
