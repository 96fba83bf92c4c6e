package main

import (
	"github.com/bursar-hpc/bursar/sweep"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/internal/manifest"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

func readManifest(t *testing.T, dir string) manifest.Manifest {
	t.Helper()
	var m manifest.Manifest
	readJSONFile(t, filepath.Join(dir, manifest.File), &m)
	return m
}

// checkOutputs: the manifest lists exactly these files, with their digests.
func checkOutputs(t *testing.T, dir string, m manifest.Manifest, names ...string) {
	t.Helper()
	var got []string
	for _, o := range m.Outputs {
		got = append(got, o.Name)
		b, err := os.ReadFile(filepath.Join(dir, o.Name))
		require.NoError(t, err)
		require.Equal(t, manifest.Digest(b), o.SHA256, o.Name)
		require.EqualValues(t, len(b), o.Bytes, o.Name)
	}
	require.ElementsMatch(t, names, got)
}

func TestRunWritesAManifest(t *testing.T) {
	dir := t.TempDir()
	_, err := runSweepApp(t, "run", "--seed", "11", "--ticks", "600", "--out", dir)
	require.NoError(t, err)
	m := readManifest(t, dir)
	require.Equal(t, "run", m.Command)
	require.Equal(t, "bursar-sweep", m.Program.Name)
	require.NotEmpty(t, m.Program.GoVersion)
	require.Equal(t, []int64{11}, m.Seeds)
	require.Len(t, m.Inputs, 1)
	in := m.Inputs[0]
	require.Equal(t, "scenario", in.Kind)
	require.Contains(t, in.Content, `"ticks": 600`)
	require.Equal(t, manifest.Digest([]byte(in.Content)), in.SHA256)
	require.NotEmpty(t, m.Start)
	require.Positive(t, m.WallSeconds)
	checkOutputs(t, dir, m, runOutputs...)
}

func TestExperimentWritesAManifest(t *testing.T) {
	dir := t.TempDir()
	console, err := runSweepApp(t, "bucket", "--quick", "--quiet", "--workers", "2", "--out", dir)
	require.NoError(t, err, console)
	m := readManifest(t, dir)
	require.Equal(t, "bucket", m.Command)
	require.True(t, m.Quick)
	require.Equal(t, []int64{7}, m.Seeds)
	require.Equal(t, 2, m.Workers)
	require.Len(t, m.Inputs, 1)
	src, err := configs.DefaultSource("bucket")
	require.NoError(t, err)
	require.Equal(t, manifest.NewInput("config", "configs/bucket.yaml", true, src), m.Inputs[0])
	checkOutputs(t, dir, m, "runs.csv", "latencies.json", "runs.parquet", "summary.json", "fig_bucket.png")
}

func TestSweepWritesAManifestWithItsConfig(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "grid.yaml")
	cfg := "experiment: tiny\nseeds: {full: [7], quick: [7]}\nfixed: {ticks: 300}\ngrid:\n  grace: [30, 60]\n"
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	out := filepath.Join(dir, "out")
	console, err := runSweepApp(t, "sweep", "--config", cfgPath, "--quiet", "--workers", "1", "--out", out)
	require.NoError(t, err, console)
	m := readManifest(t, out)
	require.Equal(t, []manifest.Input{manifest.NewInput("config", cfgPath, false, []byte(cfg))}, m.Inputs)
	require.Equal(t, 1, m.Workers)
	checkOutputs(t, out, m, "runs.csv", "latencies.json", "runs.parquet", "summary.json")
}

// variantOfArgs is the folder an experiment command would default to.
func variantOfArgs(t *testing.T, args ...string) string {
	t.Helper()
	var got string
	app := &cli.App{Name: "bursar-sweep", Commands: []*cli.Command{{
		Name:  "paper",
		Flags: sweepFlags("results/paper", true, true),
		Action: func(c *cli.Context) error {
			d, err := readDist(c)
			if err != nil {
				return err
			}
			st, err := readSetup(c, d)
			if err != nil {
				return err
			}
			got = sweep.VariantOut(st, "paper", sweep.PublishedSeeds, 6)
			return nil
		},
	}}}
	require.NoError(t, app.Run(append([]string{"bursar-sweep", "paper"}, args...)))
	return got
}

// The committed results/paper/ is written only by the paper's own run.
func TestOnlyThePaperRunDefaultsToResultsPaper(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "results/paper"},
		{[]string{"--nseeds", "3"}, "results/paper"},
		{[]string{"--seeds", "7,11,13"}, "results/paper"},
		{[]string{"--nseeds", "4"}, "results/paper-nseeds4"},
		{[]string{"--seeds", "7,11"}, "results/paper-seeds7-11"},
		{[]string{"--quick"}, "results/paper-quick"},
		{[]string{"--quick", "--nseeds", "1"}, "results/paper-quick-nseeds1"},
		{[]string{"--config", "x/my-bucket.yaml"}, "results/paper-my-bucket"},
		{[]string{"--seeds", "7,11,13,17,19,23,29"}, "results/paper-seeds7-"},
	} {
		got := variantOfArgs(t, tc.args...)
		if tc.want == "results/paper-seeds7-" {
			require.Regexp(t, `^results/paper-seeds7-[0-9a-f]{8}$`, filepath.ToSlash(got), tc.args)
			continue
		}
		require.Equal(t, tc.want, filepath.ToSlash(got), tc.args)
	}
}

