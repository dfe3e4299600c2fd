package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
)

// `warden decisions tail|grep` read the decision log host/decision writes: one JSON object
// per line (see decision.Log), rotated to PATH.1, PATH.2, … by decision.RotatingFile.

func runDecisions(ctx context.Context, g *global, args []string) error {
	return runSubcommand(ctx, g, "decisions", args, []command{
		{name: "tail", run: decisionsTail},
		{name: "grep", run: func(_ context.Context, g *global, args []string) error { return decisionsGrep(g, args) }},
	})
}

// decisionFilters are the flags tail and grep share. Values of one filter are alternatives;
// different filters must all match.
type decisionFilters struct {
	threads, plugins, hooks, outcomes stringList
	asJSON                            bool
}

func (f *decisionFilters) register(fl *flag.FlagSet) {
	fl.Var(&f.threads, "thread", "only this thread's lines (repeatable)")
	fl.Var(&f.plugins, "plugin", "only this plugin's lines: an id (name@version) or a name (repeatable)")
	fl.Var(&f.hooks, "hook", "only this hook's lines: "+strings.Join(decisionHooks(), ", ")+" (repeatable)")
	fl.Var(&f.outcomes, "outcome", "only lines with this action in their outcome, e.g. deny, hide, disable; error: a failed policy (repeatable)")
	fl.BoolVar(&f.asJSON, "json", false, "print the log's raw JSON lines")
}

// check rejects a hook or an outcome no decision log line can have: a typo would
// otherwise print nothing, which reads as "no such decision".
func (f *decisionFilters) check(g *global, cmd string) error {
	for _, h := range f.hooks {
		if !slices.Contains(decisionHooks(), h) {
			fmt.Fprintf(g.io.Stderr, "warden decisions %s: unknown hook %q (want one of %s)\n", cmd, h, strings.Join(decisionHooks(), ", "))
			return errUsage
		}
	}
	for _, o := range f.outcomes {
		if !slices.Contains(decisionOutcomes(), o) {
			fmt.Fprintf(g.io.Stderr, "warden decisions %s: unknown outcome %q (want one of %s)\n", cmd, o, strings.Join(decisionOutcomes(), ", "))
			return errUsage
		}
	}
	return nil
}

// decisionHooks are the hook names a line can carry: the policy hooks, and the user's
// answers to approvals.
func decisionHooks() []string {
	var out []string
	for _, h := range abi.Hooks() {
		out = append(out, h.String())
	}
	return append(out, "approval")
}

// decisionOutcomes are the actions a line's outcome can hold, and "error".
func decisionOutcomes() []string {
	var out []string
	for a := abi.ServerExpose; a <= abi.ServerHide; a++ {
		out = append(out, a.String())
	}
	for a := abi.CredentialUnspecified; a <= abi.CredentialDeny; a++ {
		out = append(out, a.String())
	}
	for a := abi.ToolCallAllow; a <= abi.ToolCallAsk; a++ {
		out = append(out, a.String())
	}
	for a := abi.ToolResultPass; a <= abi.ToolResultError; a++ {
		out = append(out, a.String())
	}
	out = append(out, decision.ApprovalAccepted, decision.ApprovalDeclined, decision.ApprovalCancelled, decision.ApprovalRefused, "error")
	slices.Sort(out)
	return slices.Compact(out)
}

// match reports whether l passes the filters.
func (f *decisionFilters) match(l *decisionLine) bool {
	if len(f.threads) > 0 && !slices.Contains(f.threads, l.Thread) {
		return false
	}
	if len(f.plugins) > 0 {
		name, _, _ := strings.Cut(l.Plugin, "@")
		if !slices.Contains(f.plugins, l.Plugin) && !slices.Contains(f.plugins, name) {
			return false
		}
	}
	if len(f.hooks) > 0 && !slices.Contains(f.hooks, l.Hook) {
		return false
	}
	if len(f.outcomes) > 0 {
		return slices.ContainsFunc(f.outcomes, func(o string) bool {
			// "error" is a failed policy; it is also the tool_result action of that name.
			if o == "error" && l.Error != nil {
				return true
			}
			return slices.ContainsFunc(l.Outcome, func(kv keyValue) bool { return kv.Value == o })
		})
	}
	return true
}

