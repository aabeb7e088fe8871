package main

// Benchmarks: parse + check 10,000 random linearizable small histories
// (3-4 threads, 5-50 ops each), the shape the C++ recorder produces.
//
//	go test -run '^$' -bench . -benchtime 3x
//
// To time the built binary on the same data, write it to a file:
//
//	go test -run TestWriteRandomHistories -lincheck.write /tmp/set.jsonl -lincheck.model set
//	cdsbench-lincheck-checker --model set --input /tmp/set.jsonl

import (
	"flag"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

var (
	writeFile  = flag.String("lincheck.write", "", "TestWriteRandomHistories: write random linearizable histories to this file")
	writeModel = flag.String("lincheck.model", "set", "TestWriteRandomHistories: model")
	writeCount = flag.Int("lincheck.count", 10000, "TestWriteRandomHistories: number of histories")
)

// randomHistories renders n random linearizable histories of a model.
func randomHistories(model string, n int, seed int64) string {
	r := rand.New(rand.NewSource(seed))
	hs := make([][]hop, n)
	for i := range hs {
		hs[i] = genLinearizable(r, registry[model], opGens[model], 3+r.Intn(2), 5+r.Intn(46))
	}
	return jsonl(`{"generator": "random linearizable", "model": "`+model+`"}`, 0, hs...)
}

func TestWriteRandomHistories(t *testing.T) {
	if *writeFile == "" {
		t.Skip("set -lincheck.write FILE to write random histories")
	}
	if err := os.WriteFile(*writeFile, []byte(randomHistories(*writeModel, *writeCount, 5)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func benchmarkModel(b *testing.B, model string, verbose bool) {
	text := randomHistories(model, 10000, 6)
	spec := registry[model]
	m := ModelOf(spec)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		rec, err := ReadRecording(strings.NewReader(text), spec)
		if err != nil {
			b.Fatal(err)
		}
		parsed := time.Since(start)
		for _, v := range CheckHistories(m, rec.Histories, 10*time.Second, verbose) {
			if v.Result != porcupine.Ok {
				b.Fatal("random linearizable history rejected")
			}
		}
		b.ReportMetric(float64(parsed.Milliseconds()), "parse-ms")
	}
}

func BenchmarkCheck10k(b *testing.B) {
	for _, model := range modelNames() {
		b.Run(model, func(b *testing.B) { benchmarkModel(b, model, false) })
		b.Run(model+"-verbose", func(b *testing.B) { benchmarkModel(b, model, true) })
	}
}
