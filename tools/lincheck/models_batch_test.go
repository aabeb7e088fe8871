package main

// Tests of the queue's and stack's batch operations: sequential semantics,
// input validation, list results, and histories they must reject and accept
// (joined to the tables that TestRejectsNonLinearizable,
// TestAcceptsHeavyOverlap and the property tests run for every model).

import (
	"math"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// l is a list result.
func l(items ...int64) []int64 {
	if items == nil {
		return []int64{}
	}
	return items
}

// named is the history of a model called name in table (accepted, rejected).
func named(table map[string][]namedHistory, model, name string) []hop {
	for _, h := range table[model] {
		if h.name == name {
			return h.ops
		}
	}
	panic("no history " + model + "/" + name)
}

func init() {
	rejected["queue"] = append(rejected["queue"],
		// A batch is contiguous, whichever order the two batches take.
		namedHistory{"items of two overlapping enqueue_batch dequeued interleaved", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 2),
			o(1, 0, 10, "enqueue_batch", nil, 10, 2),
			o(2, 20, 30, "dequeue_batch", l(1, 10, 2, 11), 4),
		}},
		namedHistory{"a single enqueue lands inside a batch", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 3),
			o(1, 0, 10, "enqueue", nil, 9),
			o(2, 20, 30, "dequeue", 1),
			o(2, 31, 40, "dequeue", 9),
			o(2, 41, 50, "dequeue", 2),
		}},
		namedHistory{"dequeue_batch takes fewer than max while more are certainly present", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 3),
			o(1, 11, 20, "dequeue_batch", l(1, 2), 3),
		}},
		namedHistory{"dequeue_batch returns its items back first", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 2),
			o(1, 11, 20, "dequeue_batch", l(2, 1), 2),
		}},
		namedHistory{"dequeue_batch empty while an element is certainly present", []hop{
			o(0, 0, 10, "enqueue", nil, 5),
			o(1, 11, 20, "dequeue_batch", l(), 1),
		}},
		namedHistory{"dequeue_batch sees part of a concurrent enqueue_batch", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 3),
			o(1, 0, 10, "dequeue_batch", l(1), 5),
			o(1, 20, 30, "dequeue", 2),
		}},
		namedHistory{"an item taken by two overlapping dequeue_batch", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 2),
			o(1, 11, 20, "dequeue_batch", l(1), 1),
			o(2, 11, 20, "dequeue_batch", l(1, 2), 2),
		}},
	)
	accepted["queue"] = append(accepted["queue"],
		// deq_batch(2)->[], enq_batch(10,2), enq_batch(1,2),
		// deq_batch(3)->[10,11,1], deq->2.
		namedHistory{"all concurrent batches, the later batch first", allConcurrent(
			c("enqueue_batch", nil, 1, 2), c("enqueue_batch", nil, 10, 2),
			c("dequeue_batch", l(10, 11, 1), 3), c("dequeue", 2), c("dequeue_batch", l(), 2),
		)},
		// enq_batch(1,3)(T1) enq5(T0) deq_batch(2)->[1,2](T2) deq->3(T2)
		// deq_batch(9)->[5](T3: fewer than max, all there is).
		namedHistory{"staggered, single and batch operations", []hop{
			o(0, 0, 30, "enqueue", nil, 5),
			o(1, 5, 20, "enqueue_batch", nil, 1, 3),
			o(2, 25, 40, "dequeue_batch", l(1, 2), 2),
			o(2, 41, 50, "dequeue", 3),
			o(3, 45, 60, "dequeue_batch", l(5), 9),
		}},
	)

	rejected["stack"] = append(rejected["stack"],
		namedHistory{"items of two overlapping push_batch popped interleaved", []hop{
			o(0, 0, 10, "push_batch", nil, 1, 2),
			o(1, 0, 10, "push_batch", nil, 10, 2),
			o(2, 20, 30, "pop_batch", l(11, 2, 10, 1), 4),
		}},
		namedHistory{"pop_batch returns bottom first", []hop{
			o(0, 0, 10, "push_batch", nil, 1, 3),
			o(1, 11, 20, "pop_batch", l(1, 2, 3), 3),
		}},
		namedHistory{"pop_batch takes fewer than max while more are certainly present", []hop{
			o(0, 0, 10, "push_batch", nil, 1, 3),
			o(1, 11, 20, "pop_batch", l(3), 2),
		}},
		namedHistory{"pop_batch empty while an element is certainly present", []hop{
			o(0, 0, 10, "push", nil, 4),
			o(1, 11, 20, "pop_batch", l(), 1),
		}},
		namedHistory{"push_batch leaves its first item on top", []hop{
			o(0, 0, 10, "push_batch", nil, 1, 3),
			o(1, 11, 20, "top", 1),
		}},
		namedHistory{"pop_batch sees part of a concurrent push_batch", []hop{
			o(0, 0, 10, "push_batch", nil, 1, 3),
			o(1, 0, 10, "pop_batch", l(3), 5),
			o(1, 20, 30, "pop", 2),
		}},
	)
	accepted["stack"] = append(accepted["stack"],
		// pop_batch(1)->[], push_batch(10,2), push_batch(1,2),
		// pop_batch(3)->[2,1,11], pop->10.
		namedHistory{"all concurrent batches, the later batch first", allConcurrent(
			c("push_batch", nil, 1, 2), c("push_batch", nil, 10, 2),
			c("pop_batch", l(2, 1, 11), 3), c("pop", 10), c("pop_batch", l(), 1),
		)},
		// push_batch(1,3)(T1) push5(T0) pop_batch(2)->[5,3](T2) pop->2(T2)
		// pop_batch(9)->[1](T3: fewer than max, all there is).
		namedHistory{"staggered, single and batch operations", []hop{
			o(0, 0, 30, "push", nil, 5),
			o(1, 5, 20, "push_batch", nil, 1, 3),
			o(2, 25, 40, "pop_batch", l(5, 3), 2),
			o(2, 41, 50, "pop", 2),
			o(3, 45, 60, "pop_batch", l(1), 9),
		}},
	)
}

