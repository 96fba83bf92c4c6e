package slurmconf

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/bursar-hpc/bursar/policy/baseline"
)

// Tree is the account tree an `sshare -P -a` dump shows (sshare(1):
// '|'-separated fields under a header line; an account's depth is the
// spaces its name is indented by; a user's row names its account): each
// association's raw shares. The root is left out.
type Tree struct {
	File     string
	Accounts []Account
}

// Account is one account: its parent ("" under the root), its raw
// shares and normalised shares (NormShares: its raw shares over its
// siblings', times its parent's), its users.
type Account struct {
	Name, Parent string
	Shares, Norm float64
	Line         int
	Users        []User
}

// User is one user association of an account.
type User struct {
	Name   string
	Shares float64
	Line   int
}

// ParseSshareFile reads the sshare dump at path.
func ParseSshareFile(path string) (*Tree, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseSshare(path, f)
}

// ParseSshare reads an `sshare -P -a` dump (also -p, with a trailing
// '|'): the header names the columns, of which Account, User and
// RawShares are read.
func ParseSshare(name string, r io.Reader) (*Tree, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLineBytes)
	t := &Tree{File: name}
	col := map[string]int{}
	n, trailing := 0, false
	type frame struct {
		name  string
		depth int
	}
	var stack []frame // the accounts above the current row, by depth
	index := map[string]int{}
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if trailing {
			line = strings.TrimSuffix(line, "|")
		}
		fields := strings.Split(line, "|")
		if len(col) == 0 {
			// sshare -p ends every line with '|', -P does not (an empty
			// last field then ends in '|' too): the header says which.
			if strings.HasSuffix(line, "|") {
				trailing = true
				fields = fields[:len(fields)-1]
			}
			for i, f := range fields {
				col[strings.ToLower(strings.TrimSpace(f))] = i
			}
			for _, need := range []string{"account", "user", "rawshares"} {
				if _, ok := col[need]; !ok {
					return nil, errAt(Pos{name, n}, "the header has no %s column (want the output of sshare -P -a)", need)
				}
			}
			continue
		}
		if len(fields) != len(col) {
			return nil, errAt(Pos{name, n}, "%d fields where the header has %d", len(fields), len(col))
		}
		raw := fields[col["account"]]
		acct := strings.TrimSpace(raw)
		depth := len(raw) - len(strings.TrimLeftFunc(raw, unicode.IsSpace))
		user := strings.TrimSpace(fields[col["user"]])
		sharesText := strings.TrimSpace(fields[col["rawshares"]])
		if acct == "" {
			return nil, errAt(Pos{name, n}, "key Account: empty")
		}
		if acct == "root" {
			continue // the root and its own user row
		}
		shares, err := strconv.ParseFloat(sharesText, 64)
		if err != nil || shares < 0 || math.IsInf(shares, 0) || math.IsNaN(shares) {
			if strings.EqualFold(sharesText, "parent") {
				return nil, errAt(Pos{name, n}, "key RawShares: shares=parent is not modelled; give the association its own shares")
			}
			return nil, errAt(Pos{name, n}, "key RawShares: %q is not a number ≥ 0", sharesText)
		}
		if user != "" {
			i, ok := index[acct]
			if !ok {
				return nil, errAt(Pos{name, n}, "key Account: user %s's account %s has no row above it", user, acct)
			}
			t.Accounts[i].Users = append(t.Accounts[i].Users, User{Name: user, Shares: shares, Line: n})
			continue
		}
		if _, dup := index[acct]; dup {
			return nil, errAt(Pos{name, n}, "key Account: account %s listed twice", acct)
		}
		for len(stack) > 0 && stack[len(stack)-1].depth >= depth {
			stack = stack[:len(stack)-1]
		}
		parent := ""
		if len(stack) > 0 {
			parent = stack[len(stack)-1].name
		}
		stack = append(stack, frame{acct, depth})
		index[acct] = len(t.Accounts)
		t.Accounts = append(t.Accounts, Account{Name: acct, Parent: parent, Shares: shares, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, errAt(Pos{name, n + 1}, "%v", err)
	}
	if len(col) == 0 {
		return nil, errAt(Pos{name, 1}, "empty: want the output of sshare -P -a, a header first")
	}
	t.normalise()
	return t, nil
}

