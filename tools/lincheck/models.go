package main

// The built-in sequential specifications. Each is a SequentialSpec over a
// packed state (see packed.go). To add a structure, write a type like these
// and Register it in init().

func init() {
	Register(setSpec{})
	Register(mapSpec{})
	Register(queueSpec{})
	Register(stackSpec{})
	Register(pqueueSpec{})
	Register(oracleSpec{})
	Register(sortedSetSpec{})
	Register(zsetsSpec{})
}

// packedState provides Init, Equal and Hash for specs whose state is a packed.
type packedState struct{}

func (packedState) Init() State           { return packed("") }
func (packedState) Equal(a, b State) bool { return a.(packed) == b.(packed) }
func (packedState) Hash(s State) uint64   { return s.(packed).hash() }

// keyedOps partitions by the first argument (the key).
type keyedOps struct{}

func (keyedOps) PartitionKey(op string, args []int64) (int64, bool) { return args[0], true }

// ---------------------------------------------------------------------------

// setSpec: a set of int64 keys. State: the sorted keys.
//
//	insert(k[, v]) -> 1 if k was absent (now present), else 0   (v is ignored)
//	erase(k)       -> 1 if k was present (now absent), else 0
//	contains(k)    -> 1 if present, else 0
//
// Partitioned per key.
type setSpec struct {
	packedState
	keyedOps
}

var setOps = []opSig{{"insert", 1, 2, scalarOp}, {"erase", 1, 1, scalarOp}, {"contains", 1, 1, scalarOp}}

func (setSpec) Name() string { return "set" }
func (setSpec) CheckOp(op string, args []int64, res Value) error {
	return checkSig("set", setOps, op, args, res)
}
func (setSpec) DescribeState(s State) string { return s.(packed).describe(1, "{", "}") }

func (setSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	i, found := s.search(1, args[0])
	switch op {
	case "insert":
		if found {
			return st, Bool(false)
		}
		return s.insert(i, args[0]), Bool(true)
	case "erase":
		if !found {
			return st, Bool(false)
		}
		return s.remove(i, i+1), Bool(true)
	default: // contains
		return st, Bool(found)
	}
}

// ---------------------------------------------------------------------------

// mapSpec: a map int64 -> int64. State: (key, value) records sorted by key.
//
//	insert(k, v)         -> 1 if k was absent (now maps to v), else 0 (no overwrite)
//	erase(k)             -> 1 if k was present (now absent), else 0
//	find(k)              -> the value of k, or null if absent
//	find_or_insert(k, v) -> the value of k if present (kept), else null (now maps to v)
//	assign(k, v)         -> 1 if k was present (now maps to v), else 0 (nothing inserted)
//
// Partitioned per key.
type mapSpec struct {
	packedState
	keyedOps
}

var mapOps = []opSig{{"insert", 2, 2, scalarOp}, {"erase", 1, 1, scalarOp}, {"find", 1, 1, scalarOp},
	{"find_or_insert", 2, 2, scalarOp}, {"assign", 2, 2, scalarOp}}

func (mapSpec) Name() string { return "map" }
func (mapSpec) CheckOp(op string, args []int64, res Value) error {
	return checkSig("map", mapOps, op, args, res)
}
func (mapSpec) DescribeState(s State) string { return s.(packed).describe(2, "{", "}") }

func (mapSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	i, found := s.search(2, args[0])
	switch op {
	case "insert":
		if found {
			return st, Bool(false)
		}
		return s.insert(2*i, args[0], args[1]), Bool(true)
	case "erase":
		if !found {
			return st, Bool(false)
		}
		return s.remove(2*i, 2*i+2), Bool(true)
	case "find_or_insert":
		if found {
			return st, Some(s.at(2*i + 1))
		}
		return s.insert(2*i, args[0], args[1]), Nothing
	case "assign":
		if !found {
			return st, Bool(false)
		}
		return s.remove(2*i, 2*i+2).insert(2*i, args[0], args[1]), Bool(true)
	default: // find
		if !found {
			return st, Nothing
		}
		return st, Some(s.at(2*i + 1))
	}
}

// ---------------------------------------------------------------------------

