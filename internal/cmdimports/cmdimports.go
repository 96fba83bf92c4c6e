// Package cmdimports keeps the commands under cmd/ to flag wiring (issue
// 36 item 6; the README's layout table): a test in each command lists the
// module's packages the command may import, and Check fails it on any
// other. A command that starts to use a new package has to say so in its
// list, where a reviewer sees it.
package cmdimports

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// Module is the module path the commands belong to.
const Module = "github.com/bursar-hpc/bursar"

// Repo lists, sorted and relative to Module, the module's packages that
// the non-test Go files in dir import, whatever their build constraints
// (a file for another system counts too).
func Repo(dir string) ([]string, error) {
	ctx := build.Default
	ctx.UseAllFiles = true
	pkg, err := ctx.ImportDir(dir, build.ImportComment)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, imp := range pkg.Imports {
		if rel, ok := strings.CutPrefix(imp, Module+"/"); ok {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Check fails t for every package of the module that the command in dir
// imports and allowed (paths relative to Module) does not name.
func Check(t testing.TB, dir string, allowed ...string) {
	t.Helper()
	got, err := Repo(dir)
	if err != nil {
		t.Fatalf("reading the imports of %s: %v", dir, err)
	}
	for _, p := range got {
		if !slices.Contains(allowed, p) {
			t.Errorf("%s imports %s/%s, which its list of allowed packages does not name: "+
				"a command reads flags and calls packages; put the logic in a package of its own "+
				"(or, if it is one, add it to the list in the command's imports test)", dir, Module, p)
		}
	}
}
