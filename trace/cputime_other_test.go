//go:build !unix

package trace

func cpuTime() int64 { return 0 }
