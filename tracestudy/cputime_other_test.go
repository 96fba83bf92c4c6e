//go:build !unix

package tracestudy

func cpuTime() int64 { return 0 }
