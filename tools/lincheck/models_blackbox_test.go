package main

// Tests of the black-box models (models_blackbox.go) and of the stack's top():
// histories they must reject and accept (joined to the tables that
// TestRejectsNonLinearizable, TestAcceptsHeavyOverlap and the property tests
// run for every model), and the fingerprint pinned against the C++ side.

import (
	"math/rand"
	"testing"
)

// fp is the fingerprint after the updates (each a list of arguments) in order.
func fp(updates ...[]int64) int64 {
	h := uint64(0)
	for _, u := range updates {
		h = fingerprintStep(h, u)
	}
	return int64(h)
}

func u(args ...int64) []int64 { return args }

// fo is an oracle operation whose result is a fingerprint.
func fo(thread, call, ret int64, op string, result int64, args ...int64) hop {
	h := o(thread, call, ret, op, nil, args...)
	h.result = Some(result)
	return h
}

func init() {
	opGens["oracle"] = func(r *rand.Rand) (string, []int64) {
		if r.Intn(2) == 0 {
			return "update", []int64{int64(r.Intn(3)), int64(r.Intn(3) - 1)}
		}
		return "read", []int64{}
	}
	opGens["sortedset"] = func(r *rand.Rand) (string, []int64) {
		if r.Intn(2) == 0 {
			return "zincrby", []int64{int64(r.Intn(3)), int64(r.Intn(5) - 2)}
		}
		return "zrank", []int64{int64(r.Intn(3))}
	}

	rejected["oracle"] = []namedHistory{
		{"read sees an update that had not started", []hop{
			fo(0, 0, 10, "read", fp(u(5, 1))),
			fo(1, 11, 20, "update", fp(u(5, 1)), 5, 1),
		}},
		{"read misses a completed update", []hop{
			fo(0, 0, 10, "update", fp(u(5, 1)), 5, 1),
			fo(1, 11, 20, "read", fp()),
		}},
		{"an update applied twice", []hop{
			fo(0, 0, 10, "update", fp(u(5, 1)), 5, 1),
			fo(1, 11, 20, "update", fp(u(5, 1), u(5, 1), u(6, 2)), 6, 2),
		}},
		{"an update lost (both return the first fingerprint)", allConcurrent(
			fo(0, 0, 0, "update", fp(u(1, 1)), 1, 1), fo(0, 0, 0, "update", fp(u(2, 1)), 2, 1),
			fo(0, 0, 0, "read", fp(u(1, 1), u(2, 1))),
		)},
		{"reads go back in time", []hop{
			fo(0, 0, 100, "update", fp(u(1, 1)), 1, 1),
			fo(1, 10, 20, "read", fp(u(1, 1))),
			fo(2, 30, 40, "read", fp()),
		}},
	}
	accepted["oracle"] = []namedHistory{
		// update3, read, update2, update1: the reverse of the call order.
		{"all concurrent, reverse order", allConcurrent(
			fo(0, 0, 0, "update", fp(u(3, 1), u(2, 1), u(1, 1)), 1, 1),
			fo(0, 0, 0, "update", fp(u(3, 1), u(2, 1)), 2, 1),
			fo(0, 0, 0, "read", fp(u(3, 1))),
			fo(0, 0, 0, "update", fp(u(3, 1)), 3, 1),
		)},
		{"staggered: a read inside an update's interval sees it", []hop{
			fo(0, 0, 50, "update", fp(u(2, 2), u(1, 1)), 1, 1),
			fo(1, 5, 15, "update", fp(u(2, 2)), 2, 2),
			fo(2, 20, 30, "read", fp(u(2, 2), u(1, 1))),
			fo(2, 31, 40, "read", fp(u(2, 2), u(1, 1))),
		}},
	}

	rejected["sortedset"] = []namedHistory{
		{"zrank of a member never added", []hop{
			o(0, 0, 10, "zincrby", 1, 1, 1),
			o(1, 11, 20, "zrank", 0, 2),
		}},
		{"rank ignores a completed zincrby", []hop{
			o(0, 0, 10, "zincrby", 5, 1, 5),
			o(0, 11, 20, "zincrby", 3, 2, 3),
			o(1, 21, 30, "zrank", 1, 2),
		}},
		{"zincrby applied twice", []hop{
			o(0, 0, 10, "zincrby", 2, 1, 2),
			o(1, 11, 20, "zincrby", 6, 1, 2),
		}},
		{"ties broken against the member order", []hop{
			o(0, 0, 10, "zincrby", 4, 2, 4),
			o(0, 11, 20, "zincrby", 4, 1, 4),
			o(1, 21, 30, "zrank", 0, 2),
		}},
	}
	accepted["sortedset"] = []namedHistory{
		// zincrby(2,+3)->3, zincrby(1,+5)->5, zrank(1)->1, zincrby(2,+4)->7, zrank(1)->0.
		{"all concurrent", allConcurrent(
			o(0, 0, 0, "zrank", 0, 1), o(0, 0, 0, "zincrby", 7, 2, 4), o(0, 0, 0, "zrank", 1, 1),
			o(0, 0, 0, "zincrby", 5, 1, 5), o(0, 0, 0, "zincrby", 3, 2, 3),
		)},
		// zincrby(3,1)->1 (T2), zincrby(1,-1)->-1 created (T1), zrank(3)->1 (T2),
		// zincrby(1,2)->1 (T0, called first), zrank(1)->0 (T1: tie at 1, member 1 first).
		{"staggered", []hop{
			o(0, 0, 30, "zincrby", 1, 1, 2),
			o(1, 5, 35, "zincrby", -1, 1, -1),
			o(1, 40, 50, "zrank", 0, 1),
			o(2, 1, 20, "zincrby", 1, 3, 1),
			o(2, 21, 25, "zrank", 1, 3),
		}},
	}

	opGens["zsets"] = func(r *rand.Rand) (string, []int64) {
		k, m := int64(r.Intn(2)), int64(r.Intn(3))
		switch r.Intn(8) {
		case 0, 1:
			return "zincrby", []int64{k, m, int64(r.Intn(5) - 2)}
		case 2:
			return "zaddxx", []int64{k, m, int64(r.Intn(3))}
		case 3:
			return "zrem", []int64{k, m}
		case 4:
			return "zscore", []int64{k, m}
		case 5:
			return "zrank", []int64{k, m}
		case 6:
			return []string{"zcard", "exists"}[r.Intn(2)], []int64{k}
		}
		return "del", []int64{k}
	}
	rejected["zsets"] = []namedHistory{
		{"a member outlives its key's DEL", []hop{
			o(0, 0, 10, "zincrby", 2, 0, 1, 2),
			o(1, 11, 20, "del", 1, 0),
			o(0, 21, 30, "zscore", 2, 0, 1),
		}},
		{"an update lands in the set its key lost", []hop{
			o(0, 0, 10, "zincrby", 1, 0, 1, 1),
			o(1, 11, 20, "zrem", 1, 0, 1),
			o(0, 21, 30, "zincrby", 1, 0, 2, 1),
			o(1, 31, 40, "zcard", 2, 0),
		}},
		{"a key exists after its last member's removal", []hop{
			o(0, 0, 10, "zincrby", 1, 0, 1, 1),
			o(0, 11, 20, "zrem", 1, 0, 1),
			o(1, 21, 30, "exists", 1, 0),
		}},
		{"ZADD XX creates a member", []hop{
			o(0, 0, 10, "zaddxx", 0, 0, 1, 5),
			o(1, 11, 20, "zscore", 5, 0, 1),
		}},
		{"DEL of one key empties another", []hop{
			o(0, 0, 10, "zincrby", 1, 1, 1, 1),
			o(1, 11, 20, "del", 0, 0),
			o(0, 21, 30, "zscore", nil, 1, 1),
		}},
	}
	accepted["zsets"] = []namedHistory{
		// zscore(0,1)->null, zincrby(0,1,1)->1, del(0)->1, zincrby(0,1,2)->2 (a new set), exists(0)->1.
		{"all concurrent: a key created, deleted and created again", allConcurrent(
			o(0, 0, 0, "exists", 1, 0), o(0, 0, 0, "zincrby", 2, 0, 1, 2), o(0, 0, 0, "del", 1, 0),
			o(0, 0, 0, "zscore", nil, 0, 1), o(0, 0, 0, "zincrby", 1, 0, 1, 1),
		)},
		// T3's zcard sees both members, so T0's zincrby (called after it) comes before it and
		// T1's zrem (called before it) after it.
		{"staggered: a ZREM overlapping a ZINCRBY and a ZCARD", []hop{
			o(0, 0, 10, "zincrby", 1, 0, 1, 1),
			o(1, 11, 20, "zrem", 1, 0, 1),
			o(0, 15, 30, "zincrby", 3, 0, 2, 3),
			o(1, 31, 40, "zcard", 1, 0),
			o(2, 35, 45, "zrank", 0, 0, 2),
			o(2, 46, 50, "zaddxx", 1, 0, 2, 4),
			o(3, 12, 18, "zcard", 2, 0),
		}},
	}

	rejected["stack"] = append(rejected["stack"], namedHistory{"top of an empty stack after a completed push", []hop{
		o(0, 0, 10, "push", nil, 4),
		o(1, 11, 20, "top", nil),
	}})
	accepted["stack"] = append(accepted["stack"], namedHistory{"top sees the later of two concurrent pushes", allConcurrent(
		c("top", 1), c("push", nil, 2), c("push", nil, 1), c("top", 2),
	)})
}