// decisionLine is one parsed line. Outcome and Reasons keep the line's order (the
// policy's order of servers), which a map would lose.
type decisionLine struct {
	Time    string     `json:"time"`
	Thread  string     `json:"thread"`
	Plugin  string     `json:"plugin"`
	Hook    string     `json:"hook"`
	Server  string     `json:"server"` // an approval's
	Tool    string     `json:"tool"`   // an approval's
	Outcome orderedMap `json:"outcome"`
	Reasons orderedMap `json:"reasons"`
	Error   *string    `json:"error"` // a failed policy's, instead of an outcome
	Ignored []string   `json:"ignored"`
}

type keyValue struct{ Key, Value string }

// orderedMap is a JSON object of strings, in the object's order.
type orderedMap []keyValue

func (m *orderedMap) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil { // null
		*m = nil
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return errors.New("want an object of strings")
	}
	var out orderedMap
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
		out = append(out, keyValue{k.(string), v})
	}
	*m = out
	return nil
}

// parseDecisionLine parses one line; a line without a time and a hook is not a decision.
func parseDecisionLine(b []byte) (*decisionLine, error) {
	var l decisionLine
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	if l.Time == "" || l.Hook == "" {
		return nil, errors.New(`no "time" or no "hook"`)
	}
	return &l, nil
}

// format is the readable one-line form: time, thread, plugin, hook, what the line is about
// (an approval's server/tool), the outcome (or the policy's error), then the reasons.
func (l *decisionLine) format() string {
	var b strings.Builder
	t := l.Time
	if ts, err := time.Parse(time.RFC3339Nano, l.Time); err == nil {
		t = ts.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	b.WriteString(clean(t))
	for _, s := range []string{l.Thread, l.Plugin, l.Hook} {
		b.WriteByte(' ')
		b.WriteString(orDash(s))
	}
	if l.Server != "" || l.Tool != "" {
		b.WriteString(" " + clean(l.Server) + "/" + clean(l.Tool))
	}
	if l.Error != nil {
		b.WriteString(" error: " + clean(*l.Error))
	}
	for _, kv := range l.Outcome {
		b.WriteString(" " + clean(kv.Key) + "=" + clean(kv.Value))
	}
	if len(l.Ignored) > 0 {
		names := make([]string, len(l.Ignored))
		for i, n := range l.Ignored {
			names[i] = clean(n)
		}
		b.WriteString(" ignored=" + strings.Join(names, ","))
	}
	for i, kv := range l.Reasons {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(clean(kv.Key) + ": " + clean(kv.Value))
	}
	if len(l.Reasons) > 0 {
		b.WriteByte(')')
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return clean(s)
}

// clean makes s safe to print on a terminal: what a log line holds comes from plugins and
// servers, and a control character (an escape sequence, a newline) would forge output.
func clean(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

// decisionLogPath returns the home's decision log file, or an error saying how to get one.
func decisionLogPath(g *global) (string, error) {
	file := filepath.Join(g.home, config.ConfigFile)
	cfg, err := config.LoadConfig(file, config.Origin{Kind: config.OriginHostConfig})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("no decision log: %s does not exist (point warden at your home with --home DIR or WARDEN_HOME, or create it with a [decision_log] table: path = \"decisions.jsonl\")", file)
	case err != nil:
		// The valid part of a config with errors still names the log.
		g.log.Warn("config.toml has problems; run `warden config check`", "error", err)
	}
	dl := cfg.DecisionLog
	switch {
	case dl.Path == "":
		return "", fmt.Errorf("no decision log is configured in %s: add\n\n    [decision_log]\n    path = \"decisions.jsonl\"\n\nand restart warden; decisions made from then on are logged", file)
	case dl.Stderr():
		return "", fmt.Errorf("the decision log goes to standard error ([decision_log] path = %q in %s): set a file path to read it with `warden decisions`", dl.Path, file)
	}
	return dl.Path, nil
}

// rotatedFiles returns PATH's rotated files, PATH.1 (the newest) first.
func rotatedFiles(path string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	prefix := filepath.Base(path) + "."
	type numbered struct {
		n    int
		name string
	}
	var found []numbered
	for _, e := range ents {
		suffix, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(suffix)
		if err != nil || n < 1 || strconv.Itoa(n) != suffix {
			continue
		}
		found = append(found, numbered{n, filepath.Join(filepath.Dir(path), e.Name())})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].n < found[j].n })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.name
	}
	return out, nil
}

