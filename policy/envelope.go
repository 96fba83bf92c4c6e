package policy

import (
	"errors"
	"fmt"
	"math"
)

// Class is a service class. Its numeric value is its rank: a lower rank is
// served first by admission.
type Class uint8

const (
	Deadline Class = iota
	Interactive
	AgentBurst
	Opportunistic

	numClasses = 4
)

// AnyClass stands for "no class given": in Request it means the envelope's
// default class, in Held, Outstanding and ReleaseAll it means every class.
const AnyClass Class = 0xff

var classNames = [numClasses]string{"deadline", "interactive", "agent-burst", "opportunistic"}

// basePrice is the credit multiplier per GPU-hour of each class.
var basePrice = [numClasses]float64{4.0, 2.0, 3.0, 0.25}

// Rank is the admission rank of the class (lower is served first).
func (c Class) Rank() int { return int(c) }

// BasePrice is the class's credit multiplier per GPU-hour.
func (c Class) BasePrice() float64 { return basePrice[c] }

// Valid reports whether c is one of the four service classes.
func (c Class) Valid() bool { return c < numClasses }

func (c Class) String() string {
	if c.Valid() {
		return classNames[c]
	}
	if c == AnyClass {
		return "any"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// ParseClass turns a class name (as written in journals and configs) into a
// Class.
func ParseClass(s string) (Class, error) {
	for i, n := range classNames {
		if n == s {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("unknown service class %q (want deadline, interactive, agent-burst or opportunistic)", s)
}

// MarshalText writes the class name.
func (c Class) MarshalText() ([]byte, error) {
	if !c.Valid() {
		return nil, fmt.Errorf("invalid service class %d", uint8(c))
	}
	return []byte(classNames[c]), nil
}

// UnmarshalText reads a class name.
func (c *Class) UnmarshalText(b []byte) error {
	v, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Unmetered is the rate, bucket and ceiling of a flow dimension (and the
// facility capacity) that is not metered.
const Unmetered = 1e12

// Flow is the token-bucket envelope of one flow dimension (filesystem
// bandwidth in GB/s, or inference tokens/s): a campaign may use up to
// Ceiling per tick while its tokens last, and Rate once they are gone.
type Flow struct {
	Rate    float64 `json:"rate" yaml:"rate"`
	Bucket  float64 `json:"bucket" yaml:"bucket"`
	Ceiling float64 `json:"ceiling" yaml:"ceiling"`
}

// UnmeteredFlow is the envelope of a dimension nobody meters.
var UnmeteredFlow = Flow{Rate: Unmetered, Bucket: Unmetered, Ceiling: Unmetered}

// Envelope is what a campaign was granted.
type Envelope struct {
	Name string `json:"name"`
	// Budget is the class-weighted GPU-hour credits it may spend.
	Budget float64 `json:"budget"`
	// Guaranteed GPUs are available on demand.
	Guaranteed int `json:"guaranteed"`
	// Sustained is the refill rate R of the GPU bucket, in GPUs.
	Sustained float64 `json:"sustained"`
	// BurstCeiling is the most GPUs it may hold while its bucket has tokens.
	BurstCeiling int `json:"burst_ceiling"`
	// Bucket is the capacity B of the GPU bucket, in GPU-seconds.
	Bucket float64 `json:"bucket"`
	// Class is the default class of its requests.
	Class Class `json:"class"`
	// IO and Inference are optional flow envelopes; nil means unmetered.
	IO        *Flow `json:"io,omitempty"`
	Inference *Flow `json:"inference,omitempty"`
}

// ErrInvalidEnvelope wraps every envelope validation error.
var ErrInvalidEnvelope = errors.New("invalid envelope")

func checkNumber(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%w: %s must be a finite number, got %v", ErrInvalidEnvelope, field, v)
	}
	if v < 0 {
		return fmt.Errorf("%w: %s must not be negative, got %v", ErrInvalidEnvelope, field, v)
	}
	return nil
}

// Validate checks the envelope on its own (not against a pool). The error
// names the offending field.
func (e *Envelope) Validate() error {
	if e.Name == "" {
		return fmt.Errorf("%w: name must not be empty", ErrInvalidEnvelope)
	}
	prefix := "campaign " + e.Name + ": "
	wrap := func(err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("%s%w", prefix, err)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"budget", e.Budget},
		{"guaranteed", float64(e.Guaranteed)},
		{"sustained", e.Sustained},
		{"burst_ceiling", float64(e.BurstCeiling)},
		{"bucket", e.Bucket},
	} {
		if err := checkNumber(f.name, f.v); err != nil {
			return wrap(err)
		}
	}
	if e.BurstCeiling < e.Guaranteed {
		return wrap(fmt.Errorf("%w: burst_ceiling (%d) must not be below guaranteed (%d)", ErrInvalidEnvelope, e.BurstCeiling, e.Guaranteed))
	}
	if !e.Class.Valid() {
		return wrap(fmt.Errorf("%w: class: unknown service class %d", ErrInvalidEnvelope, uint8(e.Class)))
	}
	for _, d := range []struct {
		name string
		f    *Flow
	}{{"io", e.IO}, {"inference", e.Inference}} {
		if d.f == nil {
			continue
		}
		for _, x := range []struct {
			name string
			v    float64
		}{{"rate", d.f.Rate}, {"bucket", d.f.Bucket}, {"ceiling", d.f.Ceiling}} {
			if err := checkNumber(d.name+"."+x.name, x.v); err != nil {
				return wrap(err)
			}
		}
	}
	return nil
}
