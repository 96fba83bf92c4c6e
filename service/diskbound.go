package service

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/bursar-hpc/bursar/policy"
)

// The disk bound (issue 34 §6, docs/service.md "Bounded disk"). The data
// directory holds at most three journal segments (the live bursar.wal,
// bursar.wal.old while a snapshot is written, the kept bursar.wal.prev),
// each at most SnapshotBytes plus one record, since a rotation follows
// the append that reaches SnapshotBytes and waits for the snapshot
// before it; and at most three snapshot files (bursar.snap, the kept
// bursar.snap.prev and the one being written), each one state record
// whose size the caps set:
//
//	D ≤ 3·(SnapshotBytes + r) + 3·S + m
//	S = h + N·(c + MaxLeases·l + (CampaignJournalKeep + GrantKeep)·e + I·p) + JournalKeep·e
//	I = idKeep + 1 = 2·(MaxLeases + CampaignJournalKeep + GrantKeep) + 1
//
// with N the campaigns and r, h, c, l, e, p the largest a journal record,
// the state's fixed part, a campaign's fixed part, a lease or pending
// request, a retained record and a request-id pair can be in JSON
// (maxItemBytes works each out by encoding an item whose every number
// has the most digits its type allows and every name its longest
// length), m the length mark and lock. Sizes are summed per file, so a
// snapshot linked as bursar.snap.prev counts twice. Backups made by
// `bursar journal repair` (*.bak-*) are the operator's and not counted.

// itemBytes are the largest encodings of the state's items.
type itemBytes struct {
	record   int // a journal record: checksum, space, JSON, newline
	fixed    int // the snapshot less its campaigns, leases and records: header, trailer, the state's fixed part
	campaign int // a campaign's fixed part: envelope, buckets, usage window, its service state less its records and ids
	lease    int // a lease or a pending request (the larger)
	entry    int // a retained journal record or grant
	pair     int // a request-id pair
}

const (
	worstFloat = -1.2345678901234567e-308 // 24 characters in JSON, the most a float64 takes
	worstInt   = math.MinInt64            // 20
	worstInt32 = math.MinInt32            // 11
	markBytes  = 4096                     // bursar.wal.len (a line), bursar.lock (empty), their temporary files
)

var worstName = strings.Repeat("x", 64) // campaign names are at most 64 characters

func jsonLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		panic("diskbound: " + err.Error())
	}
	return len(b)
}

func worstFlow() *policy.Flow {
	return &policy.Flow{Rate: worstFloat, Bucket: worstFloat, Ceiling: worstFloat}
}

func worstEnvelope() policy.Envelope {
	return policy.Envelope{Name: worstName, Budget: worstFloat, Guaranteed: worstInt, Sustained: worstFloat, BurstCeiling: worstInt,
		Bucket: worstFloat, Class: policy.Opportunistic, IO: worstFlow(), Inference: worstFlow()}
}

func worstEvent() policy.Event {
	return policy.Event{T: worstInt, Kind: math.MaxUint8, Campaign: worstName, CampaignID: worstInt, Lease: worstInt, GPUs: worstInt,
		Reason: worstName, Guaranteed: worstInt, Sustained: worstFloat, Bucket: worstFloat, Burst: worstInt, Tokens: worstFloat,
		Cap: worstInt, Desired: worstFloat, Allowed: worstFloat, Grace: worstInt, Kept: worstInt}
}

