package slurmconf_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/siteconf/slurmconf"
)

// errAtLine: every error names the file and a line.
var errAtLine = regexp.MustCompile(`^site\.conf:\d+: `)

// FuzzParse: any input gives a Conf or an error naming the file and the
// line; never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"NodeName=n[1-4] Gres=gpu:8\nPartitionName=p Nodes=n[1-4] Default=YES\n",
		"SchedulerParameters=bf_window=60,bf_continue\nPriorityWeightAge=1\\\n0\nNodeName=a CPUs=2\nPartitionName=p Nodes=ALL\n",
		"NodeSet=s Feature=f\nNodeName=x[01-02] Feature=f Gres=gpu:a:2(S:0)\nPartitionName=p Nodes=s MaxTime=1-0\n",
		"PriorityFlags=NO_FAIR_TREE\nPriorityDecayHalfLife=7-0\nInclude x\n",
		"ClusterName=\"a b\" # c\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := slurmconf.ParseWith("site.conf", strings.NewReader(text), noInclude)
		if err != nil {
			if !errAtLine.MatchString(err.Error()) {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		if c.Pool < 1 {
			t.Fatalf("accepted with pool %d", c.Pool)
		}
		if err := c.Knobs.Validate(); err != nil {
			t.Fatalf("accepted knobs that do not validate: %v", err)
		}
	})
}
