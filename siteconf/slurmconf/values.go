package slurmconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseTime reads a slurm.conf time: "min", "min:sec", "hr:min:sec",
// "days-hr", "days-hr:min", "days-hr:min:sec" (slurm.conf(5), MaxTime),
// in seconds; INFINITE and UNLIMITED give infinite.
func parseTime(s string) (secs int64, infinite bool, err error) {
	if strings.EqualFold(s, "infinite") || strings.EqualFold(s, "unlimited") {
		return 0, true, nil
	}
	bad := fmt.Errorf("%q is not a time (min, min:sec, hr:min:sec, days-hr, days-hr:min or days-hr:min:sec)", s)
	days, rest, hasDays := strings.Cut(s, "-")
	var d int64
	if hasDays {
		if d, err = whole(days); err != nil {
			return 0, false, bad
		}
	}
	parts := strings.Split(rest, ":")
	if !hasDays {
		parts = strings.Split(s, ":")
	}
	nums := make([]int64, len(parts))
	for i, p := range parts {
		if nums[i], err = whole(p); err != nil {
			return 0, false, bad
		}
	}
	var h, m, sec int64
	switch {
	case hasDays && len(nums) == 1:
		h = nums[0]
	case hasDays && len(nums) == 2:
		h, m = nums[0], nums[1]
	case len(nums) == 3:
		h, m, sec = nums[0], nums[1], nums[2]
	case !hasDays && len(nums) == 1:
		m = nums[0]
	case !hasDays && len(nums) == 2:
		m, sec = nums[0], nums[1]
	default:
		return 0, false, bad
	}
	t := ((d*24+h)*60+m)*60 + sec
	if t < 0 || d > 1e6 || h > 1e8 || m > 1e10 || sec > 1e12 {
		return 0, false, bad
	}
	return t, false, nil
}

// whole reads a whole number ≥ 0 of at most 12 digits.
func whole(s string) (int64, error) {
	if s == "" || len(s) > 12 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// wholeInt reads a whole number ≥ 0 that fits a 32-bit int (Slurm's
// uint32 options).
func wholeInt(s string) (int, error) {
	x, err := whole(s)
	if err != nil || x > math.MaxInt32 {
		return 0, fmt.Errorf("%q is not a whole number up to %d", s, math.MaxInt32)
	}
	return int(x), nil
}

// yesNo reads YES/NO (also TRUE/FALSE, 1/0), case insensitive.
func yesNo(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "yes", "true", "1":
		return true, nil
	case "no", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not YES or NO", s)
}

// gresGPUs is the GPUs a node's Gres gives: the counts of its gpu
// entries (gpu, gpu:8, gpu:a100:4, gpu:a100:4(S:0-1), a K/M/G suffix
// multiplying by 1024s); other GRES (mps, shard, …) give none.
func gresGPUs(s string) (int, error) {
	total := 0
	for _, e := range splitTop(strings.ReplaceAll(strings.ReplaceAll(s, "(", "["), ")", "]")) {
		if i := strings.IndexByte(e, '['); i >= 0 {
			e = e[:i] // the socket or core binding
		}
		fields := strings.Split(e, ":")
		if !strings.EqualFold(fields[0], "gpu") {
			if fields[0] == "" {
				return 0, fmt.Errorf("%q: an empty GRES", s)
			}
			continue
		}
		n := 1
		if len(fields) > 1 {
			last := fields[len(fields)-1]
			c, err := gresCount(last)
			switch {
			case err == nil:
				n = c
			case len(fields) > 2:
				return 0, fmt.Errorf("%q: %q is not a count", s, last)
			}
		}
		if total += n; total > math.MaxInt32 {
			return 0, fmt.Errorf("%q: too many GPUs", s)
		}
	}
	return total, nil
}

// gresCount reads a GRES count with an optional K, M or G suffix.
func gresCount(s string) (int, error) {
	mult := 1
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := wholeInt(s)
	if err != nil || int64(n)*int64(mult) > math.MaxInt32 {
		return 0, fmt.Errorf("%q is not a count", s)
	}
	return n * mult, nil
}
