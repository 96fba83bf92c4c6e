package k8sjob

import (
	"bytes"
	"fmt"
	"path"
	"strconv"

	"gopkg.in/yaml.v3"
)

// CompletionIndexAnnotation is where the Job controller puts a pod's
// index; the container reads it through the downward API.
const CompletionIndexAnnotation = "batch.kubernetes.io/job-completion-index"

// Sweep is what the two Jobs run: `Binary Command Args…` sharded Shards
// ways into Out, on the volume claim Claim mounted at Mount.
type Sweep struct {
	// Name names the Indexed Job; the merge Job is Name-merge.
	Name    string
	Command string
	// Args are the command's own flags, less --out, --workers and --shard,
	// which the Jobs set.
	Args   []string
	Shards int
	// Out is the output folder; a relative one is under Mount.
	Out    string
	Image  string
	Binary string
	Claim  string
	Mount  string
}

// The types below carry only the fields the two Jobs set, under the API's
// own names; a nil pointer or empty slice is left out, as the API server
// would default it.

// Job is a batch/v1 Job.
type Job struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   ObjectMeta `yaml:"metadata"`
	Spec       JobSpec    `yaml:"spec"`
}

// ObjectMeta is the part of metav1.ObjectMeta the Jobs set.
type ObjectMeta struct {
	Name   string            `yaml:"name,omitempty"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

// JobSpec is the part of batchv1.JobSpec the Jobs set.
type JobSpec struct {
	CompletionMode string          `yaml:"completionMode,omitempty"`
	Completions    *int32          `yaml:"completions,omitempty"`
	Parallelism    *int32          `yaml:"parallelism,omitempty"`
	BackoffLimit   *int32          `yaml:"backoffLimit,omitempty"`
	Template       PodTemplateSpec `yaml:"template"`
}

// PodTemplateSpec is corev1.PodTemplateSpec.
type PodTemplateSpec struct {
	Metadata ObjectMeta `yaml:"metadata"`
	Spec     PodSpec    `yaml:"spec"`
}

// PodSpec is the part of corev1.PodSpec the Jobs set.
type PodSpec struct {
	RestartPolicy string      `yaml:"restartPolicy"`
	Containers    []Container `yaml:"containers"`
	Volumes       []Volume    `yaml:"volumes,omitempty"`
}

// Container is the part of corev1.Container the Jobs set.
type Container struct {
	Name         string        `yaml:"name"`
	Image        string        `yaml:"image"`
	Command      []string      `yaml:"command,omitempty"`
	Args         []string      `yaml:"args,omitempty"`
	Env          []EnvVar      `yaml:"env,omitempty"`
	VolumeMounts []VolumeMount `yaml:"volumeMounts,omitempty"`
}

// EnvVar is a corev1.EnvVar read from a field of the pod.
type EnvVar struct {
	Name      string        `yaml:"name"`
	ValueFrom *EnvVarSource `yaml:"valueFrom,omitempty"`
}

// EnvVarSource is the downward-API part of corev1.EnvVarSource.
type EnvVarSource struct {
	FieldRef *ObjectFieldSelector `yaml:"fieldRef,omitempty"`
}

// ObjectFieldSelector is corev1.ObjectFieldSelector.
type ObjectFieldSelector struct {
	FieldPath string `yaml:"fieldPath"`
}

// VolumeMount is corev1.VolumeMount.
type VolumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}

// Volume is a corev1.Volume backed by a persistent volume claim.
type Volume struct {
	Name                  string                             `yaml:"name"`
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `yaml:"persistentVolumeClaim,omitempty"`
}

// PersistentVolumeClaimVolumeSource is corev1's of the same name.
type PersistentVolumeClaimVolumeSource struct {
	ClaimName string `yaml:"claimName"`
}

// Jobs are the two Jobs of s: the Indexed Job of s.Shards pods, and the
// merge Job to apply once it is complete (Kubernetes has no dependency
// between Jobs).
func Jobs(s Sweep) (shards, merge Job) {
	out := s.Out
	if !path.IsAbs(out) {
		out = path.Join(s.Mount, out)
	}
	n := int32(s.Shards)
	one, backoff := int32(1), int32(1)
	volumes := []Volume{{Name: "data", PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: s.Claim}}}
	mounts := []VolumeMount{{Name: "data", MountPath: s.Mount}}
	labels := map[string]string{"app.kubernetes.io/name": "bursar-sweep", "app.kubernetes.io/instance": s.Name}

	args := append([]string{s.Command}, s.Args...)
	args = append(args, "--workers=1", "--shard=$(JOB_COMPLETION_INDEX)/"+strconv.Itoa(s.Shards), "--out="+out+"/shards")
	shards = Job{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: ObjectMeta{Name: s.Name, Labels: labels},
		Spec: JobSpec{
			CompletionMode: "Indexed", Completions: &n, Parallelism: &n, BackoffLimit: &backoff,
			Template: PodTemplateSpec{
				Metadata: ObjectMeta{Labels: labels},
				Spec: PodSpec{
					RestartPolicy: "Never",
					Containers: []Container{{
						Name: "shard", Image: s.Image, Command: []string{s.Binary}, Args: args,
						// Declared rather than left to the controller, so that
						// $(JOB_COMPLETION_INDEX) in args expands on any version.
						Env: []EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &EnvVarSource{
							FieldRef: &ObjectFieldSelector{FieldPath: "metadata.annotations['" + CompletionIndexAnnotation + "']"}}}},
						VolumeMounts: mounts,
					}},
					Volumes: volumes,
				},
			},
		},
	}
	merge = Job{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: ObjectMeta{Name: s.Name + "-merge", Labels: labels},
		Spec: JobSpec{
			Completions: &one, BackoffLimit: &backoff,
			Template: PodTemplateSpec{
				Metadata: ObjectMeta{Labels: labels},
				Spec: PodSpec{
					RestartPolicy: "Never",
					Containers: []Container{{
						Name: "merge", Image: s.Image, Command: []string{s.Binary},
						Args:         []string{"merge", "--out", out, out + "/shards"},
						VolumeMounts: mounts,
					}},
					Volumes: volumes,
				},
			},
		},
	}
	return shards, merge
}

// Manifest is the two Jobs of s as one YAML stream (documents separated by
// "---"), after header, a comment block the caller writes.
func Manifest(header string, s Sweep) (string, error) {
	shards, merge := Jobs(s)
	var b bytes.Buffer
	b.WriteString(header)
	for i, j := range []Job{shards, merge} {
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(j); err != nil {
			return "", fmt.Errorf("k8s manifest: %w", err)
		}
		if err := enc.Close(); err != nil {
			return "", fmt.Errorf("k8s manifest: %w", err)
		}
	}
	return b.String(), nil
}
