package slurmconf

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHosts bounds a hostlist's expansion (node[1-999999999] is a typo).
const maxHosts = 1 << 20

// expandHostlist expands a Slurm hostlist: names separated by commas,
// each with bracketed ranges and numbers, node[01-16,20]: node01 …
// node16, node20 (a range keeps its first number's zero padding), several
// brackets giving every combination (rack[1-2]n[1-2]).
func expandHostlist(s string) ([]string, error) {
	var out []string
	for _, item := range splitTop(s) {
		if item == "" {
			return nil, fmt.Errorf("hostlist %q: an empty name", s)
		}
		names, err := expandItem(item, len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", s, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits s at the commas outside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandItem expands one name with its brackets; have is how many names
// the list holds already.
func expandItem(item string, have int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("%q: a ] without [", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: a [ without ]", item)
	}
	end += open
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	if strings.ContainsRune(prefix, ']') || strings.ContainsRune(ranges, '[') {
		return nil, fmt.Errorf("%q: brackets out of order", item)
	}
	tails, err := expandItem(rest, have)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || lo == "" || lo[0] == '+' || lo[0] == '-' {
			return nil, fmt.Errorf("%q: %q is not a number or a range", item, r)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || hi == "" || hi[0] == '+' || hi[0] == '-' || b < a {
				return nil, fmt.Errorf("%q: %q is not a range low-high", item, r)
			}
		}
		if have+len(out)+(b-a+1)*len(tails) > maxHosts || b-a >= maxHosts {
			return nil, fmt.Errorf("%q: more than %d hosts", item, maxHosts)
		}
		for x := a; x <= b; x++ {
			num := strconv.Itoa(x)
			if len(num) < len(lo) {
				num = strings.Repeat("0", len(lo)-len(num)) + num
			}
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}
