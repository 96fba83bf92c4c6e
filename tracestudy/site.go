package tracestudy

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/fifo"
	"github.com/bursar-hpc/bursar/policy/quota"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/bursar-hpc/bursar/policy/slurm"
	"github.com/bursar-hpc/bursar/siteconf/kueueconf"
	"github.com/bursar-hpc/bursar/siteconf/slurmconf"
	"github.com/bursar-hpc/bursar/sweep"
)

// SiteFlags are trace's flags that read a site's own configuration
// (docs/site-config.md): each configures one policy.
var SiteFlags = []string{"slurm-conf", "sshare", "kueue"}

// Site is what a site's files configure: each file's policy, its knobs'
// setter, the pool it gives (0: none) and the file as a manifest input.
type Site struct {
	Configured []SiteFile
	// tree is --sshare's account tree (nil: none), extra the inputs that
	// configure no policy of their own (the tree).
	tree  *slurmconf.Tree
	extra []manifest.Input
	// Pool is the pool a file gives (slurm.conf's default partition), 0
	// none.
	Pool int
}

// SiteFile is one file of the site's configuration and the policy it
// configures.
type SiteFile struct {
	Flag, Path, Policy string
	// Set puts the file's knobs into a spec of its policy.
	Set func(s *Spec) error
	// Input is the file as manifest.json lists it, with what it
	// configures and the keys it ignored.
	Input manifest.Input
	// Summary is one line saying what the file set.
	Summary string
}

// ReadSite reads the site files the flags name (--slurm-conf, --sshare,
// --kueue; else the config's slurm_conf, sshare, kueue), listing
// on stderr each file's ignored keys. nil when none is given.
func ReadSite(f sweep.Flags, cfg *configs.StudyConfig, stderr io.Writer) (*Site, error) {
	// The config's slurm_conf, sshare and kueue where no flag gives one;
	// errors then name the config and its key.
	f = maps.Clone(f)
	label := map[string]string{"slurm-conf": "--slurm-conf", "sshare": "--sshare", "kueue": "--kueue"}
	for _, k := range []struct{ flag, key, path string }{
		{"slurm-conf", "slurm_conf", cfg.SlurmConf}, {"sshare", "sshare", cfg.Sshare}, {"kueue", "kueue", cfg.Kueue}} {
		if _, ok := f[k.flag]; !ok && k.path != "" {
			f[k.flag] = k.path
			label[k.flag] = cfg.File + ": " + k.key
		}
	}
	if !f.Has("slurm-conf") && !f.Has("kueue") && !f.Has("sshare") {
		return nil, nil
	}
	s := &Site{}
	if path, ok := f["slurm-conf"]; ok {
		c, data, err := readSiteFile(label["slurm-conf"], path, slurmconf.Parse)
		if err != nil {
			return nil, err
		}
		knobs, pool := c.Policy()
		s.Pool = pool
		var tree *slurmconf.Tree
		var treeInput manifest.Input
		treeNote := ""
		if sp, ok := f["sshare"]; ok {
			var data []byte
			var err error
			if tree, data, err = readSiteFile(label["sshare"], sp, slurmconf.ParseSshare); err != nil {
				return nil, err
			}
			treeInput = manifest.NewInput("sshare", sp, false, data)
			treeInput.Configures = fmt.Sprintf("policy %s's account tree: the entitlements of the log's groups and users (%d accounts)", slurm.Name, len(tree.Accounts))
			s.tree = tree
			treeNote = "; entitlements from " + sp
		}
		var ignored []string
		for _, i := range c.Ignored {
			ignored = append(ignored, i.String())
		}
		in := manifest.NewInput("slurm-conf", path, false, data)
		in.Configures = fmt.Sprintf("policy %s's knobs and the pool (%d %ss of partition %s)", slurm.Name, pool, strings.ToUpper(c.Unit), c.Partition)
		in.Ignored = ignored
		s.Configured = append(s.Configured, SiteFile{Flag: "slurm-conf", Path: path, Policy: slurm.Name, Input: in,
			Set: func(sp *Spec) error {
				slurm.Slot.Set(&sp.Knobs, knobs)
				if tree != nil {
					sp.Site = "sshare sha256:" + treeInput.SHA256
					sp.Entitle = func(e *baseline.Entitlements) (*baseline.Entitlements, error) {
						out, _, err := tree.Entitlements(e)
						return out, err
					}
				}
				return nil
			},
			Summary: fmt.Sprintf("%s configured by %s: %s%s", slurm.Name, path, strings.Join(slurm.Policy.FormatKnobs(knobsOf(knobs), knobsOf(slurm.DefaultKnobs())), ", "), treeNote),
		})
		fmt.Fprintf(stderr, "--slurm-conf %s: %s; %d keys ignored:\n", path, in.Configures, len(ignored))
		for _, i := range ignored {
			fmt.Fprintf(stderr, "  %s\n", i)
		}
		if tree != nil {
			s.extra = append(s.extra, treeInput)
		}
	} else if f.Has("sshare") {
		return nil, fmt.Errorf("--sshare gives policy slurm's account tree: give --slurm-conf too")
	}
	if path, ok := f["kueue"]; ok {
		c, data, err := readSiteFile(label["kueue"], path, kueueconf.Parse)
		if err != nil {
			return nil, err
		}
		if s.Pool == 0 {
			s.Pool = c.Pool
		} else if s.Pool != c.Pool {
			fmt.Fprintf(stderr, "--kueue %s: its pool of %d %s is not slurm.conf's %d; the run uses %d\n", path, c.Pool, c.Resource, s.Pool, s.Pool)
		}
		var ignored, set []string
		for _, i := range c.Ignored {
			ignored = append(ignored, i.String())
		}
		for _, k := range c.Knobs {
			set = append(set, fmt.Sprintf("%s: %v (%s)", k.Key, k.Value, k.From))
		}
		in := manifest.NewInput("kueue", path, false, data)
		queues := make([]string, len(c.Queues))
		for i, q := range c.Queues {
			queues[i] = fmt.Sprintf("%s %d", q.Name, q.Nominal)
		}
		in.Configures = fmt.Sprintf("policy %s's knobs and the pool (%d %s: ClusterQueues %s; quota cuts one queue per log group)", quota.Name, c.Pool, c.Resource, strings.Join(queues, ", "))
		in.Ignored = ignored
		s.Configured = append(s.Configured, SiteFile{Flag: "kueue", Path: path, Policy: quota.Name, Input: in,
			Set:     func(sp *Spec) error { return c.Apply(&sp.Knobs) },
			Summary: fmt.Sprintf("%s configured by %s: %s", quota.Name, path, strings.Join(set, ", ")),
		})
		fmt.Fprintf(stderr, "--kueue %s: %s; %d fields ignored:\n", path, in.Configures, len(ignored))
		for _, i := range ignored {
			fmt.Fprintf(stderr, "  %s\n", i)
		}
	}
	return s, nil
}

