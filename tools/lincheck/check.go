package main

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is porcupine's answer for one history.
type Verdict struct {
	Result porcupine.CheckResult // Ok, Illegal, or Unknown (timed out)
	// Info is set when checked verbosely: the (partial) linearizations that
	// porcupine.Visualize draws.
	Info porcupine.LinearizationInfo
}

// CheckHistories checks every history against model, on GOMAXPROCS worker
// goroutines, with the given timeout per history (0: none). With verbose,
// porcupine also computes the partial linearizations needed for the HTML
// visualisation (a little slower; see BenchmarkCheckSet). Verdicts are in
// the order of hs.
func CheckHistories(model porcupine.Model, hs []*History, timeout time.Duration, verbose bool) []Verdict {
	verdicts := make([]Verdict, len(hs))
	workers := runtime.GOMAXPROCS(0)
	if workers > len(hs) {
		workers = len(hs)
	}
	var next int64 = -1
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(atomic.AddInt64(&next, 1))
				if i >= len(hs) {
					return
				}
				if verbose {
					res, info := porcupine.CheckOperationsVerbose(model, hs[i].Ops, timeout)
					verdicts[i] = Verdict{Result: res, Info: info}
				} else {
					verdicts[i] = Verdict{Result: porcupine.CheckOperationsTimeout(model, hs[i].Ops, timeout)}
				}
			}
		}()
	}
	wg.Wait()
	return verdicts
}
