package kueueconf_test

import (
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/siteconf/kueueconf"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, text string) (*kueueconf.Conf, error) {
	t.Helper()
	return kueueconf.Parse("kueue.yaml", strings.NewReader(text))
}

// knobs are a Conf's knobs by key.
func knobs(c *kueueconf.Conf) map[string]any {
	out := map[string]any{}
	for _, k := range c.Knobs {
		out[k.Key] = k.Value
	}
	return out
}

// Hand-worked: the example's three ClusterQueues give 64 + 32 + 32 = 128
// GPUs of nvidia.com/gpu (the cpu quotas are not the pool), their common
// preemption settings (physics spells out Kueue's defaults for two of
// them, the others leave them out: the same values), the cohort's
// unlimited borrowing, and the Configuration's fair sharing; each knob
// says where it came from.
func TestExampleHandWorked(t *testing.T) {
	c, err := kueueconf.ParseFile("../../configs/examples/kueue.yaml")
	require.NoError(t, err)
	require.Equal(t, "nvidia.com/gpu", c.Resource)
	require.Equal(t, 128, c.Pool)
	require.Equal(t, "campus", c.Cohort)
	require.Equal(t, []kueueconf.Queue{{Name: "physics", Nominal: 64, Line: 20}, {Name: "chemistry", Nominal: 32, Line: 43}, {Name: "biology", Nominal: 32, Line: 62}}, c.Queues)
	require.Equal(t, map[string]any{
		"queueing_strategy": "BestEffortFIFO", "reclaim_within_cohort": "LowerPriority", "within_cluster_queue": "Never",
		"borrow_within_cohort": "Never", "borrowing_limit": -1, "fair_sharing": true,
		"preemption_strategies": []string{"LessThanOrEqualToFinalShare", "LessThanInitialShare"},
	}, knobs(c))
	require.Equal(t, "../../configs/examples/kueue.yaml:38: ClusterQueue physics spec.preemption.reclaimWithinCohort", c.Knobs[1].From)
	require.Equal(t, []kueueconf.LocalQueue{{Namespace: "physics", Name: "gpu", ClusterQueue: "physics"}}, c.LocalQueues)
	var ignored []string
	for _, i := range c.Ignored {
		ignored = append(ignored, i.Field)
	}
	require.Contains(t, ignored, "WorkloadPriorityClass")
	require.Contains(t, ignored, "ClusterQueue physics spec.namespaceSelector")
	require.Contains(t, ignored, "Configuration waitForPodsReady")
}

// Kueue's API defaults where the manifests are silent; no cohort: no
// borrowing; a CPU-only queue counts CPUs.
func TestDefaults(t *testing.T) {
	c, err := parse(t, `apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: only}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 96500m}
`)
	require.NoError(t, err)
	require.Equal(t, "cpu", c.Resource)
	require.Equal(t, 96, c.Pool)
	require.Equal(t, map[string]any{
		"queueing_strategy": "BestEffortFIFO", "reclaim_within_cohort": "Never", "within_cluster_queue": "Never",
		"borrow_within_cohort": "Never", "borrowing_limit": 0, "fair_sharing": false,
	}, knobs(c))
}

const cq = `apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: %s}
spec:
  cohort: c
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: f
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
`

func queue(name string) string { return strings.Replace(cq, "%s", name, 1) }

// Bad input: one error naming the file, the line and the field.
func TestUnsupportedFailsWithFileLineKey(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{queue("a") + "  preemption:\n    reclaimWithinCohort: Sometimes\n", `kueue.yaml:14: key spec.preemption.reclaimWithinCohort: "Sometimes" is not supported (want Never, LowerPriority, Any)`},
		{queue("a") + "  preemption:\n    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 10}\n", "kueue.yaml:14: key spec.preemption.borrowWithinCohort.maxPriorityThreshold: a priority threshold is not modelled"},
		{queue("a") + "  fairSharing: {weight: 2}\n", `kueue.yaml:13: key spec.fairSharing.weight: fair-sharing weights other than 1 are not modelled, got "2"`},
		{queue("a") + "  queueingStrategy: LIFO\n", `kueue.yaml:13: key spec.queueingStrategy: "LIFO" is not supported`},
		{queue("a") + "  cohortz: x\n", "kueue.yaml:13: key spec.cohortz: not a ClusterQueue field the model reads"},
		{strings.Replace(queue("a"), "nominalQuota: 8", "nominalQuota: 8\n        lendingLimit: 2", 1), "kueue.yaml:13: key spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: lending limits are not modelled"},
		{strings.Replace(queue("a"), "nominalQuota: 8", "nominalQuota: lots", 1), `kueue.yaml:12: key spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: "lots": not a quantity`},
		{queue("a") + "---\n" + queue("b") + "  queueingStrategy: StrictFIFO\n", "kueue.yaml:14: ClusterQueue b's queueing_strategy is StrictFIFO, a's BestEffortFIFO"},
		{queue("a") + "---\n" + strings.Replace(queue("b"), "cohort: c", "cohort: d", 1), "kueue.yaml:18: cohorts c and d: the model has one cohort"},
		{queue("a") + "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q}\nspec: {clusterQueue: nope}\n", `kueue.yaml:17: key spec.clusterQueue: ClusterQueue "nope" is not defined`},
		{queue("a") + "---\napiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing:\n  enable: maybe\n", `kueue.yaml:17: key fairSharing.enable: want true or false, got "maybe"`},
		{queue("a") + "---\napiVersion: kueue.x-k8s.io/v1alpha1\nkind: Cohort\nmetadata: {name: c}\nspec: {parentName: root}\n", "kueue.yaml:17: key spec.parentName: hierarchical cohorts are not modelled"},
		{queue("a") + "  resourceGroups: []\n", "kueue.yaml:13: key spec.resourceGroups: given twice"},
		{"kind: [\n", "kueue.yaml:1: YAML: did not find expected node content"},
		{"apiVersion: v1\nkind: Namespace\n", "kueue.yaml:0: no ClusterQueue"},
	} {
		_, err := parse(t, tc.text)
		require.Error(t, err, tc.text)
		require.Contains(t, err.Error(), tc.want, tc.text)
	}
}

// Kueue's manifests ship the Configuration inside a ConfigMap: read
// there too, lines counted in the file.
func TestConfigurationInConfigMap(t *testing.T) {
	c, err := parse(t, queue("a")+`---
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta1
    kind: Configuration
    fairSharing:
      enable: true
`)
	require.NoError(t, err)
	require.Equal(t, true, knobs(c)["fair_sharing"])
	require.Equal(t, "kueue.yaml:22: Configuration fairSharing.enable", c.Knobs[len(c.Knobs)-1].From)
}
