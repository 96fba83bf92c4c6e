package figures_test

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"

	"github.com/bursar-hpc/bursar/figures"
)

// A one-point fig_bucket, written as PNG and decoded again.
func ExampleWriteBucket() {
	dir, err := os.MkdirTemp("", "figures-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	d := figures.BucketData{
		Points: []figures.BucketPoint{{
			StormBucket: 25e3,
			Contended:   figures.Band{Mean: 26e3, Min: 25.5e3, Max: 26.4e3},
			IdlePrepaid: figures.Band{Mean: 26e3, Min: 26e3, Max: 26e3},
			IdleLeaky:   figures.Band{Mean: 167e3, Min: 161e3, Max: 171e3},
		}},
		StormRate: 64, Window: 1800,
	}
	path := filepath.Join(dir, "fig_bucket.png")
	if err := figures.WriteBucket(path, figures.PNG, d); err != nil {
		fmt.Println(err)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d×%d pixels\n", cfg.Width, cfg.Height)

	// An empty sweep is an error, and nothing is written.
	err = figures.WriteBucket(filepath.Join(dir, "empty.png"), figures.PNG, figures.BucketData{})
	fmt.Println(err)
	// Output:
	// 975×675 pixels
	// figures: bucket: no bucket points
}