// The fingerprint the C++ side computes for the same updates
// (tests/unit/test_nr.cpp, Fingerprint.MatchesTheCheckersModel).
func TestFingerprintPinnedValue(t *testing.T) {
	const want = int64(7643945910149597460)
	if got := fp(u(5, 3), u(7, -2)); got != want {
		t.Fatalf("fingerprint of update(5,3) update(7,-2) = %d, want %d", got, want)
	}
}

// The largest key and member the model takes (2^31 - 1) behave as any other.
func TestZsetsLargestKeyAndMember(t *testing.T) {
	const top = int64(1)<<31 - 1
	spec := zsetsSpec{}
	st := spec.Init()
	steps := []struct {
		op   string
		args []int64
		want Value
	}{
		{"zincrby", []int64{top - 1, 0, 1}, Some(1)},
		{"zincrby", []int64{top, top, 5}, Some(5)},
		{"zincrby", []int64{top, 0, 7}, Some(7)},
		{"zcard", []int64{top}, Some(2)},
		{"zrank", []int64{top, top}, Some(0)},
		{"exists", []int64{top}, Some(1)},
		{"del", []int64{top}, Some(1)},
		{"zcard", []int64{top}, Some(0)},
		{"exists", []int64{top}, Some(0)},
		{"zscore", []int64{top, top}, Nothing},
		{"zcard", []int64{top - 1}, Some(1)},
	}
	for i, s := range steps {
		if err := spec.CheckOp(s.op, s.args, s.want); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var got Value
		st, got = spec.Apply(st, s.op, s.args)
		if got != s.want {
			t.Fatalf("step %d: %s%v = %v, want %v (state %s)", i, s.op, s.args, got, s.want, spec.DescribeState(st))
		}
	}
	if err := spec.CheckOp("zcard", []int64{top + 1}, Some(0)); err == nil {
		t.Fatal("a key of 2^31 was accepted")
	}
}
