package main

// Hand-written histories per model: non-linearizable ones that must be
// rejected, and linearizable ones with heavy overlap (whose valid orders
// differ from the call order) that must be accepted.

import (
	"math/rand"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

type namedHistory struct {
	name string
	ops  []hop
}

// allConcurrent gives every operation its own thread and makes all of them
// overlap, with calls in the listed order and returns in reverse: real time
// then allows any order and only the results constrain it.
func allConcurrent(ops ...hop) []hop {
	n := int64(len(ops))
	for i := range ops {
		ops[i].thread = int64(i)
		ops[i].call = 10 * int64(i)
		ops[i].ret = 10*n + 100 - int64(i)
	}
	return ops
}

// c is an operation whose thread and times allConcurrent fills in.
func c(op string, result interface{}, args ...int64) hop { return o(0, 0, 0, op, result, args...) }

var rejected = map[string][]namedHistory{
	"set": {
		{"contains returns 1 before the only insert starts", []hop{
			o(0, 0, 10, "contains", 1, 5),
			o(1, 11, 20, "insert", 1, 5),
		}},
		{"erase succeeds twice without an insert in between", []hop{
			o(0, 0, 10, "insert", 1, 5),
			o(0, 11, 20, "erase", 1, 5),
			o(1, 21, 30, "erase", 1, 5),
			o(2, 5, 35, "contains", 0, 5),
		}},
		{"insert returns 0 on an empty set", []hop{
			o(0, 0, 10, "insert", 0, 5),
			o(1, 0, 10, "insert", 1, 6),
			o(2, 0, 10, "erase", 0, 7),
		}},
		{"completed insert lost", []hop{
			o(0, 0, 10, "insert", 1, 5, 50),
			o(1, 20, 30, "contains", 0, 5),
		}},
		{"all concurrent: two successful inserts, no successful erase", allConcurrent(
			c("insert", 1, 5), c("insert", 1, 5), c("erase", 0, 5), c("contains", 1, 5),
		)},
	},
	"map": {
		{"find returns a value never inserted", []hop{
			o(0, 0, 10, "insert", 1, 1, 10),
			o(1, 5, 15, "find", 99, 1),
		}},
		{"find returns a stale value after a completed erase and insert", []hop{
			o(0, 0, 10, "insert", 1, 1, 10),
			o(0, 11, 20, "erase", 1, 1),
			o(0, 21, 30, "insert", 1, 1, 20),
			o(1, 31, 40, "find", 10, 1),
		}},
		{"insert overwrote an existing value", []hop{
			o(0, 0, 10, "insert", 1, 1, 10),
			o(1, 11, 20, "insert", 0, 1, 20),
			o(2, 21, 30, "find", 20, 1),
		}},
		{"find misses a completed insert", []hop{
			o(0, 0, 10, "insert", 1, 1, 10),
			o(1, 11, 20, "find", nil, 1),
		}},
		{"find_or_insert inserts over a present key", []hop{
			o(0, 0, 10, "insert", 1, 1, 10),
			o(1, 11, 20, "find_or_insert", nil, 1, 20),
		}},
		{"find_or_insert returns a value that is not the key's", []hop{
			o(0, 0, 10, "insert", 1, 1, 10),
			o(1, 11, 20, "find_or_insert", 20, 1, 20),
		}},
		{"two find_or_inserts of an absent key both insert", allConcurrent(
			c("find_or_insert", nil, 1, 10), c("find_or_insert", nil, 1, 20),
		)},
		{"assign succeeds on an absent key", []hop{
			o(0, 0, 10, "assign", 1, 1, 10),
		}},
		{"assign's value not seen by a later find", []hop{
			o(0, 0, 10, "insert", 1, 1, 10),
			o(1, 11, 20, "assign", 1, 1, 20),
			o(2, 21, 30, "find", 10, 1),
		}},
		{"assign inserted an absent key", []hop{
			o(0, 0, 10, "assign", 0, 1, 10),
			o(1, 11, 20, "find", 10, 1),
		}},
		{"all concurrent: two successful inserts of one key, no erase", allConcurrent(
			c("insert", 1, 1, 10), c("insert", 1, 1, 20), c("find", 10, 1), c("find", nil, 1),
		)},
	},
	"queue": {
		{"non-overlapping enqueues dequeued in reverse order", []hop{
			o(0, 0, 10, "enqueue", nil, 1),
			o(0, 11, 20, "enqueue", nil, 2),
			o(1, 21, 30, "dequeue", 2),
			o(1, 31, 40, "dequeue", 1),
		}},
		{"dequeue empty while an element is certainly present", []hop{
			o(0, 0, 10, "enqueue", nil, 1),
			o(1, 11, 20, "dequeue", nil),
			o(2, 15, 30, "enqueue", nil, 2),
		}},
		{"value dequeued twice", []hop{
			o(0, 0, 10, "enqueue", nil, 1),
			o(1, 11, 20, "dequeue", 1),
			o(2, 11, 20, "dequeue", 1),
		}},
		{"dequeue of a value never enqueued", []hop{
			o(0, 0, 10, "enqueue", nil, 4),
			o(1, 5, 15, "dequeue", 5),
		}},
		{"all concurrent: one enqueue of 1, two dequeues of 1", allConcurrent(
			c("enqueue", nil, 1), c("enqueue", nil, 2), c("dequeue", 1), c("dequeue", 1),
		)},
	},
	"stack": {
		{"non-overlapping pushes popped in FIFO order", []hop{
			o(0, 0, 10, "push", nil, 1),
			o(0, 11, 20, "push", nil, 2),
			o(1, 21, 30, "pop", 1),
			o(1, 31, 40, "pop", 2),
		}},
		{"pop of a value never pushed", []hop{
			o(0, 0, 10, "push", nil, 8),
			o(1, 5, 15, "pop", 7),
		}},
		{"pop empty while an element is certainly present", []hop{
			o(0, 0, 10, "push", nil, 1),
			o(1, 11, 20, "pop", nil),
		}},
		{"value popped twice", []hop{
			o(0, 0, 10, "push", nil, 1),
			o(1, 11, 20, "pop", 1),
			o(2, 11, 20, "pop", 1),
		}},
		{"concurrent pops return 2, 1 and null while 3 stays on top", []hop{
			o(0, 0, 10, "push", nil, 1),
			o(0, 11, 20, "push", nil, 2),
			o(0, 21, 30, "push", nil, 3),
			o(1, 31, 40, "pop", 2),
			o(2, 31, 40, "pop", 1),
			o(3, 31, 40, "pop", nil),
		}},
	},
	"pqueue": {
		{"delete_min returns a larger element while a smaller is certainly present", []hop{
			o(0, 0, 10, "insert", nil, 1),
			o(1, 0, 10, "insert", nil, 5),
			o(2, 20, 30, "delete_min", 5),
		}},
		{"find_min empty while non-empty", []hop{
			o(0, 0, 10, "insert", nil, 3),
			o(1, 11, 20, "find_min", nil),
		}},
		{"single copy deleted twice", []hop{
			o(0, 0, 10, "insert", nil, 3),
			o(1, 11, 20, "delete_min", 3),
			o(2, 11, 20, "delete_min", 3),
		}},
		{"find_min returns a value never inserted", []hop{
			o(0, 0, 10, "insert", nil, 3),
			o(1, 5, 15, "find_min", 2),
		}},
		{"find_min misses a smaller completed insert", []hop{
			o(0, 0, 10, "insert", nil, 3),
			o(0, 11, 20, "insert", nil, 1),
			o(1, 21, 30, "find_min", 3),
		}},
		{"all concurrent: duplicates deleted more often than inserted", allConcurrent(
			c("insert", nil, 5), c("insert", nil, 5), c("insert", nil, 1),
			c("delete_min", 5), c("delete_min", 5), c("delete_min", 5), c("find_min", 1),
		)},
	},
}

var accepted = map[string][]namedHistory{
	"set": {
		{"all concurrent, 8 threads", allConcurrent(
			c("insert", 1, 5), c("insert", 1, 5), c("insert", 0, 5), c("erase", 1, 5),
			c("erase", 1, 5), c("erase", 0, 5), c("contains", 1, 5), c("contains", 0, 5),
		)},
		// Only valid order on key 5: contains0(T1) insert(T0) contains1(T1)
		// erase(T3) insert(T2) erase(T0); calls are T0 T1 T2 T3 T1 T0.
		{"staggered, two keys", []hop{
			o(0, 0, 50, "insert", 1, 5),
			o(1, 5, 25, "contains", 0, 5),
			o(2, 10, 60, "insert", 1, 5),
			o(3, 20, 70, "erase", 1, 5),
			o(1, 30, 80, "contains", 1, 5),
			o(0, 55, 90, "erase", 1, 5),
			o(2, 61, 65, "insert", 1, 6),
			o(3, 71, 75, "contains", 1, 6),
			o(1, 81, 85, "erase", 1, 6),
		}},
	},
	"map": {
		// find->null, insert 10, find->10, erase, insert 20, insert 30 ->0,
		// find->20, erase.
		{"all concurrent, 8 threads", allConcurrent(
			c("insert", 1, 1, 10), c("erase", 1, 1), c("insert", 1, 1, 20), c("find", 10, 1),
			c("find", 20, 1), c("find", nil, 1), c("insert", 0, 1, 30), c("erase", 1, 1),
		)},
		// find_or_insert inserts 10, another finds 10, assign 20, find 20, erase, assign
		// fails, find_or_insert inserts 30.
		{"find_or_insert and assign, all concurrent", allConcurrent(
			c("find", 20, 1), c("find_or_insert", 10, 1, 11), c("assign", 1, 1, 20), c("find_or_insert", nil, 1, 10),
			c("find_or_insert", nil, 1, 30), c("assign", 0, 1, 25), c("erase", 1, 1),
		)},
		{"assign overtaken by an erase, a later insert keeps its value", []hop{
			o(0, 0, 10, "insert", 1, 1, 10),
			o(2, 12, 20, "erase", 1, 1),
			o(1, 13, 40, "assign", 1, 1, 99),
			o(2, 21, 30, "insert", 1, 1, 200),
			o(3, 45, 50, "find", 200, 1),
		}},
		{"staggered, two keys", []hop{
			o(0, 0, 40, "insert", 1, 1, 10),
			o(0, 45, 90, "erase", 1, 1),
			o(1, 5, 50, "find", 10, 1),
			o(1, 55, 70, "insert", 0, 1, 30),
			o(2, 10, 60, "insert", 0, 1, 20),
			o(2, 61, 120, "find", 7, 2),
			o(3, 2, 8, "find", nil, 1),
			o(3, 80, 100, "find", nil, 1),
			o(3, 101, 110, "insert", 1, 2, 7),
		}},
	},
	"queue": {
		// deq->null, enq3, deq3, enq1, enq2, deq1, deq2, enq4.
		{"all concurrent, 8 threads", allConcurrent(
			c("enqueue", nil, 1), c("enqueue", nil, 2), c("enqueue", nil, 3), c("dequeue", 3),
			c("dequeue", 1), c("dequeue", 2), c("dequeue", nil), c("enqueue", nil, 4),
		)},
		// deq->null(T3) enq3(T1) enq1(T0) deq3(T1) enq2(T0) enq4(T3)
		// deq1(T2) deq2(T2) deq4(T0).
		{"staggered, 4 threads", []hop{
			o(0, 0, 30, "enqueue", nil, 1),
			o(0, 31, 60, "enqueue", nil, 2),
			o(0, 61, 100, "dequeue", 4),
			o(1, 5, 20, "enqueue", nil, 3),
			o(1, 25, 40, "dequeue", 3),
			o(2, 35, 70, "dequeue", 1),
			o(2, 71, 90, "dequeue", 2),
			o(3, 0, 3, "dequeue", nil),
			o(3, 45, 65, "enqueue", nil, 4),
		}},
	},
	"stack": {
		// pop->null, push2, pop2, push1, push3, pop3, pop1, push4.
		{"all concurrent, 8 threads", allConcurrent(
			c("push", nil, 1), c("push", nil, 2), c("push", nil, 3), c("pop", 2),
			c("pop", 3), c("pop", 1), c("pop", nil), c("push", nil, 4),
		)},
		// pop->null(T3) push2(T1) push1(T0) push3(T2) pop3(T0) pop1(T1)
		// pop2(T2) pop->null(T3).
		{"staggered, 4 threads", []hop{
			o(0, 0, 50, "push", nil, 1),
			o(0, 51, 70, "pop", 3),
			o(1, 5, 15, "push", nil, 2),
			o(1, 60, 90, "pop", 1),
			o(2, 10, 55, "push", nil, 3),
			o(2, 91, 100, "pop", 2),
			o(3, 1, 4, "pop", nil),
			o(3, 101, 110, "pop", nil),
		}},
	},
	"pqueue": {
		// find_min->null, insert5, find_min->5, insert1, delete_min->1,
		// delete_min->5, insert5, delete_min->5.
		{"all concurrent, 8 threads, duplicates", allConcurrent(
			c("insert", nil, 5), c("insert", nil, 1), c("insert", nil, 5), c("delete_min", 5),
			c("delete_min", 1), c("find_min", 5), c("find_min", nil), c("delete_min", 5),
		)},
		// insert5(T0) find_min5(T2) insert7(T3) insert3(T1) find_min3(T1)
		// delete_min3(T0) delete_min5(T3) delete_min7(T2) delete_min->null(T1).
		{"staggered, 4 threads", []hop{
			o(0, 0, 40, "insert", nil, 5),
			o(0, 41, 60, "delete_min", 3),
			o(1, 5, 50, "insert", nil, 3),
			o(1, 51, 55, "find_min", 3),
			o(1, 101, 110, "delete_min", nil),
			o(2, 10, 20, "find_min", 5),
			o(2, 70, 100, "delete_min", 7),
			o(3, 25, 45, "insert", nil, 7),
			o(3, 61, 80, "delete_min", 5),
		}},
	},
}

func TestRejectsNonLinearizable(t *testing.T) {
	for _, model := range modelNames() {
		if len(rejected[model]) < 3 {
			t.Errorf("model %s: only %d non-linearizable histories", model, len(rejected[model]))
		}
		for _, h := range rejected[model] {
			t.Run(model+"/"+h.name, func(t *testing.T) {
				if got := check(t, model, h.ops); got != porcupine.Illegal {
					t.Errorf("porcupine says %v, want Illegal", got)
				}
				if bruteForce(registry[model], h.ops) {
					t.Errorf("brute force finds a linearization")
				}
			})
		}
	}
}

func TestAcceptsHeavyOverlap(t *testing.T) {
	for _, model := range modelNames() {
		if len(accepted[model]) < 2 {
			t.Errorf("model %s: only %d linearizable histories", model, len(accepted[model]))
		}
		for _, h := range accepted[model] {
			t.Run(model+"/"+h.name, func(t *testing.T) {
				if got := check(t, model, h.ops); got != porcupine.Ok {
					t.Errorf("porcupine says %v, want Ok", got)
				}
				if !bruteForce(registry[model], h.ops) {
					t.Errorf("brute force finds no linearization")
				}
				// The call order itself must not be a valid order, or the
				// history would be too easy.
				sorted := append([]hop(nil), h.ops...)
				sortByCall(sorted)
				if sequentialOK(registry[model], sorted) {
					t.Errorf("the call order is already a valid sequential order")
				}
			})
		}
	}
}

func sortByCall(ops []hop) {
	for i := 1; i < len(ops); i++ {
		for j := i; j > 0 && ops[j].call < ops[j-1].call; j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
}

func sequentialOK(spec SequentialSpec, ops []hop) bool {
	s := spec.Init()
	for _, op := range ops {
		var res Value
		s, res = spec.Apply(s, op.op, op.args)
		if res != op.result {
			return false
		}
	}
	return true
}

// A violation on one key among many is still found.
func TestSetViolationOnOneKeyAmongMany(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var ops []hop
	for k := int64(0); k < 50; k++ {
		key := k
		for _, op := range genLinearizable(r, registry["set"], func(r *rand.Rand) (string, []int64) {
			return []string{"insert", "erase", "contains"}[r.Intn(3)], []int64{key}
		}, 3, 12) {
			op.call += k * 7 // interleave the keys in time
			op.ret += k * 7
			op.thread += 3 * k
			ops = append(ops, op)
		}
	}
	if got := check(t, "set", ops); got != porcupine.Ok {
		t.Fatalf("linearizable 50-key history: porcupine says %v", got)
	}
	// Key 37: replace its operations by a contains that returns 1 although
	// the key is never inserted.
	var bad []hop
	for _, op := range ops {
		if op.args[0] != 37 {
			bad = append(bad, op)
		}
	}
	bad = append(bad, o(1000, 1100, 1200, "contains", 1, 37))
	if got := check(t, "set", bad); got != porcupine.Illegal {
		t.Fatalf("violation on key 37 only: porcupine says %v, want Illegal", got)
	}
	rec := load(t, "set", jsonl("", 0, bad))
	if parts := ModelOf(registry["set"]).Partition(rec.Histories[0].Ops); len(parts) != 50 {
		t.Fatalf("expected 50 partitions, got %d", len(parts))
	}
}

// A large linearizable multi-key set history (many threads, many keys, heavy
// overlap) is accepted quickly thanks to per-key partitioning.
func TestLargeMultiKeySetHistoryIsFast(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	ops := genLinearizable(r, registry["set"], func(r *rand.Rand) (string, []int64) {
		return []string{"insert", "erase", "contains"}[r.Intn(3)], []int64{int64(r.Intn(200))}
	}, 16, 5000)
	start := time.Now()
	if got := check(t, "set", ops); got != porcupine.Ok {
		t.Fatalf("porcupine says %v", got)
	}
	t.Logf("5000 ops, 16 threads, 200 keys: %v", time.Since(start))
}

// Property test: on random tiny histories (linearizable ones with one result
// possibly corrupted), porcupine with our models agrees with brute force,
// and the partitioned set/map models agree with unpartitioned ones.
func TestAgreesWithBruteForce(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, model := range modelNames() {
		spec := registry[model]
		m := ModelOf(spec)
		whole := m
		whole.Partition = nil
		counts := map[bool]int{}
		lists := 0 // mutated list results (batch operations)
		for iter := 0; iter < 1500; iter++ {
			ops := genLinearizable(r, spec, opGens[model], 2+r.Intn(3), 1+r.Intn(8))
			if r.Intn(3) > 0 {
				i := r.Intn(len(ops))
				if ops[i].result.IsList {
					lists++
				}
				ops[i].result = mutate(r, ops[i].result)
			}
			want := bruteForce(spec, ops)
			counts[want]++
			rec := load(t, model, jsonl("", 0, ops))
			got := porcupine.CheckOperations(m, rec.Histories[0].Ops)
			gotWhole := porcupine.CheckOperations(whole, rec.Histories[0].Ops)
			if got != want || gotWhole != want {
				t.Fatalf("%s: porcupine=%v unpartitioned=%v brute force=%v on\n%s",
					model, got, gotWhole, want, jsonl("", 0, ops))
			}
		}
		if counts[true] < 100 || counts[false] < 100 {
			t.Errorf("%s: unbalanced property test: %v", model, counts)
		}
		if (model == "queue" || model == "stack") && lists < 50 {
			t.Errorf("%s: only %d mutated batch results", model, lists)
		}
	}
}

// Many random linearizable histories of the expected shape (3-4 threads,
// 5-50 ops) are all accepted.
func TestRandomLinearizableAccepted(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for _, model := range modelNames() {
		var hs [][]hop
		for i := 0; i < 1000; i++ {
			hs = append(hs, genLinearizable(r, registry[model], opGens[model], 3+r.Intn(2), 5+r.Intn(46)))
		}
		rec := load(t, model, jsonl(`{"m":1}`, 0, hs...))
		for i, v := range CheckHistories(ModelOf(registry[model]), rec.Histories, time.Minute, false) {
			if v.Result != porcupine.Ok {
				t.Fatalf("%s: history %d: %v\n%s", model, i, v.Result, jsonl("", i, hs[i]))
			}
		}
	}
}

func TestDescriptions(t *testing.T) {
	cases := []struct {
		model string
		ops   []hop
		want  string
	}{
		{"set", []hop{c("insert", 1, 3), c("insert", 1, 1)}, "{1, 3}"},
		{"map", []hop{c("insert", 1, 3, 30), c("insert", 1, 1, 10)}, "{1: 10, 3: 30}"},
		{"queue", []hop{c("enqueue", nil, 3), c("enqueue", nil, 1), c("dequeue", 3), c("enqueue", nil, 2)}, "front [1, 2] back"},
		{"stack", []hop{c("push", nil, 3), c("push", nil, 1)}, "bottom [3, 1] top"},
		{"pqueue", []hop{c("insert", nil, 3), c("insert", nil, -1), c("insert", nil, 3)}, "{-1, 3, 3}"},
	}
	for _, tc := range cases {
		spec := registry[tc.model]
		s := spec.Init()
		for _, op := range tc.ops {
			var res Value
			s, res = spec.Apply(s, op.op, op.args)
			if res != op.result {
				t.Fatalf("%s: %s%v -> %v, want %v", tc.model, op.op, op.args, res, op.result)
			}
		}
		if got := spec.DescribeState(s); got != tc.want {
			t.Errorf("%s: state %q, want %q", tc.model, got, tc.want)
		}
	}
	if got := describeOperation(&Input{Op: "insert", Args: []int64{5, 50}}, Some(1)); got != "insert(5, 50) -> 1" {
		t.Errorf("describeOperation: %q", got)
	}
	if got := describeOperation(&Input{Op: "dequeue", Args: []int64{}}, Nothing); got != "dequeue() -> null" {
		t.Errorf("describeOperation: %q", got)
	}
}
