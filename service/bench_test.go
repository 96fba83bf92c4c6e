package service_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bursar-hpc/bursar/client"
	"github.com/bursar-hpc/bursar/service"
)

// BenchmarkRequests measures request throughput and latency on loopback:
// concurrent campaigns, each with its own client, POST lease requests (1
// GPU for 1 s, granted at the next tick) to a service served as `bursar
// serve` serves it, in memory and with a journal file. It reports
// requests/s and the median and 99th percentile latency.
//
//	go test -run '^$' -bench Requests -benchtime 20000x ./service/
func BenchmarkRequests(b *testing.B) {
	for _, durable := range []bool{false, true} {
		for _, agents := range []int{1, 32} {
			name := fmt.Sprintf("memory/agents=%d", agents)
			if durable {
				name = fmt.Sprintf("durable/agents=%d", agents)
			}
			b.Run(name, func(b *testing.B) { benchRequests(b, durable, agents) })
		}
	}
}

// BenchmarkCampaigns is BenchmarkRequests with 50 and 200 concurrent
// campaigns (issue 13's load figures).
//
//	go test -run '^$' -bench Campaigns -benchtime 20000x ./service/
func BenchmarkCampaigns(b *testing.B) {
	for _, durable := range []bool{false, true} {
		for _, agents := range []int{50, 200} {
			name := fmt.Sprintf("memory/campaigns=%d", agents)
			if durable {
				name = fmt.Sprintf("durable/campaigns=%d", agents)
			}
			b.Run(name, func(b *testing.B) { benchRequests(b, durable, agents) })
		}
	}
}

func benchRequests(b *testing.B, durable bool, agents int) {
	// The agents are load generators: the per-campaign write limit
	// (tenant.go) would shape the figures instead of measuring them.
	opts := service.Options{Speed: 1000, MaxPending: 1 << 20, WriteRate: -1}
	if durable {
		opts.DataDir = b.TempDir()
	}
	e, _ := serveEnv(b, opts)
	camps := make([]*client.Client, agents)
	for i := range camps {
		camps[i] = e.register(b, client.CampaignSpec{Name: fmt.Sprintf("b%03d", i), Budget: 1e9, Guaranteed: min(8, 512/agents),
			Sustained: 512, BurstCeiling: 512, Bucket: 1e9, Class: client.ClassAgentBurst})
	}
	var (
		next     atomic.Int64
		mu       sync.Mutex
		lat      []time.Duration
		failures atomic.Int64
	)
	// Each agent is one goroutine with its own campaign; done counts the
	// requests handed out so that the agents make b.N between them.
	var done atomic.Int64
	agent := func() {
		i := int(next.Add(1) - 1)
		c, name := camps[i], fmt.Sprintf("b%03d", i)
		mine := make([]time.Duration, 0, b.N/agents+1)
		for done.Add(1) <= int64(b.N) {
			t0 := time.Now()
			if _, err := c.Request(context.Background(), name, client.LeaseRequest{GPUs: 1, Duration: 1}); err != nil {
				failures.Add(1)
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failures.Load(); f > 0 {
		b.Fatalf("%d failed requests", f)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
}
