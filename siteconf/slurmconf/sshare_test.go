package slurmconf_test

import (
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/siteconf/slurmconf"
	"github.com/stretchr/testify/require"
)

// Hand-worked: the dump's tree (root: group5 60, dept 40, u30 20; dept:
// G8 30, other 10) gives normalised shares group5 1/2, G8 30/40 × 1/3 =
// 1/4, u30 1/6. The log's group 5, group 8 and user 30 (its own group)
// match them; group 99 has no account (0). Over the matched total 11/12
// the groups get 6/11, 3/11, 2/11; group 5's members split 6/11 by their
// raw shares 2 : 1, user 30 (no user row under u30) takes its group's.
func TestSshareEntitlementsHandWorked(t *testing.T) {
	tree, err := slurmconf.ParseSshareFile("testdata/sshare.txt")
	require.NoError(t, err)
	require.Equal(t, []string{"group5", "dept", "G8", "other", "u30"}, accountNames(tree))
	require.Equal(t, "dept", tree.Accounts[2].Parent)
	require.InDelta(t, 0.25, tree.Accounts[2].Norm, 1e-12)
	log := &baseline.Entitlements{Groups: []baseline.GroupShare{
		{Name: "group 5", Share: 0.25, Members: []baseline.MemberShare{{Name: "user 13/group 5", Share: 0.125}, {Name: "user 14/group 5", Share: 0.125}}},
		{Name: "group 8", Share: 0.25, Members: []baseline.MemberShare{{Name: "user 20/group 8", Share: 0.25}}},
		{Name: "user 30", Share: 0.25, Members: []baseline.MemberShare{{Name: "user 30", Share: 0.25}}},
		{Name: "group 99", Share: 0.25, Widest: 4, Members: []baseline.MemberShare{{Name: "user 40/group 99", Share: 0.25}}},
	}}
	e, notes, err := tree.Entitlements(log)
	require.NoError(t, err)
	require.NoError(t, e.Validate())
	want := []float64{6. / 11, 4. / 11, 2. / 11, 3. / 11, 3. / 11, 2. / 11, 2. / 11, 0, 0}
	var got []float64
	for _, g := range e.Groups {
		got = append(got, g.Share)
		for _, m := range g.Members {
			got = append(got, m.Share)
		}
	}
	require.InDeltaSlice(t, want, got, 1e-12)
	require.Equal(t, 4, e.Groups[3].Widest)
	require.Equal(t, []string{
		"group 99: no account in testdata/sshare.txt, entitlement 0",
		"user 30: no member has a user row under account u30, split equally",
	}, notes)
}

func accountNames(t *slurmconf.Tree) []string {
	var out []string
	for _, a := range t.Accounts {
		out = append(out, a.Name)
	}
	return out
}

func TestSshareBadInput(t *testing.T) {
	for text, want := range map[string]string{
		"":                                 "x.txt:1: empty",
		"Account|RawShares\n":              "x.txt:1: the header has no user column",
		"Account|User|RawShares\n a||x\n":  `x.txt:2: key RawShares: "x" is not a number`,
		"Account|User|RawShares\n a|u|1\n": "x.txt:2: key Account: user u's account a has no row above it",
		"Account|User|RawShares\n a||1\n a|u|parent\n": "x.txt:3: key RawShares: shares=parent is not modelled",
		"Account|User|RawShares\n a||1|2\n":            "x.txt:2: 4 fields where the header has 3",
	} {
		_, err := slurmconf.ParseSshare("x.txt", strings.NewReader(text))
		require.Error(t, err, text)
		require.Contains(t, err.Error(), want, text)
	}
	// sshare -p: every line ends in '|'.
	tree, err := slurmconf.ParseSshare("x.txt", strings.NewReader("Account|User|RawShares|\n a||1|\n a|u|2|\n"))
	require.NoError(t, err)
	require.Equal(t, []slurmconf.User{{Name: "u", Shares: 2, Line: 3}}, tree.Accounts[0].Users)
	_, _, err = tree.Entitlements(&baseline.Entitlements{Groups: []baseline.GroupShare{{Name: "group 1"}}})
	require.ErrorContains(t, err, "none of the log's 1 groups has an account")
}

// FuzzParseSshare: never a panic; errors name the file and a line.
func FuzzParseSshare(f *testing.F) {
	f.Add("Account|User|RawShares\nroot||\n a||1\n  b||2\n  b|u1|3\n")
	f.Fuzz(func(t *testing.T, text string) {
		tree, err := slurmconf.ParseSshare("x.txt", strings.NewReader(text))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "x.txt:") {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		for _, a := range tree.Accounts {
			if a.Norm < 0 || a.Norm > 1+1e-9 {
				t.Fatalf("account %s normalised share %v outside [0, 1]", a.Name, a.Norm)
			}
		}
	})
}