// maxDecisionLine bounds one line; a longer one is skipped with a warning.
const maxDecisionLine = 16 << 20

// lineReader hands out a file's lines with their numbers and warns about the ones that are
// not decisions.
type lineReader struct {
	g      *global
	f      *decisionFilters
	out    *bufio.Writer
	warned int // malformed lines reported, over every file
}

// maxWarnings caps the per-line warnings: a file that is not a decision log at all says
// so in a few lines, not one per line.
const maxWarnings = 20

func (r *lineReader) warn(path string, line int, err error) {
	r.warned++
	switch {
	case r.warned <= maxWarnings:
		fmt.Fprintf(r.g.io.Stderr, "warning: %s:%d: not a decision log line (skipped): %v\n", path, line, err)
	case r.warned == maxWarnings+1:
		fmt.Fprintf(r.g.io.Stderr, "warning: more lines are not decision log lines; no more are reported\n")
	}
}

// emit prints one matching line, raw or readable.
func (r *lineReader) emit(raw []byte, l *decisionLine) {
	if r.f.asJSON {
		r.out.Write(raw)
		r.out.WriteByte('\n')
		return
	}
	r.out.WriteString(l.format())
	r.out.WriteByte('\n')
}

// forward reads f's lines from its current offset, numbering them from first; each
// complete line that keep (nil: every line) selects is parsed, and passed to each when it
// matches the filters. It returns the offset
// reached after the last complete line and the next line number; an unterminated last
// line is left unread (it is still being written).
func (r *lineReader) forward(f *os.File, path string, offset int64, first int, keep func(raw []byte) bool, each func(raw []byte, l *decisionLine)) (int64, int, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, offset, 1<<62), 64<<10)
	n := first
	lineStart := offset
	var long []byte // a line longer than the reader's buffer, assembled
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong {
				long = append(long, chunk...)
				if len(long) > maxDecisionLine {
					tooLong, long = true, nil
				}
			}
			offset += int64(len(chunk))
			continue
		}
		if err == io.EOF {
			// An unterminated last line, still being written: read it next time.
			return lineStart, n, nil
		}
		if err != nil {
			return lineStart, n, fmt.Errorf("decision log: %w", err)
		}
		offset += int64(len(chunk))
		lineStart = offset
		raw := chunk[:len(chunk)-1]
		if long != nil {
			raw = append(long, raw...)
			long = nil
		}
		if tooLong {
			tooLong = false
			r.warn(path, n, fmt.Errorf("longer than %d bytes", maxDecisionLine))
			n++
			continue
		}
		line := n
		n++
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if keep != nil && !keep(raw) {
			continue
		}
		l, perr := parseDecisionLine(raw)
		if perr != nil {
			r.warn(path, line, perr)
			continue
		}
		if r.f.match(l) {
			each(raw, l)
		}
	}
}

func decisionsGrep(g *global, args []string) error {
	fl := subFlags(g, "decisions grep", "PATTERN [--thread ID] [--plugin ID] [--hook NAME] [--outcome ACTION] [--json]\n\n"+
		"PATTERN is a Go regular expression ((?i) ignores case) matched against each raw JSON line of\n"+
		"the decision log and its rotated files, oldest first. Exit status 1: no line matched.\n")
	var f decisionFilters
	f.register(fl)
	pos, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fl.Usage()
		return errUsage
	}
	re, err := regexp.Compile(pos[0])
	if err != nil {
		fmt.Fprintf(g.io.Stderr, "warden decisions grep: PATTERN: %v\n", err)
		return errUsage
	}
	if err := f.check(g, "grep"); err != nil {
		return err
	}
	path, err := decisionLogPath(g)
	if err != nil {
		return err
	}
	rotated, err := rotatedFiles(path)
	if err != nil {
		return err
	}
	files := append([]string{path}, rotated...)
	slices.Reverse(files) // oldest first
	r := &lineReader{g: g, f: &f, out: bufio.NewWriter(g.io.Stdout)}
	defer r.out.Flush()
	found := false
	read := 0
	for _, p := range files {
		fh, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			// PATH between a rotation's renames, or not written yet (then read stays 0);
			// a rotated file shifted meanwhile.
			continue
		}
		if err != nil {
			return fmt.Errorf("decision log: %w", err)
		}
		read++
		// The pattern is matched against the raw line, as grep on the file would.
		_, _, err = r.forward(fh, p, 0, 1, re.Match, func(raw []byte, l *decisionLine) {
			found = true
			r.emit(raw, l)
		})
		_ = fh.Close()
		if err != nil {
			return err
		}
	}
	if read == 0 {
		return fmt.Errorf("decision log %s does not exist yet: warden creates it when it first decides (start `warden serve` or `warden mcp`)", path)
	}
	if err := r.out.Flush(); err != nil {
		return err
	}
	if !found {
		return errSilentFailure // as grep: exit 1 when nothing matched
	}
	return nil
}

