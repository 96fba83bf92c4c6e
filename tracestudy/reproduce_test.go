package tracestudy

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/trace"
)

// The committed window runs (scripts/trace-windows.sh) are what this code
// gives: each is replayed again from the full log in $BURSAR_TRACES, as
// `bursar-sweep trace --windows 14d` replays it (12 windows, each after
// the lead-in the rule chooses, docs/studies.md §4.5: 26 days on
// SDSC-SP2, 4 on KTH-SP2, as summary.json's lead_in says), and every
// metric of every run is compared with its summary.json. A change that moves a
// number the README cites fails here until the runs are regenerated and
// the findings rechecked (TestCommittedTraceWindowFindings,
// TestCommittedSharesFindings).
func TestCommittedWindowRunsReproduce(t *testing.T) {
	dir := os.Getenv("BURSAR_TRACES")
	if dir == "" {
		t.Skip("set BURSAR_TRACES to the folder holding SDSC-SP2-1998-4.2-cln.swf.gz and KTH-SP2-1996-2.1-cln.swf.gz")
	}
	if testing.Short() {
		t.Skip("replays the committed window runs (about 60 s of CPU)")
	}
	if raceDetector {
		t.Skip("single-goroutine replays: run without -race")
	}
	all := []string{"bursar", "fifo", "priority", "static", "static-share", "fairshare", "quota", "quota-fair", "budget"}
	shareRun := []string{"bursar", "fifo", "static", "static-share", "fairshare", "quota", "quota-fair", "budget"}
	sdsc, kth := "SDSC-SP2-1998-4.2-cln.swf.gz", "KTH-SP2-1996-2.1-cln.swf.gz"
	for _, c := range []struct {
		folder, log string
		opt         trace.Options
		policies    []string
	}{
		{"sdsc-sp2-12x14d", sdsc, trace.Options{}, all},
		{"kth-sp2-12x14d", kth, trace.Options{}, all},
		{"shares/groups", sdsc, trace.Options{Shares: trace.ShareGroups}, shareRun},
		{"shares/window", sdsc, trace.Options{Shares: trace.ShareWindow}, shareRun},
		{"shares/users", sdsc, trace.Options{Shares: trace.ShareUsers}, shareRun},
		{"shares/equal-groups", sdsc, trace.Options{Shares: trace.ShareEqualGroups}, shareRun},
		{"shares/equal-users", sdsc, trace.Options{Shares: trace.ShareEqualUsers}, shareRun},
		{"shares/bucket-hours24", sdsc, trace.Options{Bucket: "hours:24"}, []string{"bursar", "fifo"}},
	} {
		t.Run(c.folder, func(t *testing.T) {
			path := filepath.Join(dir, c.log)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s not present: %v", c.log, err)
			}
			w, err := LoadRange(path, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			// The study's mapping as the command applies it: one restart
			// rule for every policy (zero on an SWF log, docs/studies.md
			// §6.7).
			specs := TraceSpecs(c.policies)
			if err := ApplyMapping(configs.TraceMapping{}, &c.opt, specs); err != nil {
				t.Fatal(err)
			}
			st := &Study{Specs: specs, Options: c.opt, FairSample: trace.DefaultFairSample}
			if st.Windows, err = LayWindows(w, c.opt, 0, 14*Day, DefaultWarmup, DefaultCooldown); err != nil {
				t.Fatal(err)
			}
			li, err := PickLeadIn(w, st.Windows, LeadInAuto)
			if err != nil {
				t.Fatal(err)
			}
			li.Apply(st.Windows)
			if st.Loads, err = LoadWindows(path, c.opt, st.Windows); err != nil {
				t.Fatal(err)
			}
			if st.Recorded, err = ReadRecorded(path, w.Pool); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join("..", "results", "trace", c.folder, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var committed struct {
				Runs   []map[string]any `json:"runs"`
				LeadIn struct {
					Days float64 `json:"days"`
				} `json:"lead_in"`
			}
			if err := json.Unmarshal(b, &committed); err != nil {
				t.Fatal(err)
			}
			if committed.LeadIn.Days*Day != float64(li.Seconds) {
				t.Fatalf("committed lead-in %v days, the rule chooses %s", committed.LeadIn.Days, fmtDay(li.Seconds))
			}
			if len(committed.Runs) != st.Runs() {
				t.Fatalf("%d committed runs, %d to replay", len(committed.Runs), st.Runs())
			}
			for i, want := range committed.Runs {
				r, err := st.Run(i)
				if err != nil {
					t.Fatal(err)
				}
				if want["policy"] != r.Policy || want["window"] != float64(r.Window) {
					t.Fatalf("run %d: committed %v window %v, replayed %s window %d", i, want["policy"], want["window"], r.Policy, r.Window)
				}
				for _, m := range Metrics {
					got := m.Get(&r)
					var w float64
					switch v := want[m.Key].(type) {
					case float64:
						w = v
					case bool: // converged
						if v {
							w = 1
						}
					case nil: // NaN is written as null
						w = math.NaN()
					default:
						t.Fatalf("%s: %v", m.Key, v)
					}
					if !(got == w || math.IsNaN(got) && math.IsNaN(w) || math.Abs(got-w) <= 1e-9*math.Abs(w)) {
						t.Errorf("%s window %d: %s %v, committed %v: regenerate with scripts/trace-windows.sh and recheck the README's findings", r.Policy, r.Window, m.Key, got, w)
					}
				}
			}
		})
	}
}

// scripts/trace-windows.sh reads the logs from traces/ in the repository
// by default, commonly a symlink to a shared folder of logs. .gitignore
// ignores it whether it is a folder, a symlink or a file (a `/traces/`
// pattern matched only a folder, and a symlink showed as untracked).
func TestTracesLinkIsIgnored(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	for _, path := range []string{"traces", "traces/SDSC-SP2-1998-4.2-cln.swf.gz"} {
		// --no-index: the rule, whatever the index holds; a path that does
		// not exist is taken as a file, as git takes a symlink.
		err := exec.Command(git, "-C", "..", "check-ignore", "-q", "--no-index", path).Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 128 {
			t.Skip("not a git checkout")
		}
		require.NoError(t, err, "git check-ignore %s: not ignored", path)
	}
}
