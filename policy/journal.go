package policy

import (
	"math"
	"strconv"
	"unicode/utf16"
)

// EventKind says which journal record an Event is.
type EventKind uint8

const (
	EventRegister EventKind = iota + 1
	EventDeny
	EventRelease
	EventRequestExpired
	EventThrottle
	EventThrottleIO
	EventThrottleInference
	EventPreemptNotice
	EventGrant
)

var eventNames = [...]string{
	EventRegister:          "register",
	EventDeny:              "deny",
	EventRelease:           "release",
	EventRequestExpired:    "request-expired",
	EventThrottle:          "throttle",
	EventThrottleIO:        "throttle-io",
	EventThrottleInference: "throttle-inference",
	EventPreemptNotice:     "preempt-notice",
	EventGrant:             "grant",
}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

// Path is the way a grant was served, judged by its latency.
type Path uint8

const (
	// Warm: granted at once from free GPUs (latency ≤ 1 s).
	Warm Path = iota
	// Reclaim: granted after preempting backfill (latency ≤ grace + 10 s).
	Reclaim
	// Cold: anything slower.
	Cold

	NumPaths = 3
)

var pathNames = [NumPaths]string{"warm", "reclaim", "cold"}

func (p Path) String() string {
	if p < NumPaths {
		return pathNames[p]
	}
	return "path(" + strconv.Itoa(int(p)) + ")"
}

// Release reasons.
const (
	ReasonExpired         = "expired"
	ReasonPreempted       = "preempted"
	ReasonReleasedByAgent = "released-by-agent"
	ReasonBudgetExhausted = "budget-exhausted"
)

// Event is one journal record. It is a flat value (no pointers but the
// strings it shares with the broker) so that handing it to a Recorder costs
// no allocation; which fields are meaningful depends on Kind, as listed in
// AppendJSON.
type Event struct {
	T        int
	Kind     EventKind
	Campaign string
	// CampaignID is the campaign's registration index.
	CampaignID CampaignID
	Lease      int
	GPUs       int
	Class      Class
	Reason     string

	// register
	Guaranteed int
	Sustained  float64
	Bucket     float64
	Burst      int

	// throttle: GPU tokens and the rate cap; flow throttles: tokens of the
	// dimension, desired and allowed amounts.
	Tokens  float64
	Cap     int
	Desired float64
	Allowed float64

	// preempt-notice
	Grace int

	// release of a preempted trace job: the seconds of its run that its
	// checkpoints kept (docs/studies.md §6.7; 0 under restart zero). The
	// JSON carries it only when it is not 0.
	Kept int

	// grant, with the rule inputs read at sort time.
	Latency     int
	Path        Path
	FairDeficit float64
	RuleTokens  float64
}

// Recorder receives the journal as it is written. A broker without one
// builds no records at all.
type Recorder interface {
	Record(Event)
}

// pyRound rounds x to n decimals the way Python's round(x, n) does: the
// correctly rounded decimal string, read back.
func pyRound(x float64, n int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	var buf [64]byte
	s := strconv.AppendFloat(buf[:0], x, 'f', n, 64)
	v, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		return x
	}
	return v
}

// appendNumber writes a float the way the prototype's JSON does for the
// digits (shortest round-trip), but integral values without a fraction.
// NaN and infinities, which JSON cannot carry, become null.
func appendNumber(dst []byte, x float64) []byte {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return append(dst, "null"...)
	}
	if x == 0 {
		return append(dst, '0')
	}
	a := math.Abs(x)
	if a >= 1e-4 && a < 1e16 {
		return strconv.AppendFloat(dst, x, 'f', -1, 64)
	}
	return strconv.AppendFloat(dst, x, 'e', -1, 64)
}

func appendKey(dst []byte, key string) []byte {
	dst = append(dst, ", \""...)
	dst = append(dst, key...)
	return append(dst, "\": "...)
}

func appendStringField(dst []byte, key, v string) []byte {
	dst = appendKey(dst, key)
	return appendJSONString(dst, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string the way the prototype's
// json.dumps does by default (ensure_ascii): printable ASCII as it is, the
// short escapes for " \ \n \r \t \b \f, and \uXXXX (UTF-16, lower-case
// hex) for everything else. Campaign names are free text, and Go's quoting
// (\x00, \v, raw bytes) is not JSON, so it cannot be used here. Bytes that
// are not UTF-8 (a Go string may hold them, a Python one cannot) become
// U+FFFD, as encoding/json writes them.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for _, r := range s { // range yields U+FFFD for each invalid byte
		switch r {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			switch {
			case r >= 0x20 && r < 0x7f:
				dst = append(dst, byte(r))
			case r < 0x10000:
				dst = appendUnicodeEscape(dst, r)
			default:
				hi, lo := utf16.EncodeRune(r)
				dst = appendUnicodeEscape(appendUnicodeEscape(dst, hi), lo)
			}
		}
	}
	return append(dst, '"')
}

func appendUnicodeEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

func appendIntField(dst []byte, key string, v int) []byte {
	dst = appendKey(dst, key)
	return strconv.AppendInt(dst, int64(v), 10)
}

func appendFloatField(dst []byte, key string, v float64) []byte {
	dst = appendKey(dst, key)
	return appendNumber(dst, v)
}

// AppendJSON appends the record as one JSON object (no newline) whose first
// keys are t and event, in the prototype's layout (", " and ": "
// separators). Numbers are rounded for reading as the model says:
// fair_deficit to 4 decimals, GPU tokens to 1, flow desired and allowed to 2
// and their tokens to 1.
func (e *Event) AppendJSON(dst []byte) []byte {
	dst = append(dst, "{\"t\": "...)
	dst = strconv.AppendInt(dst, int64(e.T), 10)
	dst = append(dst, ", \"event\": \""...)
	dst = append(dst, e.Kind.String()...)
	dst = append(dst, '"')
	switch e.Kind {
	case EventRegister:
		dst = appendStringField(dst, "campaign", e.Campaign)
		dst = appendIntField(dst, "guaranteed", e.Guaranteed)
		dst = appendFloatField(dst, "R", e.Sustained)
		dst = appendFloatField(dst, "B", e.Bucket)
		dst = appendIntField(dst, "burst", e.Burst)
	case EventDeny:
		dst = appendStringField(dst, "campaign", e.Campaign)
		dst = appendIntField(dst, "gpus", e.GPUs)
		dst = appendStringField(dst, "cls", e.Class.String())
		dst = appendStringField(dst, "reason", e.Reason)
	case EventRelease:
		dst = appendIntField(dst, "lease", e.Lease)
		dst = appendStringField(dst, "campaign", e.Campaign)
		dst = appendIntField(dst, "gpus", e.GPUs)
		dst = appendStringField(dst, "reason", e.Reason)
		if e.Kept != 0 {
			dst = appendIntField(dst, "kept", e.Kept)
		}
	case EventRequestExpired:
		dst = appendStringField(dst, "campaign", e.Campaign)
		dst = appendIntField(dst, "gpus", e.GPUs)
		dst = appendStringField(dst, "cls", e.Class.String())
	case EventThrottle:
		dst = appendStringField(dst, "campaign", e.Campaign)
		dst = appendIntField(dst, "gpus", e.GPUs)
		dst = appendStringField(dst, "cls", e.Class.String())
		dst = appendFloatField(dst, "tokens", pyRound(e.Tokens, 1))
		dst = appendIntField(dst, "cap", e.Cap)
	case EventThrottleIO, EventThrottleInference:
		dst = appendStringField(dst, "campaign", e.Campaign)
		dst = appendFloatField(dst, "desired", pyRound(e.Desired, 2))
		dst = appendFloatField(dst, "allowed", pyRound(e.Allowed, 2))
		dst = appendFloatField(dst, "tokens", pyRound(e.Tokens, 1))
	case EventPreemptNotice:
		dst = appendIntField(dst, "lease", e.Lease)
		dst = appendStringField(dst, "campaign", e.Campaign)
		dst = appendIntField(dst, "gpus", e.GPUs)
		dst = appendIntField(dst, "grace", e.Grace)
	case EventGrant:
		dst = appendIntField(dst, "lease", e.Lease)
		dst = appendStringField(dst, "campaign", e.Campaign)
		dst = appendIntField(dst, "gpus", e.GPUs)
		dst = appendStringField(dst, "cls", e.Class.String())
		dst = appendIntField(dst, "latency", e.Latency)
		dst = appendStringField(dst, "path", e.Path.String())
		dst = append(dst, ", \"rule\": {\"class_rank\": "...)
		dst = strconv.AppendInt(dst, int64(e.Class.Rank()), 10)
		dst = appendFloatField(dst, "fair_deficit", pyRound(e.FairDeficit, 4))
		dst = appendFloatField(dst, "tokens", pyRound(e.RuleTokens, 1))
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// String is the record as JSON.
func (e Event) String() string { return string(e.AppendJSON(nil)) }