// followPoll is how often `tail -f` looks for new lines and for a rotation.
var followPoll = 200 * time.Millisecond

func decisionsTail(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "decisions tail", "[-n N] [-f] [--thread ID] [--plugin ID] [--hook NAME] [--outcome ACTION] [--json]")
	var f decisionFilters
	f.register(fl)
	n := fl.Int("n", 10, "print the last N matching lines (the rotated files are read when the current one holds fewer)")
	follow := fl.Bool("f", false, "then print new lines as they are written, across rotations, until interrupted")
	pos, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *n < 0 {
		fl.Usage()
		return errUsage
	}
	if err := f.check(g, "tail"); err != nil {
		return err
	}
	path, err := decisionLogPath(g)
	if err != nil {
		return err
	}
	r := &lineReader{g: g, f: &f, out: bufio.NewWriter(g.io.Stdout)}
	defer r.out.Flush()

	cur, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rotated, _ := rotatedFiles(path) // no directory either: no rotated files
		if len(rotated) == 0 && !*follow {
			return fmt.Errorf("decision log %s does not exist yet: warden creates it when it first decides (start `warden serve` or `warden mcp`)", path)
		}
		if err := r.tailRotated(rotated, *n); err != nil {
			return err
		}
		if !*follow {
			return nil
		}
		fmt.Fprintf(g.io.Stderr, "waiting for %s to be created\n", path)
	case err != nil:
		return fmt.Errorf("decision log: %w", err)
	}

	var offset int64
	var next int
	if cur != nil {
		defer func() { _ = cur.Close() }()
		var lines []tailed
		if offset, next, lines, err = r.last(cur, path, *n); err != nil {
			return err
		}
		if len(lines) < *n {
			rotated, err := rotatedFiles(path)
			if err != nil {
				return err
			}
			if err := r.tailRotated(rotated, *n-len(lines)); err != nil {
				return err
			}
		}
		for _, t := range lines {
			r.emit(t.raw, t.l)
		}
	}
	if err := r.out.Flush(); err != nil {
		return err
	}
	if !*follow {
		return nil
	}
	return r.follow(ctx, path, cur, offset, next)
}

// tailed is a matching line kept for tail.
type tailed struct {
	raw []byte
	l   *decisionLine
}

// last returns the last n matching lines of f, oldest first, with the offset after the
// file's last complete line and that line's number plus one.
//
// It reads f forward once, keeping the last n matches: a file is at most max_size_mb, and
// reading forward numbers the lines a warning names.
func (r *lineReader) last(f *os.File, path string, n int) (int64, int, []tailed, error) {
	// A ring of the last n matches: once full, head is the oldest.
	ring := make([]tailed, 0, min(n, 1024))
	head := 0
	offset, next, err := r.forward(f, path, 0, 1, nil, func(raw []byte, l *decisionLine) {
		if n == 0 {
			return
		}
		t := tailed{bytes.Clone(raw), l}
		if len(ring) < n {
			ring = append(ring, t)
			return
		}
		ring[head] = t
		head = (head + 1) % n
	})
	return offset, next, slices.Concat(ring[head:], ring[:head]), err
}

// tailRotated prints the last n matching lines of the rotated files (PATH.1 first in the
// list, the newest), oldest first.
func (r *lineReader) tailRotated(rotated []string, n int) error {
	var chunks [][]tailed
	for _, p := range rotated {
		if n <= 0 {
			break
		}
		fh, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // shifted by a rotation meanwhile
		}
		if err != nil {
			return fmt.Errorf("decision log: %w", err)
		}
		_, _, lines, err := r.last(fh, p, n)
		_ = fh.Close()
		if err != nil {
			return err
		}
		chunks = append(chunks, lines)
		n -= len(lines)
	}
	for i := len(chunks) - 1; i >= 0; i-- {
		for _, t := range chunks[i] {
			r.emit(t.raw, t.l)
		}
	}
	return nil
}

