// Command cdsbench-lincheck-checker checks recorded concurrent histories for
// linearizability against a sequential specification, using porcupine
// (github.com/anishathalye/porcupine).
//
// Usage:
//
//	cdsbench-lincheck-checker --model set|map|queue|stack|pqueue --input FILE
//	    [--timeout-per-history 10s] [--html-dir DIR]
//
// FILE ("-" for stdin) holds JSON lines, one operation each (see history.go),
// possibly many histories. Output, one line each, in increasing history id:
//
//	violation history=N model=M ops=K meta=<compact JSON of the meta line, {} if none>
//	visualization=DIR/history-N.html          (after a violation, with --html-dir)
//	unknown history=N model=M ops=K meta=...  (check timed out: neither passed nor failed)
//	histories=H violations=V unknown=U        (always last)
//
// meta is always the last field of a line (it may contain spaces).
//
// Exit status: 0 all histories linearizable; 1 at least one violation; 3 no
// violation but some unknown; 2 usage or input error (one line on stderr).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

const progName = "cdsbench-lincheck-checker"

const (
	exitOK        = 0
	exitViolation = 1
	exitUsage     = 2
	exitUnknown   = 3
)

func main() {
	// The histories are parsed into many small objects that live until the check ends: a
	// collection at every doubling of the heap (GOGC=100) spent a fifth of the checker's CPU
	// rescanning them (1,000 histories of a set: 0.46 CPU-s at 100, 0.37 at 400, for 80 and 150
	// MB). GOGC in the environment still overrides this.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(progName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	modelName := fs.String("model", "", "sequential specification: "+strings.Join(modelNames(), "|"))
	input := fs.String("input", "", `file of recorded histories (JSON lines); "-" for stdin`)
	timeout := fs.Duration("timeout-per-history", 10*time.Second, "give up on a history after this long (0: never); it is then reported as unknown")
	htmlDir := fs.String("html-dir", "", "write porcupine's HTML visualisation of each violating history to DIR/history-N.html")
	usageErr := func(format string, a ...interface{}) int {
		fmt.Fprintf(stderr, "%s: %s (see --help)\n", progName, fmt.Sprintf(format, a...))
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: %s --model %s --input FILE [--timeout-per-history 10s] [--html-dir DIR]\n",
				progName, strings.Join(modelNames(), "|"))
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return exitOK
		}
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	spec, ok := registry[*modelName]
	if !ok {
		if *modelName == "" {
			return usageErr("--model is required (one of %s)", strings.Join(modelNames(), ", "))
		}
		return usageErr("unknown --model %q (one of %s)", *modelName, strings.Join(modelNames(), ", "))
	}
	if *input == "" {
		return usageErr("--input is required")
	}
	if *timeout < 0 {
		return usageErr("--timeout-per-history must not be negative")
	}

	var in io.Reader = stdin
	name := "stdin"
	if *input != "-" {
		f, err := os.Open(*input)
		if err != nil {
			return fail(stderr, err)
		}
		defer f.Close()
		in, name = f, *input
	}
	rec, err := ReadRecording(in, spec)
	if err != nil {
		return fail(stderr, err)
	}
	if len(rec.Histories) == 0 {
		return fail(stderr, fmt.Errorf("%s: no operations in the input", name))
	}
	if *htmlDir != "" {
		if err := os.MkdirAll(*htmlDir, 0o755); err != nil {
			return fail(stderr, err)
		}
	}

	model := ModelOf(spec)
	verdicts := CheckHistories(model, rec.Histories, *timeout, *htmlDir != "")

	meta := rec.Meta
	if meta == "" {
		meta = "{}"
	}
	violations, unknown := 0, 0
	for i, v := range verdicts {
		h := rec.Histories[i]
		var kind string
		switch v.Result {
		case porcupine.Ok:
			continue
		case porcupine.Illegal:
			kind = "violation"
			violations++
		default:
			kind = "unknown"
			unknown++
		}
		fmt.Fprintf(stdout, "%s history=%d model=%s ops=%d meta=%s\n", kind, h.ID, spec.Name(), len(h.Ops), meta)
		if kind == "violation" && *htmlDir != "" {
			path := filepath.Join(*htmlDir, fmt.Sprintf("history-%d.html", h.ID))
			if err := porcupine.VisualizePath(model, v.Info, path); err != nil {
				return fail(stderr, fmt.Errorf("writing visualization: %w", err))
			}
			fmt.Fprintf(stdout, "visualization=%s\n", path)
		}
	}
	fmt.Fprintf(stdout, "histories=%d violations=%d unknown=%d\n", len(rec.Histories), violations, unknown)
	switch {
	case violations > 0:
		return exitViolation
	case unknown > 0:
		return exitUnknown
	}
	return exitOK
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", progName, err)
	return exitUsage
}
