package main

import (
	"hash/maphash"
	"strconv"
	"strings"
)

// packed is an immutable sequence of int64 words stored in a string, 8 bytes
// per word (little-endian). It is the state representation of the built-in
// specs: Go strings are immutable (so a spec cannot accidentally mutate a
// state porcupine still holds), compare with == and hash cheaply, and a
// sub-sequence is a substring that shares memory. Every "modifying" method
// returns a new packed value built with exactly one allocation.
type packed string

const wordBytes = 8

// n is the number of words.
func (p packed) n() int { return len(p) / wordBytes }

// at returns word i.
func (p packed) at(i int) int64 {
	s := p[i*wordBytes : i*wordBytes+wordBytes]
	return int64(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
}

func putWord(b *strings.Builder, w int64) {
	u := uint64(w)
	var buf [wordBytes]byte
	for i := range buf {
		buf[i] = byte(u >> (8 * i))
	}
	b.Write(buf[:])
}

// splice returns p with words [i, j) replaced by ws.
func (p packed) splice(i, j int, ws ...int64) packed {
	var b strings.Builder
	b.Grow(len(p) - (j-i)*wordBytes + len(ws)*wordBytes)
	b.WriteString(string(p[:i*wordBytes]))
	for _, w := range ws {
		putWord(&b, w)
	}
	b.WriteString(string(p[j*wordBytes:]))
	return packed(b.String())
}

// insert returns p with ws inserted before word i.
func (p packed) insert(i int, ws ...int64) packed { return p.splice(i, i, ws...) }

// remove returns p without words [i, j); no copy is made when the removed
// words are a prefix or a suffix.
func (p packed) remove(i, j int) packed {
	switch {
	case i == 0:
		return p[j*wordBytes:]
	case j == p.n():
		return p[:i*wordBytes]
	}
	return p.splice(i, j)
}

// appendSeq returns p followed by the count words first, first+1, ...
// (one allocation, no slice of the words).
func (p packed) appendSeq(first int64, count int) packed {
	var b strings.Builder
	b.Grow(len(p) + count*wordBytes)
	b.WriteString(string(p))
	for k := 0; k < count; k++ {
		putWord(&b, first+int64(k))
	}
	return packed(b.String())
}

// reversed returns words [i, j) of p in reverse order.
func (p packed) reversed(i, j int) packed {
	var b strings.Builder
	b.Grow((j - i) * wordBytes)
	for k := j - 1; k >= i; k-- {
		b.WriteString(string(p[k*wordBytes : (k+1)*wordBytes]))
	}
	return packed(b.String())
}

// search treats p as a sequence of records of stride words sorted by their
// first word, and returns the index (in records) of the first record whose
// first word is >= key, and whether that word equals key.
func (p packed) search(stride int, key int64) (int, bool) {
	lo, hi := 0, p.n()/stride
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if p.at(mid*stride) < key {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < p.n()/stride && p.at(lo*stride) == key
}

// hashSeed is fixed for the process, so equal states hash equally.
var hashSeed = maphash.MakeSeed()

// hash hashes the bytes (maphash: hardware-accelerated where available).
func (p packed) hash() uint64 { return maphash.String(hashSeed, string(p)) }

// describe renders the words in records of stride words: "a, b" for stride
// 1, "k: v, k: v" for stride 2, between open and close.
func (p packed) describe(stride int, open, close string) string {
	var b strings.Builder
	b.WriteString(open)
	for i := 0; i < p.n(); i++ {
		switch {
		case i == 0:
		case i%stride == 0:
			b.WriteString(", ")
		default:
			b.WriteString(": ")
		}
		b.WriteString(strconv.FormatInt(p.at(i), 10))
	}
	b.WriteString(close)
	return b.String()
}
