package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMain lets the test binary act as the checker itself when re-executed
// with LINCHECK_TEST_AS_CLI=1, so the end-to-end test runs a real process
// (argument parsing, stdout/stderr, exit status) without needing a go
// toolchain at test time.
func TestMain(m *testing.M) {
	if os.Getenv("LINCHECK_TEST_AS_CLI") == "1" {
		main()
	}
	os.Exit(m.Run())
}

func runProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "LINCHECK_TEST_AS_CLI=1")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running the checker: %v", err)
	}
	return code, out.String(), errb.String()
}

// hardQueueHistory is a non-linearizable queue history that porcupine cannot
// finish in a few milliseconds: n all-concurrent enqueues and dequeues plus a
// dequeue of a value never enqueued, so every interleaving must be explored.
func hardQueueHistory(n int) []hop {
	var ops []hop
	for i := 0; i < n; i++ {
		ops = append(ops, o(int64(i), int64(i), int64(1000-i), "enqueue", nil, int64(i)))
	}
	for i := 0; i < n; i++ {
		v := i
		if i%2 == 1 {
			v = n - 1 - i
		}
		ops = append(ops, o(int64(n+i), int64(i), int64(1000-i), "dequeue", v))
	}
	return append(ops, o(int64(2*n), 5, 1000, "dequeue", 999))
}

func TestCLIEndToEnd(t *testing.T) {
	dir := t.TempDir()
	good := accepted["queue"][1].ops
	input := jsonl(`{"seed": 42, "structure": "ms_queue", "note": "a b"}`, 10,
		good,                     // 10 ok
		rejected["queue"][0].ops, // 11 violation
		accepted["queue"][0].ops, // 12 ok
		rejected["queue"][2].ops, // 13 violation
		good,                     // 14 ok
	)
	file := filepath.Join(dir, "histories.jsonl")
	if err := os.WriteFile(file, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "html")
	code, stdout, stderr := runProcess(t, "--model", "queue", "--input", file, "--html-dir", html)
	meta := `meta={"seed":42,"structure":"ms_queue","note":"a b"}`
	want := strings.Join([]string{
		"violation history=11 model=queue ops=4 " + meta,
		"visualization=" + filepath.Join(html, "history-11.html"),
		"violation history=13 model=queue ops=3 " + meta,
		"visualization=" + filepath.Join(html, "history-13.html"),
		"histories=5 violations=2 unknown=0",
	}, "\n") + "\n"
	if code != exitViolation || stdout != want || stderr != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}
	for _, id := range []int{11, 13} {
		b, err := os.ReadFile(filepath.Join(html, fmt.Sprintf("history-%d.html", id)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "<html") || !strings.Contains(string(b), "enqueue(1)") || !strings.Contains(string(b), "line ") {
			t.Errorf("history-%d.html does not look like porcupine's visualisation", id)
		}
	}
	if entries, _ := os.ReadDir(html); len(entries) != 2 {
		t.Errorf("expected 2 HTML files, got %d", len(entries))
	}

	// All linearizable, from stdin, no meta line: exit 0.
	code, stdout, _ = runCLI(jsonl("", 1, good, good), "--model", "queue", "--input", "-")
	if code != exitOK || stdout != "histories=2 violations=0 unknown=0\n" {
		t.Errorf("all linearizable: exit %d, stdout %q", code, stdout)
	}

	// A timed-out history is unknown (exit 3), neither violation nor pass;
	// a violation elsewhere still wins (exit 1).
	hard := hardQueueHistory(40)
	code, stdout, _ = runCLI(jsonl("", 1, good, hard), "--model", "queue", "--input", "-", "--timeout-per-history", "100ms")
	if code != exitUnknown || stdout != "unknown history=2 model=queue ops=81 meta={}\nhistories=2 violations=0 unknown=1\n" {
		t.Errorf("timeout: exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = runCLI(jsonl("", 1, rejected["queue"][1].ops, hard), "--model", "queue", "--input", "-", "--timeout-per-history", "100ms")
	if code != exitViolation || !strings.HasSuffix(stdout, "histories=2 violations=1 unknown=1\n") {
		t.Errorf("violation + timeout: exit %d, stdout %q", code, stdout)
	}
}

// Batch histories through the real process: list results are parsed, checked
// and drawn in the visualisation (JSON inside the HTML, hence \u003e for >).
func TestCLIBatchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		model, drawn string
		ok, bad      []hop
	}{
		{"queue", `dequeue_batch(4) -\u003e [1,10,2,11]`, named(accepted, "queue", "staggered, single and batch operations"),
			named(rejected, "queue", "items of two overlapping enqueue_batch dequeued interleaved")},
		{"stack", `pop_batch(4) -\u003e [11,2,10,1]`, named(accepted, "stack", "staggered, single and batch operations"),
			named(rejected, "stack", "items of two overlapping push_batch popped interleaved")},
	} {
		file := filepath.Join(dir, tc.model+".jsonl")
		if err := os.WriteFile(file, []byte(jsonl(`{"batch": 4}`, 1, tc.ok, tc.bad, tc.ok)), 0o644); err != nil {
			t.Fatal(err)
		}
		html := filepath.Join(dir, tc.model)
		code, stdout, stderr := runProcess(t, "--model", tc.model, "--input", file, "--html-dir", html)
		want := fmt.Sprintf("violation history=2 model=%s ops=3 meta={\"batch\":4}\nvisualization=%s\nhistories=3 violations=1 unknown=0\n",
			tc.model, filepath.Join(html, "history-2.html"))
		if code != exitViolation || stdout != want || stderr != "" {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", tc.model, code, stdout, want, stderr)
		}
		b, err := os.ReadFile(filepath.Join(html, "history-2.html"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.drawn) {
			t.Errorf("%s: history-2.html does not show %q", tc.model, tc.drawn)
		}
	}
}

func TestCLIUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--input", "-"}, "--model is required"},
		{[]string{"--model", "tree", "--input", "-"}, `unknown --model "tree"`},
		{[]string{"--model", "set"}, "--input is required"},
		{[]string{"--model", "set", "--input", "-", "extra"}, `unexpected argument "extra"`},
		{[]string{"--model", "set", "--input", "-", "--timeout-per-history", "soon"}, "invalid value"},
		{[]string{"--model", "set", "--input", "-", "--bogus"}, "flag provided but not defined"},
		{[]string{"--model", "set", "--input", "/nonexistent/file"}, "no such file"},
	}
	for _, tc := range cases {
		code, stdout, stderr := runCLI("", tc.args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) ||
			!strings.HasPrefix(stderr, progName+": ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q",
				tc.args, code, stdout, stderr, tc.want)
		}
	}
	if code, stdout, _ := runCLI("", "--help"); code != exitOK || !strings.Contains(stdout, "--model") {
		t.Errorf("--help: exit %d, stdout %q", code, stdout)
	}
}

