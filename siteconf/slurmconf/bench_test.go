package slurmconf_test

import (
	"testing"

	"github.com/bursar-hpc/bursar/siteconf/slurmconf"
)

// BenchmarkParseSite: the campus cluster's full file with its Include.
func BenchmarkParseSite(b *testing.B) {
	for b.Loop() {
		if _, err := slurmconf.ParseFile("testdata/site.conf"); err != nil {
			b.Fatal(err)
		}
	}
}