// follow prints lines appended to path from offset on (line number next) until ctx ends.
// When path stops naming cur (a rotation renamed it to PATH.1 and created PATH anew), cur
// is read to its end, then each newer file in turn: PATH.k-1 … PATH.1 when several
// rotations happened within one poll, then the new PATH, each from its start; so every
// line is printed once, as long as the files are not deleted (keep) before they are read.
// A file truncated in place is read again from its start.
func (r *lineReader) follow(ctx context.Context, path string, cur *os.File, offset int64, next int) error {
	var curInfo os.FileInfo
	if cur != nil {
		var err error
		if curInfo, err = cur.Stat(); err != nil {
			return fmt.Errorf("decision log: %w", err)
		}
	}
	defer func() {
		if cur != nil {
			_ = cur.Close()
		}
	}()
	emit := func(raw []byte, l *decisionLine) { r.emit(raw, l) }
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		if cur != nil {
			var err error
			if offset, next, err = r.forward(cur, path, offset, next, nil, emit); err != nil {
				return err
			}
		}
		fi, err := os.Stat(path)
		moved := err == nil && (cur == nil || !os.SameFile(fi, curInfo))
		if moved {
			var nf *os.File
			if cur == nil {
				nf, err = os.Open(path)
			} else {
				// Lines written to cur after the read above, before it was rotated.
				if offset, next, err = r.forward(cur, path, offset, next, nil, emit); err != nil {
					return err
				}
				nf, err = nextDecisionFile(path, curInfo)
			}
			if err == nil {
				if curInfo, err = nf.Stat(); err != nil {
					_ = nf.Close()
					return fmt.Errorf("decision log: %w", err)
				}
				if cur != nil {
					_ = cur.Close()
				}
				cur, offset, next = nf, 0, 1
				continue
			}
			// Renamed again meanwhile: the next poll looks again.
		} else if err == nil && fi.Size() < offset {
			offset, next = 0, 1
			continue
		}
		if err := r.out.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// nextDecisionFile opens the file written after the one cur describes: the rotated file
// one newer than cur, or path itself; path when cur is no longer among the files (deleted
// past keep, or moved away by someone else).
//
// The files are found by identity, not by name: a writer rotating meanwhile renames
// them all. Two listings in a row that agree (each name the same file) were taken while no
// rotation ran, and the file opened is checked to be the one listed.
func nextDecisionFile(path string, cur os.FileInfo) (*os.File, error) {
	var prev []listedFile
	havePrev := false
	for range 100 {
		list, err := listDecisionFiles(path)
		if err != nil {
			return nil, err
		}
		if !havePrev || !sameDecisionFiles(prev, list) {
			prev, havePrev = list, true
			continue
		}
		i := slices.IndexFunc(list, func(f listedFile) bool { return os.SameFile(f.fi, cur) })
		if i <= 0 {
			return os.Open(path)
		}
		target := list[i-1]
		f, err := os.Open(target.name)
		if err == nil {
			fi, err := f.Stat()
			if err == nil && os.SameFile(fi, target.fi) {
				return f, nil
			}
			_ = f.Close()
		}
		havePrev = false // renamed since: list again, twice
	}
	// Never quiet for long: a writer rotating without pause. The newest file, then.
	return os.Open(path)
}

// listedFile is one file of the decision log, as listDecisionFiles found it.
type listedFile struct {
	name string
	fi   os.FileInfo
}

// listDecisionFiles lists path (when it exists), then PATH.1, PATH.2, …: newest first.
func listDecisionFiles(path string) ([]listedFile, error) {
	rotated, err := rotatedFiles(path)
	if err != nil {
		return nil, err
	}
	var out []listedFile
	for _, name := range append([]string{path}, rotated...) {
		if fi, err := os.Stat(name); err == nil {
			out = append(out, listedFile{name, fi})
		}
	}
	return out, nil
}

// sameDecisionFiles reports whether two listings name the same files (both are in
// listDecisionFiles's order).
func sameDecisionFiles(a, b []listedFile) bool {
	return slices.EqualFunc(a, b, func(f, g listedFile) bool { return f.name == g.name && os.SameFile(f.fi, g.fi) })
}