// readSiteFile reads the file at path and parses it; its errors start
// with label (the flag, or the config's key).
func readSiteFile[T any](label, path string, parse func(string, io.Reader) (T, error)) (T, []byte, error) {
	var zero T
	data, err := os.ReadFile(path)
	if err != nil {
		return zero, nil, fmt.Errorf("%s: %w", label, err)
	}
	v, err := parse(path, bytes.NewReader(data))
	if err != nil {
		return zero, nil, fmt.Errorf("%s: %w", label, err)
	}
	return v, data, nil
}

// knobsOf is slurm's knobs as a registry Knobs value holding only them.
func knobsOf(k slurm.Knobs) (out registry.Knobs) {
	slurm.Slot.Set(&out, k)
	return out
}

// DefaultPolicies are the policies a study configured by the site's
// files runs without --policies: fifo (the reference every difference is
// taken from) and each configured policy.
func (s *Site) DefaultPolicies() []string {
	names := []string{fifo.Name}
	for _, c := range s.Configured {
		if !slices.Contains(names, c.Policy) {
			names = append(names, c.Policy)
		}
	}
	return names
}

// Apply sets each configured policy's knobs in the specs; a configured
// policy the specs leave out is an error naming its flag.
func (s *Site) Apply(specs []Spec) error {
	for _, c := range s.Configured {
		found := false
		for i := range specs {
			if specs[i].Policy == c.Policy {
				if err := c.Set(&specs[i]); err != nil {
					return fmt.Errorf("--%s: %w", c.Flag, err)
				}
				found = true
			}
		}
		if !found {
			return fmt.Errorf("--%s %s configures policy %s, which the policies run leave out (add it to --policies)", c.Flag, c.Path, c.Policy)
		}
	}
	return nil
}

// Inputs are the site's files as manifest inputs.
func (s *Site) Inputs() []manifest.Input {
	if s == nil {
		return nil
	}
	out := make([]manifest.Input, len(s.Configured))
	for i, c := range s.Configured {
		out[i] = c.Input
	}
	return append(out, s.extra...)
}

// Notes says, on the whole log's entitlements e, which of the log's
// groups and users --sshare's tree leaves without shares (one line each).
func (s *Site) Notes(e *baseline.Entitlements) []string {
	if s == nil || s.tree == nil {
		return nil
	}
	_, notes, err := s.tree.Entitlements(e)
	if err != nil {
		return []string{err.Error()}
	}
	return notes
}