// maxItemBytes works out the largest encodings (see the bound above).
func maxItemBytes() itemBytes {
	var ib itemBytes
	cfg := policy.Config{Pool: worstInt, Grace: worstInt, GrantTimeOnly: true, IOCapacity: worstFloat, InferenceCapacity: worstFloat}
	env := worstEnvelope()
	hash := strings.Repeat("f", 64)
	for _, o := range []op{
		{Op: opRegister, T: worstInt, Wall: worstInt, Env: &env, TokenHash: hash},
		{Op: opRequest, T: worstInt, Wall: worstInt, C: worstInt, GPUs: worstInt, Duration: worstInt, Class: "opportunistic"},
		{Op: opConsume, T: worstInt, Wall: worstInt, C: worstInt, IO: worstFloat, Inf: worstFloat},
		{Op: opSlurmJob, T: worstInt, Wall: worstInt, C: worstInt, Lease: worstInt, Job: "123456789012_123456789"},
		{Op: opSlurmRelease, T: worstInt, Wall: worstInt, C: worstInt, Lease: worstInt, Duration: worstInt},
		{Op: opOpen, T: worstInt, Version: worstInt, Config: &cfg, Base: worstInt},
		{Op: opReleaseAll, T: worstInt, Wall: worstInt, C: worstInt, Class: "opportunistic"},
		{Op: opToken, T: worstInt, Wall: worstInt, C: worstInt, TokenHash: hash},
	} {
		ib.record = max(ib.record, 8+1+jsonLen(o)+1)
	}

	ent := entryDump{Seq: worstInt, Ev: worstEvent(), Class: math.MaxUint8, Wall: worstInt, Job: "123456789012_123456789"}
	ib.entry = jsonLen(ent) + 1 // and a comma
	ib.pair = jsonLen([2]int{worstInt, worstInt}) + 1

	lease := policy.LeaseState{Lease: policy.Lease{ID: worstInt, Campaign: worstInt, GPUs: worstInt, Class: policy.Opportunistic,
		Submitted: worstInt, Granted: worstInt, Expires: worstInt, PreemptAt: worstInt, UnderNotice: true},
		Rigid: true, Charge: worstFloat, ChargeM: worstFloat}
	req := policy.RequestState{Request: policy.Request{ID: worstInt, Campaign: worstInt, GPUs: worstInt, Duration: worstInt,
		Submitted: worstInt, Class: policy.Opportunistic}, ThrottleJournaled: true, Rigid: true, Run: worstInt}
	// A held lease may be marked over too (campDump.SlurmReleased,
	// SlurmHeldOver): one number and a comma more per lease.
	ib.lease = max(jsonLen(lease)+jsonLen(worstInt)+1, jsonLen(req)) + 1

	flow := policy.FlowState{Flow: *worstFlow(), Tokens: worstFloat, UsedNow: worstFloat, UsedLast: worstFloat, Throttled: worstInt, LastJournal: worstInt}
	usage := make([]int32, policy.FairShareWindow)
	for i := range usage {
		usage[i] = worstInt32
	}
	cst := policy.CampaignState{Env: env, Tokens: worstFloat, Credits: worstFloat, Busy: true, BusyNext: worstInt32, FlowBusy: true,
		HeldAt: worstInt, IO: flow, Inference: flow, Held: [4]int{worstInt, worstInt, worstInt, worstInt}, HeldAll: worstInt,
		Pending: [4]int{worstInt, worstInt, worstInt, worstInt}, Usage: usage, UsageSum: worstInt, Share: worstFloat,
		Deficit: worstFloat, DeficitAt: worstInt, Tries: worstInt, Floor: worstFloat, FloorEpoch: worstInt, FloorOK: true}
	// A campaign's service part without its records, ids and bindings
	// (counted apart), with the fields that carry them empty; a Slurm
	// binding is less than a pair and a record together, and exists
	// only for a kept id whose lease is held.
	cd := campDump{Name: worstName, Hash: hash, Revoked: true, Journal: ringDump{Last: worstInt}, Grants: ringDump{Last: worstInt},
		GrantedGPUs: worstInt, Pending: worstInt, Filed: worstInt, Reqs: [][2]int{}, SlurmReleased: []int{0}, SlurmHeldOver: []int{0}}
	ib.campaign = jsonLen(cst) + 1 + jsonLen(cd) + 1 + jsonLen(slurmBound{Lease: worstInt, Job: "123456789012_123456789"}) + 1

	ints := make([]int, policy.CongestionWindow)
	for i := range ints {
		ints[i] = worstInt
	}
	st := policy.State{Config: cfg, Now: worstInt, NextID: worstInt, Campaigns: []policy.CampaignState{}, Leases: []policy.LeaseState{},
		Pending: []policy.RequestState{}, Leased: worstInt, Unmet: worstInt, Guaranteed: worstInt, UsageTotal: worstInt,
		UsagePos: worstInt, PendingDemand: worstInt, UsageEpoch: worstInt, BusyHead: worstInt, BusyCount: worstInt,
		CongDemand: ints, CongFree: ints, CongPos: worstInt, CongN: worstInt, CongSumDemand: worstInt, CongSumFree: worstInt,
		CongIndex: worstFloat, UtilSum: worstFloat, UtilN: worstInt, IOLeft: worstFloat, InfLeft: worstFloat,
		ChargesFresh: true, ChargedM: worstFloat, GrantsOnly: true, BooksAt: worstInt, InFlight: worstInt, Reclaimable: worstInt,
		NextDeadline: worstInt, FloorEpoch: worstInt, RigidPending: worstInt, ChangedAt: worstInt, NextChange: worstInt,
		NextChangeNow: worstInt, AdmittedAt: worstInt, QuietFrom: worstInt, QuietUntil: worstInt, ExitEpoch: worstInt,
		TickByTick: true, Work: policy.Work{Passes: worstInt, Pending: worstInt, Runs: worstInt, Walked: worstInt, RunsRead: worstInt,
			Moved: worstInt}, Counting: true}
	state := op{Op: opState, T: worstInt, N: worstInt, State: &coreDump{Broker: &st, Campaigns: []campDump{}, Journal: ringDump{Last: worstInt}}}
	header := op{Op: opOpen, Version: worstInt, Config: &cfg, Base: worstInt}
	ib.fixed = jsonLen(header) + 1 + jsonLen(state) + 1 + len(snapTrailer) + 8 + 1 + 20 + 1
	return ib
}

// idKeepFor is the request ids a campaign keeps before a request makes
// the core drop those nothing refers to (pruneIDs): twice the most its
// leases, pending requests and retained records can name, so that a
// prune frees at least half.
func idKeepFor(maxLeases, keepCampaign, keepGrants int) int {
	return 2 * (maxLeases + keepCampaign + keepGrants)
}

// DiskBound is the most bytes the data directory of a service with these
// options (filled: zeros are the defaults) holds with the given number of
// campaigns (the bound above).
func DiskBound(o Options, campaigns int) int64 {
	return 3*(o.SnapshotBytes+int64(maxItemBytes().record)) + 3*snapshotBound(o, campaigns) + markBytes
}

// snapshotBound is S, the most bytes one snapshot takes.
func snapshotBound(o Options, campaigns int) int64 {
	ib := maxItemBytes()
	ids := int64(idKeepFor(o.MaxLeases, o.CampaignJournalKeep, o.GrantKeep) + 1)
	perCampaign := int64(ib.campaign) + int64(o.MaxLeases)*int64(ib.lease) +
		int64(o.CampaignJournalKeep+o.GrantKeep)*int64(ib.entry) + ids*int64(ib.pair)
	return int64(ib.fixed) + int64(campaigns)*perCampaign + int64(o.JournalKeep)*int64(ib.entry)
}
