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

var setOps = []opSig{{"insert", 1, 2}, {"erase", 1, 1}, {"contains", 1, 1}}

func (setSpec) Name() string                          { return "set" }
func (setSpec) CheckOp(op string, args []int64) error { return checkSig("set", setOps, op, args) }
func (setSpec) DescribeState(s State) string          { return s.(packed).describe(1, "{", "}") }

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

var mapOps = []opSig{{"insert", 2, 2}, {"erase", 1, 1}, {"find", 1, 1}, {"find_or_insert", 2, 2}, {"assign", 2, 2}}

func (mapSpec) Name() string                          { return "map" }
func (mapSpec) CheckOp(op string, args []int64) error { return checkSig("map", mapOps, op, args) }
func (mapSpec) DescribeState(s State) string          { return s.(packed).describe(2, "{", "}") }

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
//	enqueue(v) -> null
//	dequeue()  -> the front element (removed), or null if empty
type queueSpec struct{ packedState }

var queueOps = []opSig{{"enqueue", 1, 1}, {"dequeue", 0, 0}}

func (queueSpec) Name() string                          { return "queue" }
func (queueSpec) CheckOp(op string, args []int64) error { return checkSig("queue", queueOps, op, args) }
func (queueSpec) DescribeState(s State) string {
	return s.(packed).describe(1, "front [", "] back")
}

func (queueSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	if op == "enqueue" {
		return s.insert(s.n(), args[0]), Nothing
	}
	if s.n() == 0 {
		return st, Nothing
	}
	return s.remove(0, 1), Some(s.at(0))
}

// ---------------------------------------------------------------------------

// stackSpec: a LIFO stack of int64. State: the elements, bottom first.
//
//	push(v) -> null
//	pop()   -> the top element (removed), or null if empty
//	top()   -> the top element (kept), or null if empty
type stackSpec struct{ packedState }

var stackOps = []opSig{{"push", 1, 1}, {"pop", 0, 0}, {"top", 0, 0}}

func (stackSpec) Name() string                          { return "stack" }
func (stackSpec) CheckOp(op string, args []int64) error { return checkSig("stack", stackOps, op, args) }
func (stackSpec) DescribeState(s State) string {
	return s.(packed).describe(1, "bottom [", "] top")
}

func (stackSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	if op == "push" {
		return s.insert(s.n(), args[0]), Nothing
	}
	n := s.n()
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

var pqueueOps = []opSig{{"insert", 1, 1}, {"delete_min", 0, 0}, {"find_min", 0, 0}}

func (pqueueSpec) Name() string { return "pqueue" }
func (pqueueSpec) CheckOp(op string, args []int64) error {
	return checkSig("pqueue", pqueueOps, op, args)
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
