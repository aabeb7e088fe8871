package main

// Sequential specifications and their conversion into porcupine models.
//
// A SequentialSpec is a "sequential oracle": it says what a data structure
// returns when operations are applied one at a time. ModelOf turns any spec
// into a porcupine.Model whose Step replays the recorded operation on the spec
// and accepts the step iff the spec's result equals the recorded result. The
// checker then searches for a total order of the recorded operations that is
// consistent with real time and with the spec, i.e. a linearization.
//
// Adding a structure means writing one more SequentialSpec (see models.go) and
// registering it in init(); nothing else changes.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Value is an operation's result: an int64, "nothing" (JSON null), e.g. a
// dequeue on an empty queue or a find of an absent key, or a list of int64
// (JSON array), e.g. the items a batch dequeue took. Booleans are 0/1.
// The zero Value is Nothing. Values are comparable with == (porcupine
// compares results with ==), which is why a list is a packed string.
type Value struct {
	Present bool // not null: V, or L if IsList
	IsList  bool
	V       int64
	L       packed // the list's items in order, if IsList
}

// Nothing is the absent result (JSON null).
var Nothing = Value{}

// Some wraps an int64 result.
func Some(v int64) Value { return Value{Present: true, V: v} }

// Bool encodes a boolean result as 0/1.
func Bool(b bool) Value {
	if b {
		return Some(1)
	}
	return Some(0)
}

// ListOf makes a list result.
func ListOf(ws ...int64) Value { return listValue(packed("").insert(0, ws...)) }

// listValue makes a list result of packed items (no copy).
func listValue(p packed) Value { return Value{Present: true, IsList: true, L: p} }

// String renders v as JSON: null, 5 or [1,2,3].
func (v Value) String() string {
	switch {
	case !v.Present:
		return "null"
	case !v.IsList:
		return strconv.FormatInt(v.V, 10)
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < v.L.n(); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(v.L.at(i), 10))
	}
	b.WriteByte(']')
	return b.String()
}

// State is a spec's abstract state. Specs must treat states as immutable:
// Apply returns a new state and never modifies the one it was given
// (porcupine keeps old states on its backtracking stack and in its cache).
// The specs in models.go use packed strings (see packed.go), which are
// immutable by construction, cheap to compare and to hash.
type State = interface{}

// SequentialSpec is the sequential specification of one data structure.
type SequentialSpec interface {
	// Name is the value of the checker's --model flag.
	Name() string
	// CheckOp validates an operation read from the input: it returns an
	// error for an operation the structure does not have, a wrong number
	// of arguments, a bad batch count, or a result of the wrong kind (a
	// list where the operation returns an int64 or null, or the reverse).
	// It is called once per input line, never during the search.
	CheckOp(op string, args []int64, result Value) error
	// Init returns the initial (empty) state.
	Init() State
	// Apply performs op(args) on s and returns the new state and the result
	// the structure must return. Only ever called with ops accepted by
	// CheckOp. Must not modify s.
	Apply(s State, op string, args []int64) (State, Value)
	// Equal reports whether two states are equal.
	Equal(a, b State) bool
	// DescribeState renders a state for the HTML visualisation.
	DescribeState(s State) string
}

// Partitioned is optionally implemented by specs whose operations each touch
// one key, and whose behaviour on one key is independent of the other keys
// (sets, maps). By P-compositionality (Herlihy & Wing 1990), a history is
// linearizable iff each key's sub-history is, so each key is checked alone,
// which turns one exponential search into many tiny ones.
//
// PartitionKey returns the key op(args) touches, or ok=false for an operation
// that depends on every key (e.g. a size()); a history containing such an
// operation is checked whole.
type Partitioned interface {
	PartitionKey(op string, args []int64) (key int64, ok bool)
}

// Hasher is optionally implemented by specs to speed up porcupine's cache of
// visited (linearized set, state) pairs. Equal states must hash equally.
type Hasher interface {
	Hash(s State) uint64
}

// Input is the porcupine Operation.Input of a recorded operation. The same
// pointer is the operation's Metadata, for the visualisation.
type Input struct {
	Op     string
	Args   []int64
	Line   int   // 1-based line number in the input file
	Thread int64 // thread id as recorded
}

