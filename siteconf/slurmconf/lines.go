package slurmconf

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// The file's syntax as slurm.conf(5) states it: text after "#" is a
// comment; a line ending in "\" continues on the next; a line
// "Include FILE" reads FILE in its place (a relative name is under the
// including file's folder); every other line is key=value pairs separated
// by blanks, a value in double quotes may hold blanks. Keys are case
// insensitive; the names of nodes and partitions are not.

// pair is one key=value of a line, where it was written.
type pair struct {
	Key   string // as written
	Value string
	Pos   Pos
}

// Pos is a place in a file: its name and line (from 1).
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// line is one logical line's pairs (a continued line joined).
type line struct {
	Pos   Pos
	Pairs []pair
}

// Bounds a file may not cross: a typo should hit them long before it
// exhausts the machine.
const (
	maxLineBytes    = 1 << 20
	maxIncludeDepth = 16
)

// Error is a problem at a place in a file.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

func errAt(p Pos, format string, a ...any) error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, a...)}
}

// readLines reads the logical lines of the file name from r, Includes
// opened with open, depth the Include nesting so far.
func readLines(name string, r io.Reader, open Opener, depth int, out *[]line) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLineBytes)
	n, start := 0, 0
	var text strings.Builder
	flush := func() error {
		if text.Len() == 0 {
			return nil
		}
		s := text.String()
		text.Reset()
		return parseLine(Pos{name, start}, s, open, depth, out)
	}
	for sc.Scan() {
		n++
		raw := sc.Text()
		if i := strings.IndexByte(raw, '#'); i >= 0 {
			raw = raw[:i]
		}
		if text.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(raw, "\r"), `\`); ok {
			// Joined as Slurm joins them: the backslash and the newline
			// dropped, nothing added.
			text.WriteString(s)
			continue
		}
		text.WriteString(raw)
		if err := flush(); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return errAt(Pos{name, n + 1}, "%v", err)
	}
	return flush()
}

// parseLine splits a logical line into its pairs, or reads the file an
// Include names.
func parseLine(p Pos, s string, open Opener, depth int, out *[]line) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if word, rest, ok := strings.Cut(s, " "); ok && strings.EqualFold(word, "include") || strings.EqualFold(s, "include") {
		return include(p, strings.TrimSpace(rest), open, depth, out)
	}
	if word, rest, ok := strings.Cut(s, "\t"); ok && strings.EqualFold(word, "include") {
		return include(p, strings.TrimSpace(rest), open, depth, out)
	}
	l := line{Pos: p}
	for s != "" {
		eq := strings.IndexAny(s, "= \t")
		if eq < 0 || s[eq] != '=' {
			word, _, _ := strings.Cut(s, " ")
			return errAt(p, "%q is not key=value (slurm.conf(5): one or more key=value pairs per line)", word)
		}
		key := s[:eq]
		if key == "" {
			return errAt(p, "a value without a key (\"=%s\")", firstWord(s[eq+1:]))
		}
		s = s[eq+1:]
		var val string
		if strings.HasPrefix(s, `"`) {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return errAt(p, "key %s: the quoted value is not closed", key)
			}
			val, s = s[1:end+1], s[end+2:]
		} else {
			end := strings.IndexAny(s, " \t")
			if end < 0 {
				end = len(s)
			}
			val, s = s[:end], s[end:]
		}
		l.Pairs = append(l.Pairs, pair{Key: key, Value: val, Pos: p})
		s = strings.TrimLeft(s, " \t")
	}
	*out = append(*out, l)
	return nil
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	return w
}

// include reads the file an Include line names, under the including
// file's folder when relative.
func include(p Pos, file string, open Opener, depth int, out *[]line) error {
	if file == "" {
		return errAt(p, "key Include: no file named")
	}
	if strings.Contains(file, "%") {
		return errAt(p, "key Include: %q: the %%c, %%h, %%n modifiers are not supported; name the file", file)
	}
	if depth >= maxIncludeDepth {
		return errAt(p, "key Include: more than %d nested Includes (a file that includes itself?)", maxIncludeDepth)
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(p.File), file)
	}
	rc, err := open(file)
	if err != nil {
		return errAt(p, "key Include: %v", err)
	}
	defer rc.Close()
	return readLines(file, rc, open, depth+1, out)
}
