package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/atomicfile"
)

// CacheFormat tags run-cache keys and entries; a change of the entry
// layout changes it, and with it every key.
const CacheFormat = "bursar-run/1"

// Cache stores each run's metrics under a content address, the SHA-256 of
// the run's effective scenario (every knob, the enforcement policy and the
// seed) and ProgramVersion, so that a rerun or a resumed sweep computes
// only what is missing and a changed program never reuses old numbers.
//
// An entry is the file DIR/ab/abcd….json (the key's first two hex digits
// name its folder, keeping folders small), written atomically: a line
// "sha256:HEX" (the checksum of the rest) and then the JSON of the key,
// the program, the scenario and the metrics. An entry whose checksum,
// key or JSON does not hold is counted corrupt and recomputed. Lookups
// and stores are safe from many goroutines and from many processes
// sharing DIR (the array tasks of one Slurm job).
type Cache struct {
	dir                   string
	hits, misses, corrupt atomic.Int64
}

// OpenCache opens (creating) the cache folder dir.
func OpenCache(dir string) (*Cache, error) {
	if dir == "" {
		return nil, fmt.Errorf("--cache: the folder name is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--cache: %w", err)
	}
	return &Cache{dir: dir}, nil
}

// CacheStats are a cache's counts since it was opened: hits, misses
// (computed and stored) and, among the misses, corrupt entries replaced.
type CacheStats struct {
	Hits, Misses, Corrupt int64
}

// Stats returns the counts so far.
func (c *Cache) Stats() CacheStats {
	return CacheStats{c.hits.Load(), c.misses.Load(), c.corrupt.Load()}
}

func (st CacheStats) String() string {
	return fmt.Sprintf("%d hits, %d misses (%d corrupt entries recomputed)", st.Hits, st.Misses, st.Corrupt)
}

// RunKey is the content address of a run of scenario s by this program.
func RunKey(s *engine.Scenario) string {
	h := sha256.New()
	h.Write([]byte(CacheFormat + "\n" + ProgramVersion() + "\n"))
	h.Write(marshalWire(s))
	// The cast, the policy and its knobs are not in the scenario's JSON;
	// a run of the paper's knobs naming no policy keeps the key it always
	// had. (Without the cast, two points of a config sweeping a campaign's
	// field by path shared one key.)
	if s.Cast != nil {
		h.Write([]byte("\ncast\n"))
		h.Write(marshalWire(s.Cast))
	}
	if s.Policy != "" {
		h.Write([]byte("\npolicy " + s.Policy + "\n"))
		h.Write(marshalWire(s.PolicyKnobs))
	}
	if s.Platform != nil {
		h.Write([]byte("\nplatform " + s.Platform.String() + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Cache) path(key string) string {
	return filepath.Join(c.dir, key[:2], key+".json")
}

type cacheEntry struct {
	Key      string          `json:"key"`
	Program  string          `json:"program"`
	Scenario engine.Scenario `json:"scenario"`
	Metrics  wireMetrics     `json:"metrics"`
}

// errCorrupt marks an entry that exists but cannot be trusted.
var errCorrupt = errors.New("corrupt cache entry")

// frameEntry prefixes an entry's body with the line "sha256:HEX", its
// checksum; unframeEntry checks and strips it.
func frameEntry(body []byte) []byte {
	sum := sha256.Sum256(body)
	return append([]byte("sha256:"+hex.EncodeToString(sum[:])+"\n"), body...)
}

func unframeEntry(data []byte) ([]byte, error) {
	line, body, ok := bytes.Cut(data, []byte("\n"))
	sum := sha256.Sum256(body)
	if !ok || string(line) != "sha256:"+hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: checksum does not match", errCorrupt)
	}
	return body, nil
}

// decodeCacheBody parses a checked entry body for key.
func decodeCacheBody(key string, body []byte) (engine.Metrics, error) {
	var e cacheEntry
	if err := decodeEntry(body, &e, key, func() string { return e.Key }); err != nil {
		return engine.Metrics{}, err
	}
	return e.Metrics.metrics(), nil
}

// read returns the bytes of key's entry, or nil (counting a miss) when
// there is none. An unreadable entry other than a missing one is an
// error: a cache that cannot be read should stop the sweep rather than
// silently recompute everything.
func (c *Cache) read(key string) ([]byte, error) {
	data, err := os.ReadFile(c.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		c.misses.Add(1)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--cache: %w", err)
	}
	return data, nil
}

// counted records the outcome of decoding an entry that read returned:
// a hit, or a corrupt entry (a miss, recomputed and replaced).
func (c *Cache) counted(decodeErr error) {
	if decodeErr != nil {
		c.misses.Add(1)
		c.corrupt.Add(1)
		return
	}
	c.hits.Add(1)
}

// write stores an entry atomically, replacing a corrupt one.
func (c *Cache) write(key string, entry []byte) error {
	if err := atomicfile.Write(c.path(key), entry); err != nil {
		return fmt.Errorf("--cache: %w", err)
	}
	return nil
}