// queueSpec: a FIFO queue of int64. State: the elements, front first.
//
//	enqueue(v)                  -> null
//	dequeue()                   -> the front element (removed), or null if empty
//	enqueue_batch(first, count) -> null; enqueues first, first+1, ..., first+count-1
//	dequeue_batch(max)          -> the min(max, size) front elements (removed), front first
//
// A batch is one operation: its items enter (leave) the queue contiguously.
// The harness's batch items are consecutive integers, hence (first, count).
type queueSpec struct{ packedState }

var queueOps = []opSig{{"enqueue", 1, 1, scalarOp}, {"dequeue", 0, 0, scalarOp},
	{"enqueue_batch", 2, 2, batchInOp}, {"dequeue_batch", 1, 1, batchOutOp}}

func (queueSpec) Name() string { return "queue" }
func (queueSpec) CheckOp(op string, args []int64, res Value) error {
	return checkSig("queue", queueOps, op, args, res)
}
func (queueSpec) DescribeState(s State) string {
	return s.(packed).describe(1, "front [", "] back")
}

func (queueSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	switch op {
	case "enqueue":
		return s.insert(s.n(), args[0]), Nothing
	case "dequeue":
		if s.n() == 0 {
			return st, Nothing
		}
		return s.remove(0, 1), Some(s.at(0))
	case "enqueue_batch":
		return s.appendSeq(args[0], int(args[1])), Nothing
	default: // dequeue_batch: the front of the state is the list, as is
		k := takeUpTo(args[0], s.n())
		return s.remove(0, k), listValue(s[:k*wordBytes])
	}
}

// takeUpTo is min(max, n) for a batch's max >= 1.
func takeUpTo(max int64, n int) int {
	if max < int64(n) {
		return int(max)
	}
	return n
}

// ---------------------------------------------------------------------------

// stackSpec: a LIFO stack of int64. State: the elements, bottom first.
//
//	push(v)                  -> null
//	pop()                    -> the top element (removed), or null if empty
//	top()                    -> the top element (kept), or null if empty
//	push_batch(first, count) -> null; pushes first, first+1, ..., first+count-1 (now on top)
//	pop_batch(max)           -> the min(max, size) top elements (removed), top first
type stackSpec struct{ packedState }

var stackOps = []opSig{{"push", 1, 1, scalarOp}, {"pop", 0, 0, scalarOp}, {"top", 0, 0, scalarOp},
	{"push_batch", 2, 2, batchInOp}, {"pop_batch", 1, 1, batchOutOp}}

func (stackSpec) Name() string { return "stack" }
func (stackSpec) CheckOp(op string, args []int64, res Value) error {
	return checkSig("stack", stackOps, op, args, res)
}
func (stackSpec) DescribeState(s State) string {
	return s.(packed).describe(1, "bottom [", "] top")
}

func (stackSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	n := s.n()
	switch op {
	case "push":
		return s.insert(n, args[0]), Nothing
	case "push_batch":
		return s.appendSeq(args[0], int(args[1])), Nothing
	case "pop_batch":
		k := takeUpTo(args[0], n)
		return s.remove(n-k, n), listValue(s.reversed(n-k, n))
	}
	if n == 0 {
		return st, Nothing
	}
	if op == "top" {
		return st, Some(s.at(n - 1))
	}
	return s.remove(n-1, n), Some(s.at(n - 1))
}

// ---------------------------------------------------------------------------

// pqueueSpec: a min-priority queue of int64, duplicates allowed. State: the
// elements, sorted ascending (a multiset).
//
//	insert(v)    -> null
//	delete_min() -> the smallest element (one copy removed), or null if empty
//	find_min()   -> the smallest element, or null if empty
type pqueueSpec struct{ packedState }

var pqueueOps = []opSig{{"insert", 1, 1, scalarOp}, {"delete_min", 0, 0, scalarOp}, {"find_min", 0, 0, scalarOp}}

func (pqueueSpec) Name() string { return "pqueue" }
func (pqueueSpec) CheckOp(op string, args []int64, res Value) error {
	return checkSig("pqueue", pqueueOps, op, args, res)
}
func (pqueueSpec) DescribeState(s State) string { return s.(packed).describe(1, "{", "}") }

func (pqueueSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	switch op {
	case "insert":
		i, _ := s.search(1, args[0])
		return s.insert(i, args[0]), Nothing
	case "delete_min":
		if s.n() == 0 {
			return st, Nothing
		}
		return s.remove(0, 1), Some(s.at(0))
	default: // find_min
		if s.n() == 0 {
			return st, Nothing
		}
		return st, Some(s.at(0))
	}
}
