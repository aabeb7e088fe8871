package main

// Specs for the black-box structures of Node Replication's evaluation (bench/
// blackbox_workload.hpp): the generic sequential oracle and the Redis-like
// sorted set. (The priority queues, the dictionary and the stack use the
// pqueue, map and stack models.)

import (
	"fmt"
	"strconv"
	"strings"
)

// ---------------------------------------------------------------------------

// oracleSpec: the generic sequential oracle. The state is the fingerprint of
// the sequence of updates linearized so far (0 when empty):
//
//	update(a1, ..., ak) -> fp' = step(fp, a1, ..., ak), the new fingerprint
//	read(...)           -> fp (arguments ignored)
//
// with step(h, a1..ak): for i = 1..k: h = mix(h ^ (ai + i*0x9e3779b97f4a7c15)),
// mix = splitmix64's output function, arithmetic modulo 2^64 (the C++ side is
// include/cdsbench/seq/fingerprint.hpp; both tests pin the same value).
//
// Any deterministic sequential structure can report this fingerprint of its
// update log beside its own results (the synthetic structure keeps it in its
// hot entry), and then this one model checks, whatever the structure, what a
// black-box construction such as Node Replication must guarantee: one total
// order of the updates, each applied exactly once, that every read observes a
// prefix of, consistent with real time. A lost, duplicated or reordered update
// changes every later fingerprint; a stale read returns an old one.
type oracleSpec struct{}

var oracleOps = []opSig{{"update", 0, 8, scalarOp}, {"read", 0, 8, scalarOp}}

func (oracleSpec) Name() string { return "oracle" }
func (oracleSpec) CheckOp(op string, args []int64, res Value) error {
	return checkSig("oracle", oracleOps, op, args, res)
}
func (oracleSpec) Init() State           { return uint64(0) }
func (oracleSpec) Equal(a, b State) bool { return a.(uint64) == b.(uint64) }
func (oracleSpec) Hash(s State) uint64   { return s.(uint64) }
func (oracleSpec) DescribeState(s State) string {
	return "fingerprint " + strconv.FormatInt(int64(s.(uint64)), 10)
}

func (oracleSpec) Apply(st State, op string, args []int64) (State, Value) {
	h := st.(uint64)
	if op == "update" {
		h = fingerprintStep(h, args)
	}
	return h, Some(int64(h))
}

const splitmix64Gamma = 0x9e3779b97f4a7c15

func splitmix64Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func fingerprintStep(h uint64, args []int64) uint64 {
	for i, a := range args {
		h = splitmix64Mix(h ^ (uint64(a) + uint64(i+1)*splitmix64Gamma))
	}
	return h
}

// ---------------------------------------------------------------------------

// sortedSetSpec: a Redis-like sorted set of int64 members with int64 scores,
// ordered by (score, member). State: (member, score) records sorted by member.
//
//	zincrby(m, d) -> the new score of m (an absent m is created with score d)
//	zrank(m)      -> the 0-based rank of m in (score, member) order, or null if absent
//
// Not partitioned: a rank depends on every member.
type sortedSetSpec struct{ packedState }

var sortedSetOps = []opSig{{"zincrby", 2, 2, scalarOp}, {"zrank", 1, 1, scalarOp}}

func (sortedSetSpec) Name() string { return "sortedset" }
func (sortedSetSpec) CheckOp(op string, args []int64, res Value) error {
	return checkSig("sortedset", sortedSetOps, op, args, res)
}

func (sortedSetSpec) DescribeState(s State) string {
	p := s.(packed)
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < p.n(); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(p.at(i), 10) + ": " + strconv.FormatInt(p.at(i+1), 10))
	}
	b.WriteString("}")
	return b.String()
}

func (sortedSetSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	i, found := s.search(2, args[0])
	if op == "zincrby" {
		if !found {
			return s.insert(2*i, args[0], args[1]), Some(args[1])
		}
		score := int64(uint64(s.at(2*i+1)) + uint64(args[1]))
		return s.splice(2*i+1, 2*i+2, score), Some(score)
	}
	if !found {
		return st, Nothing
	}
	member, score := args[0], s.at(2*i+1)
	rank := int64(0)
	for j := 0; j < s.n(); j += 2 {
		m, sc := s.at(j), s.at(j+1)
		if sc < score || (sc == score && m < member) {
			rank++
		}
	}
	return st, Some(rank)
}

// ---------------------------------------------------------------------------