// ModelOf turns a sequential spec into a porcupine model. Operations must have
// an *Input as Input and a Value as Output.
func ModelOf(spec SequentialSpec) porcupine.Model {
	m := porcupine.Model{
		Init: func() interface{} { return spec.Init() },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			in := input.(*Input)
			next, got := spec.Apply(state, in.Op, in.Args)
			return got == output.(Value), next
		},
		Equal:             spec.Equal,
		DescribeState:     spec.DescribeState,
		DescribeOperation: describeOperation,
		DescribeOperationMetadata: func(info interface{}) string {
			if in, ok := info.(*Input); ok && in.Line > 0 {
				return fmt.Sprintf("line %d, thread %d", in.Line, in.Thread)
			}
			return ""
		},
	}
	if h, ok := spec.(Hasher); ok {
		m.Hash = h.Hash
	}
	if p, ok := spec.(Partitioned); ok {
		m.Partition = func(history []porcupine.Operation) [][]porcupine.Operation {
			return partitionByKey(p, history)
		}
	}
	return m
}

func describeOperation(input, output interface{}) string {
	in := input.(*Input)
	var b strings.Builder
	b.WriteString(in.Op)
	b.WriteByte('(')
	for i, a := range in.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(a, 10))
	}
	b.WriteString(") -> ")
	b.WriteString(output.(Value).String())
	return b.String()
}

// partitionByKey splits a history into per-key sub-histories, in increasing
// key order (deterministic output). If any operation has no key, the history
// is returned whole.
func partitionByKey(p Partitioned, history []porcupine.Operation) [][]porcupine.Operation {
	byKey := make(map[int64][]porcupine.Operation)
	for _, op := range history {
		in := op.Input.(*Input)
		k, ok := p.PartitionKey(in.Op, in.Args)
		if !ok {
			return [][]porcupine.Operation{history}
		}
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]int64, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	parts := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		parts[i] = byKey[k]
	}
	return parts
}

// opSig is one operation's name, accepted number of arguments and kind.
type opSig struct {
	name             string
	minArgs, maxArgs int
	kind             opKind
}

// opKind is what checkSig checks beyond the number of arguments.
type opKind uint8

const (
	scalarOp   opKind = iota // returns an int64 or null
	batchInOp                // (first, count), 1 <= count <= maxBatch; returns an int64 or null
	batchOutOp               // (max), max >= 1; returns a list
)

// maxBatch bounds a batch's count: its items are materialised in the state,
// so a corrupt count must be an input error, not an out-of-memory crash.
// (The harness's batches are at most 64 items.)
const maxBatch = 1 << 16

// checkSig implements CheckOp for a spec from its operation table.
func checkSig(model string, sigs []opSig, op string, args []int64, result Value) error {
	for _, s := range sigs {
		if s.name != op {
			continue
		}
		if len(args) < s.minArgs || len(args) > s.maxArgs {
			want := strconv.Itoa(s.minArgs)
			if s.maxArgs != s.minArgs {
				want += " or " + strconv.Itoa(s.maxArgs)
			}
			return fmt.Errorf("op %q of model %s takes %s argument(s), got %d", op, model, want, len(args))
		}
		switch s.kind {
		case batchInOp:
			if n := args[len(args)-1]; n < 1 || n > maxBatch {
				return fmt.Errorf("op %q of model %s: count must be in 1..%d, got %d", op, model, maxBatch, n)
			}
		case batchOutOp:
			if n := args[len(args)-1]; n < 1 {
				return fmt.Errorf("op %q of model %s: max must be >= 1, got %d", op, model, n)
			}
		}
		if wantList := s.kind == batchOutOp; result.IsList != wantList {
			want := "an integer or null"
			if wantList {
				want = "an array of integers"
			}
			return fmt.Errorf("op %q of model %s returns %s, got %v", op, model, want, result)
		}
		return nil
	}
	names := make([]string, len(sigs))
	for i, s := range sigs {
		names[i] = s.name
	}
	return fmt.Errorf("unknown op %q for model %s (known: %s)", op, model, strings.Join(names, ", "))
}

// registry of specs by --model name.
var registry = map[string]SequentialSpec{}

// Register adds a spec to the checker's --model choices.
func Register(spec SequentialSpec) {
	if _, dup := registry[spec.Name()]; dup {
		panic("lincheck: duplicate model " + spec.Name())
	}
	registry[spec.Name()] = spec
}

// modelNames lists the registered models, sorted.
func modelNames() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
