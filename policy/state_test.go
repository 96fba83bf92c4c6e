package policy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// roundTrip is s through JSON, as a snapshot file carries it.
func roundTrip(t *rapid.T, s *State) *State {
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var back State
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return &back
}

// TestDumpRestoreContinues: a broker restored from its dump (through
// JSON) at any point of a random workload goes on exactly as the
// original: the same journal records, byte for byte, the invariants
// after every operation, and the same state at the end.
func TestDumpRestoreContinues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t, false)
		split := rapid.IntRange(0, len(sc.ops)).Draw(t, "split")
		orig := newRunner(t, &sc)
		for _, o := range sc.ops[:split] {
			orig.apply(o)
		}
		b, err := Restore(roundTrip(t, orig.b.Dump()))
		if err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if a, c := mustJSON(t, orig.b.Dump()), mustJSON(t, b.Dump()); !bytes.Equal(a, c) {
			t.Fatalf("the restored broker dumps another state:\n%s\n----\n%s", a, c)
		}
		restored := &runner{t: t, b: b, j: &journal{}, sc: &sc, late: orig.late, lateTick: orig.lateTick, admitted: orig.admitted}
		b.SetRecorder(restored.j)
		orig.j, orig.trackers = &journal{}, nil
		orig.b.SetRecorder(orig.j)
		for _, o := range sc.ops[split:] {
			orig.apply(o)
			restored.apply(o)
		}
		if !bytes.Equal(orig.j.buf, restored.j.buf) {
			t.Fatalf("after the split at op %d the journals differ:\n%s\n----\n%s", split, orig.j.buf, restored.j.buf)
		}
		if a, c := mustJSON(t, orig.b.Dump()), mustJSON(t, b.Dump()); !bytes.Equal(a, c) {
			t.Fatalf("the states differ at the end:\n%s\n----\n%s", a, c)
		}
	})
}

func mustJSON(t *rapid.T, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return data
}

// TestStateCoversEveryField: every field of the broker's records is
// either dumped (State) or scratch that Restore leaves to be rebuilt. A
// field added to Broker, campaign, flowState, Lease or Request fails this
// test until it is placed in one list or the other (and, if dumped, in
// Dump and Restore).
func TestStateCoversEveryField(t *testing.T) {
	placed := map[string][]string{
		"Broker": {
			// dumped
			"cfg", "now", "camps", "leases", "runs", "runReqs", "nextID", "leased", "unmet", "guaranteed", "usageTotal", "usagePos",
			"pendingDemand", "usageEpoch", "busyHead", "busyCount", "cong", "congIndex", "utilSum", "utilN", "ioLeft", "infLeft",
			"chargesFresh", "chargedM", "grantsOnly", "booksAt", "inFlight", "reclaimable", "nextDeadline",
			"floorEpoch", "rigidPending", "changedAt", "nextChange", "nextChangeNow", "admittedAt", "quietFrom", "quietUntil",
			"exitEpoch", "tickByTick", "work", "counting",
			// not dumped: the recorder is the caller's; a copy's ring block;
			// the platform's placer (a service's pool is a number; Dump)
			"rec", "rings", "placer",
			// scratch: rebuilt when stale (candsValid) or emptied before it is read
			"cands", "candPos", "candsValid", "freeSlots", "exits", "exitTouched",
			// the runs' summaries, redone where not valid (runSummary)
			"runSums",
			// account's charges by campaign, refilled when stale (bookOK)
			"book", "bookOK", "bookAt",
			// the book's lazy charges, taken by Dump (settle)
			"accounted", "bookGen", "tailAdds",
			// the charges' freshness hint, 0 (none) in a restored broker
			"freshBefore",
			// the moving list, every busy campaign in a restored broker
			"movingHead",
			// the admission sorts' scratch, written before it is read
			"sortKeys", "sortedRuns", "sortTiedKeys", "sortTiedRuns",
			// the sum of the walk's loads ahead, which nothing reads (touchRuns)
			"touchSum",
			// SkipTo's scratch, reset at its start
			"skipToks", "skipLazy", "skipSlide", "skipWatch", "skipWatchCamps", "skipWatchSpare", "skipLineEnd",
			"skipWatchHeld", "skipPairsN", "skipPairCross", "skipPairUntil", "skipMinEnd", "skipFlows", "skipMuls",
			"skipOff", "skipAt", "skipOrder", "skipAdds", "skipSlope", "skipTokLines",
			"skipMoved", "skipPairs", "skipRunFirst", "skipRunNext", "skipRunCamps", "skipTies", "skipIdxOK",
			"skipSeg", "skipSegOK", "skipSegStart", "skipSegEnd",
		},
		"campaign": {
			"env", "tokens", "credits", "busy", "busyNext", "flowBusy", "heldAt", "io", "inf", "held", "heldAll", "pending",
			"usage", "share", "deficit", "deficitAt", "tries", "floor", "floorEpoch", "floorOK",
			// Σ pending, redone by Restore
			"pendingAll",
			// SkipTo's scratch
			"line", "usageStep",
			// the book's lazy charges, taken by Dump (settle)
			"bookGen", "bookFrom", "bookEnd", "chargedTo", "tail", "tailTo",
			// the moving list, rebuilt by Restore
			"moving", "movingNext",
		},
		"flowState":      {"Flow", "tokens", "usedNow", "usedLast", "throttled", "lastJournal"},
		"Lease":          {"ID", "Campaign", "GPUs", "Class", "Submitted", "Granted", "Expires", "PreemptAt", "UnderNotice", "rigid", "charge", "chargeM"},
		"Request":        {"ID", "Campaign", "GPUs", "Duration", "Submitted", "Class", "throttleJournaled", "rigid", "run"},
		"congestionRing": {"demand", "free", "pos", "n", "sumDemand", "sumFree"},
		"usageRing":      {"buf", "sum"},
	}
	for _, v := range []any{Broker{}, campaign{}, flowState{}, Lease{}, Request{}, congestionRing{}, usageRing{}} {
		typ := reflect.TypeOf(v)
		var fields []string
		for i := range typ.NumField() {
			f := typ.Field(i).Name
			fields = append(fields, f)
			assert.Contains(t, placed[typ.Name()], f, "%s.%s is neither dumped (policy.State) nor listed as scratch", typ.Name(), f)
		}
		for _, f := range placed[typ.Name()] {
			assert.True(t, slices.Contains(fields, f), "%s.%s is listed but no longer exists", typ.Name(), f)
		}
	}
}