// zsetsSpec: the sorted-set server's single-key commands (apps/zset_server) over
// keys that each hold a Redis sorted set of int64 members with int64 scores. As
// in Redis, a key exists exactly while its set is not empty: the update that
// empties a set removes its key, and the next ZINCRBY creates it afresh. Keys
// and members are in [0, 2^31). State: (key<<32 | member, score) records,
// sorted, so a key's members are one run of records.
//
//	zincrby(k, m, d) -> the new score (an absent key or member is created, score d)
//	zaddxx(k, m, s)  -> ZADD k XX CH s m: 1 if m was present with another score (now s), else 0
//	zrem(k, m)       -> 1 if m was present (removed), else 0
//	zscore(k, m)     -> m's score, or null
//	zrank(k, m)      -> m's 0-based rank in (score, member) order, or null
//	zcard(k)         -> the number of members (0: no such key)
//	del(k)           -> 1 if the key existed (it no longer does), else 0
//	exists(k)        -> 1 if the key exists, else 0
//
// Partitioned per key: each command touches one key.
type zsetsSpec struct {
	packedState
	keyedOps
}

var zsetsOps = []opSig{
	{"zincrby", 3, 3, scalarOp}, {"zaddxx", 3, 3, scalarOp}, {"zrem", 2, 2, scalarOp},
	{"zscore", 2, 2, scalarOp}, {"zrank", 2, 2, scalarOp}, {"zcard", 1, 1, scalarOp},
	{"del", 1, 1, scalarOp}, {"exists", 1, 1, scalarOp},
}

const zsetsIDLimit = int64(1) << 31

func (zsetsSpec) Name() string { return "zsets" }
func (zsetsSpec) CheckOp(op string, args []int64, res Value) error {
	if err := checkSig("zsets", zsetsOps, op, args, res); err != nil {
		return err
	}
	for i := 0; i < len(args) && i < 2; i++ {
		if args[i] < 0 || args[i] >= zsetsIDLimit {
			return fmt.Errorf("op %q of model zsets: keys and members must be in [0, 2^31), got %d", op, args[i])
		}
	}
	return nil
}

func (zsetsSpec) DescribeState(s State) string {
	p := s.(packed)
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < p.n(); i += 2 {
		key, member := p.at(i)>>32, p.at(i)&(zsetsIDLimit-1)
		if i == 0 || p.at(i-2)>>32 != key {
			if i > 0 {
				b.WriteString("}, ")
			}
			b.WriteString(strconv.FormatInt(key, 10) + ": {")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(member, 10) + ": " + strconv.FormatInt(p.at(i+1), 10))
	}
	if p.n() > 0 {
		b.WriteString("}")
	}
	b.WriteString("}")
	return b.String()
}

func (zsetsSpec) Apply(st State, op string, args []int64) (State, Value) {
	s := st.(packed)
	key := args[0]
	// The key's records are [first, end): members are below 2^31, so every record of the key is
	// below key<<32 | 2^31 (no overflow for any key below 2^31, unlike (key+1)<<32).
	first, _ := s.search(2, key<<32)
	end, _ := s.search(2, key<<32|zsetsIDLimit)
	switch op {
	case "zcard":
		return s, Some(int64(end - first))
	case "exists":
		return s, Bool(end > first)
	case "del":
		return s.remove(2*first, 2*end), Bool(end > first)
	}
	i, found := s.search(2, key<<32|args[1])
	switch op {
	case "zincrby":
		if !found {
			return s.insert(2*i, key<<32|args[1], args[2]), Some(args[2])
		}
		score := int64(uint64(s.at(2*i+1)) + uint64(args[2]))
		return s.splice(2*i+1, 2*i+2, score), Some(score)
	case "zaddxx":
		if !found || s.at(2*i+1) == args[2] {
			return s, Some(0)
		}
		return s.splice(2*i+1, 2*i+2, args[2]), Some(1)
	case "zrem":
		if !found {
			return s, Some(0)
		}
		return s.remove(2*i, 2*i+2), Some(1)
	}
	if !found {
		return s, Nothing
	}
	score := s.at(2*i + 1)
	if op == "zscore" {
		return s, Some(score)
	}
	rank := int64(0) // zrank
	for j := first; j < end; j++ {
		if sc := s.at(2*j + 1); sc < score || (sc == score && s.at(2*j) < s.at(2*i)) {
			rank++
		}
	}
	return s, Some(rank)
}
