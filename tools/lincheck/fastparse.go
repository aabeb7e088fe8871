package main

// A fast path for the common input line. encoding/json with a Decoder per line
// (needed for DisallowUnknownFields) costs ~10 µs a line, which dominated the
// run time on files of hundreds of thousands of lines. fastScan accepts only
// a strict subset of JSON: exactly the seven operation fields, each once,
// with plain integers, null, an escape-free ASCII string and flat integer
// arrays (args, and a list result).
// Anything else (the meta line, escapes, floats, errors, ...) makes it give up,
// and parseLine falls back to encoding/json, which also produces the error
// messages. The two paths must agree on every line the fast path accepts
// (TestFastScanAgrees).

import (
	"strconv"
	"strings"
)

type fastFields struct {
	history, thread, call, ret int64
	op                         string
	args                       []int64
	result                     Value
}

const (
	fHistory = 1 << iota
	fThread
	fOp
	fArgs
	fResult
	fCall
	fReturn
	fAll = fHistory | fThread | fOp | fArgs | fResult | fCall | fReturn
)

// fastScan parses line (already trimmed); ok=false means "use the slow path".
func fastScan(line []byte) (f fastFields, ok bool) {
	p := scanner{b: line}
	if !p.lit('{') {
		return f, false
	}
	seen := 0
	for {
		key, ok := p.plainString()
		if !ok || !p.lit(':') {
			return f, false
		}
		var bit int
		switch key {
		case "history":
			bit = fHistory
			f.history, ok = p.int()
		case "thread":
			bit = fThread
			f.thread, ok = p.int()
		case "call":
			bit = fCall
			f.call, ok = p.int()
		case "return":
			bit = fReturn
			f.ret, ok = p.int()
		case "op":
			bit = fOp
			f.op, ok = p.plainString()
		case "result":
			bit = fResult
			switch {
			case p.null():
				f.result, ok = Nothing, true
			case p.peek('['):
				var l packed
				l, ok = p.packedArray()
				f.result = listValue(l)
			default:
				var v int64
				v, ok = p.int()
				f.result = Some(v)
			}
		case "args":
			bit = fArgs
			f.args, ok = p.intArray()
		default:
			return f, false
		}
		if !ok || seen&bit != 0 {
			return f, false
		}
		seen |= bit
		if p.lit(',') {
			continue
		}
		if !p.lit('}') {
			return f, false
		}
		p.ws()
		return f, seen == fAll && p.i == len(p.b)
	}
}

type scanner struct {
	b []byte
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

// lit skips whitespace and the byte c.
func (p *scanner) lit(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// peek skips whitespace and reports whether the next byte is c.
func (p *scanner) peek(c byte) bool {
	p.ws()
	return p.i < len(p.b) && p.b[p.i] == c
}

func (p *scanner) null() bool {
	p.ws()
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// plainString reads an ASCII string without escapes or control characters
// (encoding/json would replace invalid UTF-8, so leave non-ASCII to it).
func (p *scanner) plainString() (string, bool) {
	if !p.lit('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false
		}
		p.i++
	}
	return "", false
}

// int reads a JSON integer: -?(0|[1-9][0-9]*) not followed by a fraction or
// exponent, within int64.
func (p *scanner) int() (int64, bool) {
	p.ws()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - digits
	if n == 0 || (n > 1 && p.b[digits] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	return v, err == nil
}

func (p *scanner) intArray() ([]int64, bool) {
	if !p.lit('[') {
		return nil, false
	}
	out := []int64{}
	if p.lit(']') {
		return out, true
	}
	for {
		v, ok := p.int()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if p.lit(',') {
			continue
		}
		return out, p.lit(']')
	}
}

// packedArray reads a flat integer array straight into a packed list.
func (p *scanner) packedArray() (packed, bool) {
	if !p.lit('[') {
		return "", false
	}
	if p.lit(']') {
		return "", true
	}
	var b strings.Builder
	for {
		v, ok := p.int()
		if !ok {
			return "", false
		}
		putWord(&b, v)
		if p.lit(',') {
			continue
		}
		return packed(b.String()), p.lit(']')
	}
}
