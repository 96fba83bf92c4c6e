// Package k8sjob writes the Kubernetes manifest of a sharded sweep: an
// Indexed Job with one pod per shard and the merge Job to apply once it is
// complete (`bursar-sweep slurm-script --k8s`, docs/cluster.md).
//
// It owns a small copy of the few batch/v1 and core/v1 fields the two Jobs
// use, serialised with gopkg.in/yaml.v3, rather than the upstream API types:
// k8s.io/api and k8s.io/apimachinery add about a minute to a cold build of
// bursar-sweep and half again to its size, for one flag. The field names and
// shapes follow the Kubernetes API reference (batch/v1 Job:
// https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/job-v1/;
// Indexed completion mode:
// https://kubernetes.io/docs/concepts/workloads/controllers/job/#completion-mode).
// The test in schema_test.go, built only with the tag k8sschema (.ci/run
// runs it), decodes the output strictly into the upstream batchv1.Job, so a
// misspelt or misplaced field fails there.
package k8sjob