// normalise sets each account's Norm: its shares over its siblings'
// times its parent's Norm (the root's is 1); an account whose siblings
// hold no shares has 0.
func (t *Tree) normalise() {
	sum := map[string]float64{}
	for _, a := range t.Accounts {
		sum[a.Parent] += a.Shares
	}
	norm := map[string]float64{"": 1}
	for i := range t.Accounts {
		a := &t.Accounts[i]
		if s := sum[a.Parent]; s > 0 {
			a.Norm = a.Shares / s * norm[a.Parent]
		}
		norm[a.Name] = a.Norm
	}
}

// Entitlements are the log's groups and members e with their shares
// from the tree (docs/site-config.md, "The account tree"): a log group
// "group N" is the account named N, gN or groupN (letters in any case,
// '_', '-' and blanks left out), a user standing as its own group
// ("user N") the account uN or userN; a member "user N/…" (or "user N")
// is the user N, uN or userN of its group's account. A group's
// entitlement is its account's normalised shares over those of the log's
// groups that have an account (so that they sum to 1); a member's is its
// group's times its raw shares over its group's members'. A group with
// no account gets 0 (Fair Tree ranks it last); a group none of whose
// members has a user row splits its entitlement equally. notes say which
// of these happened. An error when no group has an account.
func (t *Tree) Entitlements(e *baseline.Entitlements) (out *baseline.Entitlements, notes []string, err error) {
	norm := make([]float64, len(e.Groups))
	acct := make([]int, len(e.Groups))
	total := 0.0
	for g, grp := range e.Groups {
		acct[g] = t.findAccount(grp.Name)
		if acct[g] < 0 {
			notes = append(notes, fmt.Sprintf("%s: no account in %s, entitlement 0", grp.Name, t.File))
			continue
		}
		norm[g] = t.Accounts[acct[g]].Norm
		total += norm[g]
	}
	if total <= 0 {
		return nil, notes, fmt.Errorf("%s: none of the log's %d groups has an account with shares (accounts are matched by name: N, gN or groupN for the log's group N)", t.File, len(e.Groups))
	}
	out = &baseline.Entitlements{Groups: make([]baseline.GroupShare, len(e.Groups))}
	for g, grp := range e.Groups {
		share := norm[g] / total
		gs := baseline.GroupShare{Name: grp.Name, Share: share, Widest: grp.Widest, Members: make([]baseline.MemberShare, len(grp.Members))}
		raw := make([]float64, len(grp.Members))
		sum := 0.0
		for i, m := range grp.Members {
			gs.Members[i].Name = m.Name
			if acct[g] >= 0 {
				raw[i] = t.userShares(acct[g], m.Name)
				sum += raw[i]
			}
		}
		if sum <= 0 && acct[g] >= 0 && len(grp.Members) > 0 {
			notes = append(notes, fmt.Sprintf("%s: no member has a user row under account %s, split equally", grp.Name, t.Accounts[acct[g]].Name))
		}
		for i := range gs.Members {
			if sum > 0 {
				gs.Members[i].Share = share * raw[i] / sum
			} else {
				gs.Members[i].Share = share / float64(len(grp.Members))
			}
		}
		out.Groups[g] = gs
	}
	return out, notes, nil
}

// squash is a name as matched: lower case, without '_', '-' and blanks.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// candidates are the names a log group or user "KIND N" matches.
func candidates(name string) []string {
	kind, id, ok := strings.Cut(name, " ")
	if !ok {
		return nil
	}
	switch kind {
	case "group":
		return []string{id, "g" + id, "group" + id}
	case "user":
		return []string{"u" + id, "user" + id}
	}
	return nil
}

// findAccount is the account a log group matches, -1 none.
func (t *Tree) findAccount(group string) int {
	for _, c := range candidates(group) {
		for i, a := range t.Accounts {
			if squash(a.Name) == c {
				return i
			}
		}
	}
	return -1
}

// userShares are the raw shares of the user a member campaign ("user
// N/group G", "user N", or "group G" when campaigns are groups: then the
// account's own) matches under account a; 0 none.
func (t *Tree) userShares(a int, member string) float64 {
	user, _, _ := strings.Cut(member, "/")
	kind, id, _ := strings.Cut(user, " ")
	if kind == "group" {
		return t.Accounts[a].Shares
	}
	for _, c := range []string{id, "u" + id, "user" + id} {
		for _, u := range t.Accounts[a].Users {
			if squash(u.Name) == c {
				return u.Shares
			}
		}
	}
	return 0
}