func TestBatchSequential(t *testing.T) {
	type step struct {
		op     string
		args   []int64
		result interface{} // as for o()
	}
	cases := []struct {
		name  string
		model string
		steps []step
		state string // DescribeState at the end
	}{
		{"queue: batches keep their order and the queue's", "queue", []step{
			{"dequeue_batch", []int64{2}, l()},
			{"enqueue_batch", []int64{5, 3}, nil},
			{"enqueue", []int64{1}, nil},
			{"enqueue_batch", []int64{-2, 2}, nil},
			{"dequeue_batch", []int64{2}, l(5, 6)},
			{"dequeue", nil, 7},
			{"dequeue_batch", []int64{1}, l(1)},
		}, "front [-2, -1] back"},
		{"queue: dequeue_batch takes what there is", "queue", []step{
			{"enqueue_batch", []int64{7, 1}, nil},
			{"enqueue", []int64{3}, nil},
			{"dequeue_batch", []int64{9}, l(7, 3)},
			{"dequeue_batch", []int64{9}, l()},
			{"dequeue", nil, nil},
		}, "front [] back"},
		// The harness's items are uint64: consecutive ones wrap like int64.
		{"queue: items wrap around", "queue", []step{
			{"enqueue_batch", []int64{math.MaxInt64, 2}, nil},
			{"dequeue_batch", []int64{2}, l(math.MaxInt64, math.MinInt64)},
		}, "front [] back"},
		{"stack: a batch's last item ends on top", "stack", []step{
			{"pop_batch", []int64{1}, l()},
			{"push_batch", []int64{5, 3}, nil},
			{"top", nil, 7},
			{"push", []int64{1}, nil},
			{"pop_batch", []int64{2}, l(1, 7)},
			{"push_batch", []int64{-1, 2}, nil},
			{"pop", nil, 0},
		}, "bottom [5, 6, -1] top"},
		{"stack: pop_batch takes what there is", "stack", []step{
			{"push", []int64{4}, nil},
			{"push_batch", []int64{1, 2}, nil},
			{"pop_batch", []int64{5}, l(2, 1, 4)},
			{"pop_batch", []int64{5}, l()},
			{"pop", nil, nil},
		}, "bottom [] top"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := registry[tc.model]
			s := spec.Init()
			for _, st := range tc.steps {
				want := o(0, 0, 0, st.op, st.result, st.args...)
				if err := spec.CheckOp(want.op, want.args, want.result); err != nil {
					t.Fatalf("CheckOp: %v", err)
				}
				before := spec.DescribeState(s)
				next, got := spec.Apply(s, want.op, want.args)
				if got != want.result {
					t.Fatalf("%s%v in %s -> %v, want %v", want.op, want.args, before, got, want.result)
				}
				if spec.DescribeState(s) != before {
					t.Fatalf("%s%v modified its input state %s", want.op, want.args, before)
				}
				s = next
			}
			if got := spec.DescribeState(s); got != tc.state {
				t.Errorf("state %q, want %q", got, tc.state)
			}
		})
	}
}