func TestInputErrors(t *testing.T) {
	okLine := `{"history": 1, "thread": 0, "op": "insert", "args": [5], "result": 1, "call": 1, "return": 3}`
	cases := []struct {
		name  string
		model string
		bad   string // becomes line 3, after a meta line and okLine
		want  string
	}{
		{"truncated JSON", "set", `{"history": 1, "thread": 0,`, "line 3: invalid JSON"},
		{"not an object", "set", `[1, 2]`, "line 3: a line must be a JSON object"},
		{"trailing data", "set", okLine + ` {}`, "line 3: invalid JSON"},
		{"string result", "set", `{"history": 1, "thread": 1, "op": "contains", "args": [5], "result": "yes", "call": 1, "return": 2}`,
			`line 3: "result" must be an integer, null or an array of integers`},
		{"float result", "set", `{"history": 1, "thread": 1, "op": "contains", "args": [5], "result": 1.5, "call": 1, "return": 2}`,
			`line 3: "result" must be an integer, null or an array of integers`},
		{"boolean result", "set", `{"history": 1, "thread": 1, "op": "contains", "args": [5], "result": true, "call": 1, "return": 2}`,
			`line 3: "result" must be an integer, null or an array of integers`},
		{"missing result", "set", `{"history": 1, "thread": 1, "op": "contains", "args": [5], "call": 1, "return": 2}`,
			`line 3: missing "result"`},
		{"missing history", "set", `{"thread": 1, "op": "contains", "args": [5], "result": 0, "call": 1, "return": 2}`,
			`line 3: missing or null "history"`},
		{"null args", "set", `{"history": 1, "thread": 1, "op": "contains", "args": null, "result": 0, "call": 1, "return": 2}`,
			`line 3: missing or null "args"`},
		{"string arg", "set", `{"history": 1, "thread": 1, "op": "contains", "args": ["5"], "result": 0, "call": 1, "return": 2}`,
			`line 3: "args" must be an array of integers`},
		{"float call", "set", `{"history": 1, "thread": 1, "op": "contains", "args": [5], "result": 0, "call": 1.5, "return": 2}`,
			`line 3: "call" must be an integer`},
		{"numeric op", "set", `{"history": 1, "thread": 1, "op": 3, "args": [5], "result": 0, "call": 1, "return": 2}`,
			`line 3: "op" must be a string`},
		{"unknown field", "set", `{"history": 1, "thread": 1, "op": "contains", "args": [5], "result": 0, "call": 1, "return": 2, "key": 5}`,
			`line 3: unknown field "key"`},
		{"call after return", "set", `{"history": 1, "thread": 1, "op": "contains", "args": [5], "result": 0, "call": 30, "return": 20}`,
			`line 3: "call" (30) is after "return" (20)`},
		{"unknown op", "set", `{"history": 1, "thread": 1, "op": "push", "args": [5], "result": null, "call": 1, "return": 2}`,
			`line 3: unknown op "push" for model set`},
		{"unknown op for queue", "queue", `{"history": 1, "thread": 1, "op": "insert", "args": [5], "result": null, "call": 1, "return": 2}`,
			`line 3: unknown op "insert" for model queue`},
		{"wrong arity", "map", `{"history": 1, "thread": 1, "op": "insert", "args": [5], "result": 1, "call": 1, "return": 2}`,
			`line 3: op "insert" of model map takes 2 argument(s), got 1`},
		{"second meta line", "set", `{"meta": {"seed": 2}}`, `line 3: a "meta" line must be the first line`},
		{"meta with other fields", "set", `{"meta": {}, "history": 1}`, `line 3: a "meta" line must have no other field`},
		{"list result with a string", "queue", `{"history": 1, "thread": 1, "op": "dequeue_batch", "args": [2], "result": [1, "a"], "call": 1, "return": 2}`,
			`line 3: "result" must be an integer, null or an array of integers`},
		{"list result with a float", "queue", `{"history": 1, "thread": 1, "op": "dequeue_batch", "args": [2], "result": [1.5], "call": 1, "return": 2}`,
			`line 3: "result" must be an integer, null or an array of integers`},
		{"list result out of range", "queue", `{"history": 1, "thread": 1, "op": "dequeue_batch", "args": [2], "result": [9223372036854775808], "call": 1, "return": 2}`,
			`line 3: "result" must be an integer, null or an array of integers`},
		{"nested list result", "stack", `{"history": 1, "thread": 1, "op": "pop_batch", "args": [2], "result": [[1], 2], "call": 1, "return": 2}`,
			`line 3: "result" must be an integer, null or an array of integers`},
		{"object result", "stack", `{"history": 1, "thread": 1, "op": "pop", "args": [], "result": {"v": 1}, "call": 1, "return": 2}`,
			`line 3: "result" must be an integer, null or an array of integers`},
		{"list result with a trailing comma", "queue", `{"history": 1, "thread": 1, "op": "dequeue_batch", "args": [2], "result": [1,], "call": 1, "return": 2}`,
			`line 3: invalid JSON`},
		{"list result for a single op", "queue", `{"history": 1, "thread": 1, "op": "dequeue", "args": [], "result": [1], "call": 1, "return": 2}`,
			`line 3: op "dequeue" of model queue returns an integer or null, got [1]`},
		{"list result for a set op", "set", `{"history": 1, "thread": 1, "op": "contains", "args": [5], "result": [], "call": 1, "return": 2}`,
			`line 3: op "contains" of model set returns an integer or null, got []`},
		{"null result for dequeue_batch", "queue", `{"history": 1, "thread": 1, "op": "dequeue_batch", "args": [2], "result": null, "call": 1, "return": 2}`,
			`line 3: op "dequeue_batch" of model queue returns an array of integers, got null`},
		{"integer result for pop_batch", "stack", `{"history": 1, "thread": 1, "op": "pop_batch", "args": [2], "result": 3, "call": 1, "return": 2}`,
			`line 3: op "pop_batch" of model stack returns an array of integers, got 3`},
		{"zero count", "queue", `{"history": 1, "thread": 1, "op": "enqueue_batch", "args": [1, 0], "result": null, "call": 1, "return": 2}`,
			`line 3: op "enqueue_batch" of model queue: count must be in 1..65536, got 0`},
		{"huge count", "stack", `{"history": 1, "thread": 1, "op": "push_batch", "args": [1, 4611686018427387904], "result": null, "call": 1, "return": 2}`,
			`line 3: op "push_batch" of model stack: count must be in 1..65536, got 4611686018427387904`},
		{"zero max", "stack", `{"history": 1, "thread": 1, "op": "pop_batch", "args": [0], "result": [], "call": 1, "return": 2}`,
			`line 3: op "pop_batch" of model stack: max must be >= 1, got 0`},
		{"batch op without its count", "queue", `{"history": 1, "thread": 1, "op": "enqueue_batch", "args": [1], "result": null, "call": 1, "return": 2}`,
			`line 3: op "enqueue_batch" of model queue takes 2 argument(s), got 1`},
		{"same thread overlapping", "set", `{"history": 1, "thread": 0, "op": "contains", "args": [5], "result": 1, "call": 2, "return": 4}`,
			`line 3: history 1 thread 0: operation (call 2) overlaps the thread's operation on line 2 (return 3)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			okForModel := okLine
			if tc.model == "map" {
				okForModel = strings.Replace(okLine, `"args": [5]`, `"args": [5, 50]`, 1)
			}
			if tc.model == "queue" {
				okForModel = strings.Replace(strings.Replace(okLine, `"insert"`, `"enqueue"`, 1), `"result": 1`, `"result": null`, 1)
			}
			if tc.model == "stack" {
				okForModel = strings.Replace(strings.Replace(okLine, `"insert"`, `"push_batch"`, 1), `"args": [5], "result": 1`, `"args": [5, 2], "result": null`, 1)
			}
			input := `{"meta": {"seed": 1}}` + "\n" + okForModel + "\n" + tc.bad + "\n" +
				strings.Replace(okForModel, `"history": 1`, `"history": 2`, 1) + "\n"
			code, stdout, stderr := runCLI(input, "--model", tc.model, "--input", "-")
			wantPrefix := progName + ": " + tc.want
			if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, wantPrefix) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, wantPrefix)
			}
		})
	}

	// The error reported is the first one, even when lines are parsed in
	// parallel chunks and a later chunk also has errors.
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		switch i {
		case 15000, 3:
			b.WriteString("garbage\n")
		default:
			fmt.Fprintf(&b, `{"history": %d, "thread": 0, "op": "insert", "args": [5], "result": 1, "call": 1, "return": 2}`+"\n", i)
		}
	}
	if code, _, stderr := runCLI(b.String(), "--model", "set", "--input", "-"); code != exitUsage ||
		!regexp.MustCompile(`^`+progName+`: line 4: invalid JSON`).MatchString(stderr) {
		t.Errorf("first error: exit %d, stderr %q", code, stderr)
	}

	// Blank lines are skipped but counted; an input with no operation is an error.
	if code, stdout, stderr := runCLI("\n"+okLine+"\n\n  \n", "--model", "set", "--input", "-"); code != exitOK ||
		stdout != "histories=1 violations=0 unknown=0\n" {
		t.Errorf("blank lines: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(`{"meta": {}}`+"\n", "--model", "set", "--input", "-"); code != exitUsage ||
		!strings.Contains(stderr, "no operations") {
		t.Errorf("empty input: exit %d, stderr %q", code, stderr)
	}
}