// An experiment command with other seeds and no --out writes beside the
// paper's folder, not into it.
func TestVariantRunLeavesTheDefaultFolderAlone(t *testing.T) {
	t.Chdir(t.TempDir())
	console, err := runSweepApp(t, "bucket", "--quick", "--quiet", "--workers", "2")
	require.NoError(t, err, console)
	entries, err := os.ReadDir("results")
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"bucket-quick"}, names)
	require.True(t, slices.Contains(readManifest(t, filepath.Join("results", "bucket-quick")).Seeds, 7))
}

// A sweep whose experiment is called "paper" does not default into the
// committed results/paper/ either.
func TestSweepNeverDefaultsToResultsPaper(t *testing.T) {
	require.Equal(t, filepath.Join("results", "sweep-paper"), sweep.GridOut("paper"))
	require.Equal(t, filepath.Join("results", "storm-rate"), sweep.GridOut("storm-rate"))
	t.Chdir(t.TempDir())
	cfg := "experiment: paper\nseeds: {full: [7], quick: [7]}\nfixed: {ticks: 300}\ngrid:\n  grace: [30, 60]\n"
	require.NoError(t, os.WriteFile("grid.yaml", []byte(cfg), 0o644))
	console, err := runSweepApp(t, "sweep", "--config", "grid.yaml", "--quiet", "--workers", "1")
	require.NoError(t, err, console)
	_, err = os.Stat(filepath.Join("results", "paper"))
	require.True(t, os.IsNotExist(err), "results/paper was written")
	readManifest(t, filepath.Join("results", "sweep-paper"))
}

// A run command that writes nothing (as a --print-scenario would) leaves
// no manifest behind, even in a folder holding an older run's files.
func TestNoManifestWithoutOutputs(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metrics.json"), []byte(`{"scenario": {"seed": 7}}`), 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "metrics.json"), old, old))
	cmd := withRunManifest(&cli.Command{
		Name:   "run",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "out"}},
		Action: func(*cli.Context) error { return nil },
	})
	app := &cli.App{Name: "bursar-sweep", Commands: []*cli.Command{cmd}}
	require.NoError(t, app.Run([]string{"bursar-sweep", "run", "--out", dir}))
	_, err := os.Stat(filepath.Join(dir, manifest.File))
	require.True(t, os.IsNotExist(err))
}

// TestTraceManifestNamesTheLogWithoutCopyingIt: a trace given by path is
// recorded by path, size and SHA-256, and the manifest stays small (a full
// log embedded made it megabytes).
func TestTraceManifestNamesTheLogWithoutCopyingIt(t *testing.T) {
	dir := t.TempDir()
	swf, err := os.ReadFile(filepath.Join("..", "..", "testdata", "traces", "SDSC-SP2-1998-4.2-cln.days252-280.swf"))
	require.NoError(t, err)
	log := filepath.Join(dir, "sp2.swf")
	require.NoError(t, os.WriteFile(log, swf, 0o644))
	out := filepath.Join(dir, "out")
	console, err := runSweepApp(t, "trace", "--trace", log, "--policies", "fifo", "--window", "21772800:22000000", "--quiet", "--out", out)
	require.NoError(t, err, console)
	b, err := os.ReadFile(filepath.Join(out, manifest.File))
	require.NoError(t, err)
	require.Less(t, len(b), 10_000)
	m := readManifest(t, out)
	require.Len(t, m.Inputs, 1)
	require.Equal(t, manifest.Input{Kind: "trace", Name: log, Bytes: int64(len(swf)), SHA256: manifest.Digest(swf)}, m.Inputs[0])
}

// TestVersionFlag: both binaries answer --version from the build
// information (a test binary has no VCS stamp: the line says how to get one).
func TestVersionFlag(t *testing.T) {
	out, err := runSweepApp(t, "--version")
	require.NoError(t, err)
	require.Contains(t, out, "bursar-sweep version ")
	require.Contains(t, out, manifest.VersionLine("bursar-sweep"))
}

// A manifest's command line leaves --cache out (a folder on one machine
// that never changes a number) and keeps every other argument: run with
// a cache and without, the two folders' manifests name the same command
// and vouch for the same bytes.
func TestManifestLeavesTheCacheOut(t *testing.T) {
	saved := os.Args
	defer func() { os.Args = saved }()
	cache, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	args := []string{"trace", "--policies", "fifo", "--window", "21772800:22000000", "--fair-sample", "0", "--quiet"}
	withCache := append(append(slices.Clone(args), "--cache", cache), "--out", a)
	os.Args = append([]string{"bin/bursar-sweep"}, withCache...)
	console, err := runSweepApp(t, withCache...)
	require.NoError(t, err, console)
	without := append(slices.Clone(args), "--out", a)
	os.Args = append([]string{"bin/bursar-sweep"}, append(slices.Clone(args), "--out", b)...)
	console, err = runSweepApp(t, append(slices.Clone(args), "--out", b)...)
	require.NoError(t, err, console)
	ma, mb := readManifest(t, a), readManifest(t, b)
	require.Equal(t, append([]string{"bin/bursar-sweep"}, without...), ma.CommandLine)
	require.Equal(t, ma.Outputs, mb.Outputs)
}