func TestListValue(t *testing.T) {
	if (Value{}) != Nothing || ListOf() == Nothing || ListOf(0) == Some(0) || ListOf(1, 2) == ListOf(2, 1) {
		t.Error("list values compare wrongly")
	}
	if ListOf(1, 2) != ListOf(1, 2) || ListOf() != listValue("") {
		t.Error("equal lists compare unequal")
	}
	seen := map[Value]bool{ListOf(1, 2): true}
	if !seen[ListOf(1, 2)] || seen[ListOf(1)] {
		t.Error("list values as map keys")
	}
	for v, want := range map[Value]string{
		Nothing: "null", Some(-3): "-3", ListOf(): "[]", ListOf(5): "[5]",
		ListOf(1, -2, math.MinInt64): "[1,-2,-9223372036854775808]",
	} {
		if got := v.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	if got := describeOperation(&Input{Op: "dequeue_batch", Args: []int64{3}}, ListOf(1, 2)); got != "dequeue_batch(3) -> [1,2]" {
		t.Errorf("describeOperation: %q", got)
	}
}

func TestBatchCheckOp(t *testing.T) {
	cases := []struct {
		model  string
		op     string
		args   []int64
		result Value
		want   string // "" for no error, else a substring of the error
	}{
		{"queue", "enqueue_batch", []int64{1, 2}, Nothing, ""},
		{"queue", "enqueue_batch", []int64{1, maxBatch}, Nothing, ""},
		{"queue", "enqueue_batch", []int64{1, 0}, Nothing, `op "enqueue_batch" of model queue: count must be in 1..65536, got 0`},
		{"queue", "enqueue_batch", []int64{1, -3}, Nothing, "count must be in 1..65536, got -3"},
		{"queue", "enqueue_batch", []int64{1, maxBatch + 1}, Nothing, "count must be in 1..65536, got 65537"},
		{"queue", "enqueue_batch", []int64{1}, Nothing, `op "enqueue_batch" of model queue takes 2 argument(s), got 1`},
		{"queue", "enqueue_batch", []int64{1, 2}, ListOf(), `op "enqueue_batch" of model queue returns an integer or null, got []`},
		{"queue", "dequeue_batch", []int64{3}, ListOf(1, 2), ""},
		{"queue", "dequeue_batch", []int64{math.MaxInt64}, ListOf(), ""},
		{"queue", "dequeue_batch", []int64{0}, ListOf(), `op "dequeue_batch" of model queue: max must be >= 1, got 0`},
		{"queue", "dequeue_batch", []int64{}, ListOf(), "takes 1 argument(s), got 0"},
		{"queue", "dequeue_batch", []int64{3}, Nothing, `op "dequeue_batch" of model queue returns an array of integers, got null`},
		{"queue", "dequeue_batch", []int64{3}, Some(1), "returns an array of integers, got 1"},
		{"queue", "dequeue", []int64{}, ListOf(1), `op "dequeue" of model queue returns an integer or null, got [1]`},
		{"stack", "push_batch", []int64{-5, 3}, Nothing, ""},
		{"stack", "push_batch", []int64{1, 0}, Nothing, `op "push_batch" of model stack: count must be in 1..65536, got 0`},
		{"stack", "pop_batch", []int64{2}, ListOf(3, 2), ""},
		{"stack", "pop_batch", []int64{-1}, ListOf(), `op "pop_batch" of model stack: max must be >= 1, got -1`},
		{"stack", "pop_batch", []int64{2}, Nothing, "returns an array of integers, got null"},
		{"stack", "top", []int64{}, ListOf(), `op "top" of model stack returns an integer or null, got []`},
		{"set", "contains", []int64{5}, ListOf(1), `op "contains" of model set returns an integer or null, got [1]`},
		{"map", "find", []int64{5}, ListOf(), "returns an integer or null, got []"},
		{"set", "dequeue_batch", []int64{1}, ListOf(), `unknown op "dequeue_batch" for model set`},
	}
	for _, tc := range cases {
		err := registry[tc.model].CheckOp(tc.op, tc.args, tc.result)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s%v -> %v: unexpected error %v", tc.model, tc.op, tc.args, tc.result, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %s%v -> %v: error %v, want %q", tc.model, tc.op, tc.args, tc.result, err, tc.want)
		}
	}
}

