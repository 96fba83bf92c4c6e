package kueueconf_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/siteconf/kueueconf"
)

var errAtLine = regexp.MustCompile(`^kueue\.yaml:\d+: `)

// FuzzParse: any input gives a Conf or an error naming the file and the
// line; never a panic.
func FuzzParse(f *testing.F) {
	f.Add(queue("a") + "  preemption: {reclaimWithinCohort: Any}\n---\n" + queue("b"))
	f.Add("apiVersion: v1\nkind: ConfigMap\ndata:\n  x: |\n    kind: Configuration\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n    fairSharing: {enable: true}\n")
	f.Add("apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q, namespace: n}\nspec: {clusterQueue: a}\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := kueueconf.Parse("kueue.yaml", strings.NewReader(text))
		if err != nil {
			if !errAtLine.MatchString(err.Error()) {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		if c.Pool < 1 {
			t.Fatalf("accepted with pool %d", c.Pool)
		}
	})
}
