package selfcontained

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// outside is the workplace folder a development checkout may have beside
// it; spelled in two parts so that this file does not match itself.
var outside = []string{"../" + "shared/", "shared/" + "spec/"}

// TestNoFilePointsOutside reads every file git tracks (or, outside a git
// checkout, every file below the module root) except testdata/, and fails on
// each line that names the workplace folder.
func TestNoFilePointsOutside(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := tracked(t, root)
	if len(files) < 50 {
		t.Fatalf("found only %d files below %s: is this the module root?", len(files), root)
	}
	for _, rel := range files {
		if strings.HasPrefix(rel, "testdata/") || strings.Contains(rel, "/testdata/") {
			continue
		}
		f, err := os.Open(filepath.Join(root, rel))
		if err != nil {
			continue // deleted in the work tree but still in the index
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			for _, o := range outside {
				if strings.Contains(line, o) {
					t.Errorf("%s:%d points outside the repository (%q): cite docs/ or read $BURSAR_TRACES instead", rel, n, o)
				}
			}
		}
		f.Close()
	}
}

func tracked(t *testing.T, root string) []string {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