// Histories whose call order may well be valid (so not in `accepted`), and
// more that must be rejected, with the verdict each must get.
func TestBatchHistories(t *testing.T) {
	overlapping := func(in string, out string, res []int64) []hop {
		return []hop{
			o(0, 0, 10, in, nil, 1, 2),
			o(1, 0, 10, in, nil, 10, 2),
			o(2, 20, 30, out, res, 4),
		}
	}
	cases := []struct {
		name  string
		model string
		ops   []hop
		want  porcupine.CheckResult
	}{
		{"overlapping enqueue_batch, first batch first", "queue", overlapping("enqueue_batch", "dequeue_batch", l(1, 2, 10, 11)), porcupine.Ok},
		{"overlapping enqueue_batch, second batch first", "queue", overlapping("enqueue_batch", "dequeue_batch", l(10, 11, 1, 2)), porcupine.Ok},
		{"overlapping enqueue_batch, interleaved", "queue", overlapping("enqueue_batch", "dequeue_batch", l(1, 10, 11, 2)), porcupine.Illegal},
		{"overlapping enqueue_batch, one missing", "queue", overlapping("enqueue_batch", "dequeue_batch", l(1, 2, 10)), porcupine.Illegal},
		{"overlapping push_batch, first batch on top", "stack", overlapping("push_batch", "pop_batch", l(2, 1, 11, 10)), porcupine.Ok},
		{"overlapping push_batch, second batch on top", "stack", overlapping("push_batch", "pop_batch", l(11, 10, 2, 1)), porcupine.Ok},
		{"overlapping push_batch, interleaved", "stack", overlapping("push_batch", "pop_batch", l(11, 2, 10, 1)), porcupine.Illegal},
		{"two dequeue_batch split a batch", "queue", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 3),
			o(1, 11, 20, "dequeue_batch", l(1, 2), 2),
			o(2, 11, 20, "dequeue_batch", l(3), 2),
		}, porcupine.Ok},
		{"dequeue_batch concurrent with enqueue_batch: none or all", "queue", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 3),
			o(1, 0, 10, "dequeue_batch", l(), 5),
			o(2, 0, 10, "dequeue_batch", l(1, 2, 3), 5),
		}, porcupine.Ok},
		{"a dequeue takes a batch's front, dequeue_batch the rest", "queue", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 3),
			o(1, 11, 20, "dequeue", 1),
			o(1, 21, 30, "dequeue_batch", l(2, 3), 5),
		}, porcupine.Ok},
		{"a dequeue takes a batch's middle", "queue", []hop{
			o(0, 0, 10, "enqueue_batch", nil, 1, 3),
			o(1, 11, 20, "dequeue", 2),
		}, porcupine.Illegal},
		{"a pop takes a batch's top, pop_batch the rest", "stack", []hop{
			o(0, 0, 10, "push_batch", nil, 1, 3),
			o(1, 11, 20, "pop", 3),
			o(1, 21, 30, "pop_batch", l(2, 1), 5),
		}, porcupine.Ok},
		{"a pop_batch item pushed again and popped", "stack", []hop{
			o(0, 0, 10, "push_batch", nil, 1, 2),
			o(1, 11, 20, "pop_batch", l(2), 1),
			o(1, 21, 30, "push_batch", nil, 2, 1),
			o(1, 31, 40, "pop_batch", l(2, 1), 2),
		}, porcupine.Ok},
	}
	for _, tc := range cases {
		t.Run(tc.model+"/"+tc.name, func(t *testing.T) {
			if got := check(t, tc.model, tc.ops); got != tc.want {
				t.Errorf("porcupine says %v, want %v", got, tc.want)
			}
			if bruteForce(registry[tc.model], tc.ops) != (tc.want == porcupine.Ok) {
				t.Errorf("brute force disagrees with %v", tc.want)
			}
		})
	}
}
