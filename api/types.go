package api

import "encoding/json"

// The wire types below are the contract between `bursar serve` and its
// clients. The service registers them with its OpenAPI generator as they
// are, so the struct tags double as the schema: `minimum`, `maximum`,
// `enum`, `pattern` and friends are what the server validates every request
// against before a handler runs, and fields without `omitempty` are
// required. Keeping the one definition here (rather than a copy on each
// side) is what keeps the client and the published document in step.

// Service class names, as the API spells them.
const (
	ClassDeadline      = "deadline"
	ClassInteractive   = "interactive"
	ClassAgentBurst    = "agent-burst"
	ClassOpportunistic = "opportunistic"
)

// Grant paths, as the API spells them.
const (
	PathWarm    = "warm"
	PathReclaim = "reclaim"
	PathCold    = "cold"
)

// Request states reported by RequestStatus.
const (
	StatePending = "pending"
	StateGranted = "granted"
)

// NamePattern is what a campaign name must look like: it appears in URLs,
// so it is restricted to characters that need no escaping.
const NamePattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`

// FlowSpec is the token-bucket envelope of one flow dimension (filesystem
// bandwidth in GB/s, or inference tokens/s).
type FlowSpec struct {
	Rate    float64 `json:"rate" minimum:"0" maximum:"1e12" doc:"Refill rate per broker second; the most a campaign may use per second once its bucket is empty."`
	Bucket  float64 `json:"bucket" minimum:"0" maximum:"1e12" doc:"Bucket capacity."`
	Ceiling float64 `json:"ceiling" minimum:"0" maximum:"1e12" doc:"The most a campaign may use per second while its bucket has tokens."`
}

// CampaignSpec is the envelope an administrator registers a campaign with.
type CampaignSpec struct {
	Name         string    `json:"name" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" maxLength:"64" doc:"Unique campaign name; it becomes part of the campaign's URLs." example:"adaptive-sci"`
	Budget       float64   `json:"budget" minimum:"0" maximum:"1e15" doc:"Class-weighted GPU-hour credits the campaign may spend." example:"20000"`
	Guaranteed   int       `json:"guaranteed" minimum:"0" maximum:"1048576" doc:"GPUs available on demand. The sum over all campaigns never exceeds the pool." example:"64"`
	Sustained    float64   `json:"sustained" minimum:"0" maximum:"1e9" doc:"Token refill rate R, in GPUs (GPU-seconds per second)." example:"128"`
	BurstCeiling int       `json:"burst_ceiling" minimum:"0" maximum:"1048576" doc:"Most GPUs the campaign may hold while its bucket has tokens; at least guaranteed." example:"384"`
	Bucket       float64   `json:"bucket" minimum:"0" maximum:"1e15" doc:"Token bucket capacity B, in GPU-seconds." example:"300000"`
	Class        string    `json:"class" enum:"deadline,interactive,agent-burst,opportunistic" doc:"Default service class of the campaign's requests." example:"agent-burst"`
	IO           *FlowSpec `json:"io,omitempty" doc:"Filesystem bandwidth envelope (GB/s); absent means unmetered."`
	Inference    *FlowSpec `json:"inference,omitempty" doc:"Inference envelope (tokens/s); absent means unmetered."`
}

// Registration answers a successful registration. Token is shown here and
// nowhere else: the service keeps only its hash.
type Registration struct {
	ID       int          `json:"id" doc:"Registration index of the campaign."`
	Name     string       `json:"name"`
	Token    string       `json:"token" doc:"The campaign's bearer token (128 random bits). Shown once; store it now."`
	T        int          `json:"t" doc:"Broker time of the registration, in broker seconds."`
	Envelope CampaignSpec `json:"envelope"`
}

// CampaignToken answers a token rotation (with the new token, shown this
// once) or a revocation.
type CampaignToken struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	Token   string `json:"token,omitempty" doc:"The campaign's new bearer token; the old one no longer works. Shown once."`
	Revoked bool   `json:"revoked,omitempty" doc:"No token reaches the campaign until the administrator rotates a new one."`
	T       int    `json:"t"`
}

// Campaign is one campaign's envelope and standing.
type Campaign struct {
	ID              int          `json:"id"`
	Name            string       `json:"name"`
	Envelope        CampaignSpec `json:"envelope"`
	Held            int          `json:"held" doc:"GPUs held, all classes."`
	Outstanding     int          `json:"outstanding" doc:"Held GPUs plus GPUs of pending requests."`
	PendingRequests int          `json:"pending_requests" doc:"Number of pending requests."`
	Credits         float64      `json:"credits" doc:"Credits left (may be negative: running leases keep being charged)."`
	Spent           float64      `json:"spent"`
	Grants          int          `json:"grants" doc:"Grants made to this campaign since registration."`
	GrantedGPUs     int          `json:"granted_gpus" doc:"GPUs over all those grants."`
}

// CampaignOut wraps Campaign with the broker time it was read at.
type CampaignOut struct {
	T        int      `json:"t"`
	Campaign Campaign `json:"campaign"`
}

// CampaignList is the administrator's view of every campaign.
type CampaignList struct {
	T         int        `json:"t"`
	Pool      int        `json:"pool"`
	Free      int        `json:"free"`
	Campaigns []Campaign `json:"campaigns"`
}

// FlowSupply is what a campaign can see of one flow dimension.
type FlowSupply struct {
	Tokens       float64 `json:"tokens"`
	Bucket       float64 `json:"bucket"`
	Rate         float64 `json:"rate"`
	Ceiling      float64 `json:"ceiling"`
	FacilityLeft float64 `json:"facility_left" doc:"Facility capacity of this dimension left in the current broker second."`
}

// Supply is what a campaign can see before it asks.
type Supply struct {
	T               int        `json:"t"`
	Free            int        `json:"free" doc:"GPUs not leased to anyone."`
	Reclaimable     int        `json:"reclaimable" doc:"GPUs of opportunistic leases not yet under preemption notice."`
	CongestionIndex float64    `json:"congestion_index"`
	Multiplier      float64    `json:"multiplier" doc:"Congestion price multiplier for interactive and agent-burst leases."`
	Tokens          float64    `json:"tokens" doc:"GPU tokens in the campaign's bucket, GPU-seconds."`
	Bucket          float64    `json:"bucket"`
	Sustained       float64    `json:"sustained"`
	Credits         float64    `json:"credits"`
	ExpectedPath    string     `json:"expected_path" enum:"warm,reclaim,cold" doc:"How a request made now would probably be served."`
	Held            int        `json:"held"`
	Outstanding     int        `json:"outstanding"`
	IO              FlowSupply `json:"io"`
	Inference       FlowSupply `json:"inference"`
}

// LeaseRequest asks for GPUs.
type LeaseRequest struct {
	GPUs     int    `json:"gpus" minimum:"1" maximum:"1048576" doc:"GPUs wanted; at most the pool." example:"64"`
	Duration int    `json:"duration" minimum:"1" maximum:"31536000" doc:"Lease length in broker seconds." example:"600"`
	Class    string `json:"class,omitempty" enum:"deadline,interactive,agent-burst,opportunistic" doc:"Service class; absent means the campaign's default."`
}

// RequestAccepted answers a request that was queued for admission.
type RequestAccepted struct {
	RequestID int    `json:"request_id" doc:"The campaign's own request id: its n-th request is n, whatever other campaigns file; a grant makes a lease with the same id."`
	State     string `json:"state" enum:"pending,granted" doc:"pending: it waits for an admission pass; granted: a service that admits on request (serve --admit-on-request) granted it before answering."`
	T         int    `json:"t" doc:"Broker time the request was filed at."`
	GPUs      int    `json:"gpus"`
	Duration  int    `json:"duration"`
	Class     string `json:"class" doc:"The class it was filed in (the default resolved)."`
}

// PendingRequest is a request waiting for admission.
type PendingRequest struct {
	ID        int    `json:"id" doc:"The campaign's own request id (its n-th request is n)."`
	GPUs      int    `json:"gpus"`
	Duration  int    `json:"duration"`
	Class     string `json:"class"`
	Submitted int    `json:"submitted"`
}

// Lease is granted GPUs for a time.
type Lease struct {
	ID          int    `json:"id" doc:"The campaign's own lease id, equal to its request id."`
	GPUs        int    `json:"gpus"`
	Class       string `json:"class"`
	Submitted   int    `json:"submitted"`
	Granted     int    `json:"granted"`
	Expires     int    `json:"expires"`
	UnderNotice bool   `json:"under_notice" doc:"The lease is being preempted."`
	PreemptAt   int    `json:"preempt_at,omitempty" doc:"When an opportunistic lease under notice is reclaimed."`
}

// Leases is a campaign's leases and pending requests.
type Leases struct {
	T           int              `json:"t"`
	Held        int              `json:"held"`
	Outstanding int              `json:"outstanding"`
	Leases      []Lease          `json:"leases"`
	Pending     []PendingRequest `json:"pending"`
}

// GrantRule is what admission read when it ordered the request.
type GrantRule struct {
	ClassRank   int     `json:"class_rank"`
	FairDeficit float64 `json:"fair_deficit"`
	Tokens      float64 `json:"tokens"`
}

// Grant is one grant made to a campaign.
type Grant struct {
	Seq     int64     `json:"seq" doc:"Ordinal of the grant among the campaign's grants, from 1."`
	T       int       `json:"t"`
	Lease   int       `json:"lease" doc:"The campaign's own lease id, equal to its request id."`
	GPUs    int       `json:"gpus"`
	Class   string    `json:"class"`
	Latency int       `json:"latency" doc:"Broker seconds from request to grant."`
	Path    string    `json:"path" enum:"warm,reclaim,cold"`
	Rule    GrantRule `json:"rule"`
}

// Grants is a page of a campaign's grants.
type Grants struct {
	T           int     `json:"t"`
	TotalGrants int64   `json:"total_grants" doc:"Grants since registration (the seq of the latest)."`
	TotalGPUs   int64   `json:"total_gpus" doc:"GPUs over all grants since registration."`
	Oldest      int64   `json:"oldest" doc:"Smallest seq still retained (0 when none)."`
	Next        int64   `json:"next" doc:"Pass as after= to read on from this page."`
	Grants      []Grant `json:"grants"`
}

// RequestStatus says where a request stands.
type RequestStatus struct {
	T         int             `json:"t"`
	RequestID int             `json:"request_id" doc:"The campaign's own request id."`
	State     string          `json:"state" enum:"pending,granted"`
	Pending   *PendingRequest `json:"pending,omitempty"`
	Grant     *Grant          `json:"grant,omitempty"`
}

// ReleaseResult answers a release.
type ReleaseResult struct {
	T               int `json:"t"`
	ReleasedLeases  int `json:"released_leases"`
	ReleasedGPUs    int `json:"released_gpus"`
	DroppedRequests int `json:"dropped_requests"`
	DroppedGPUs     int `json:"dropped_gpus"`
	// HeldGPUs are the released leases' GPUs that the broker still
	// counts because their Slurm jobs still run (docs/slurm.md, "A lease
	// ends when nothing of it runs"): they are freed a few seconds after
	// nothing of the job runs.
	HeldGPUs int `json:"held_gpus,omitempty" doc:"GPUs the broker still counts as held until the released leases' Slurm jobs have ended."`
}

// ConsumeRequest is what a campaign wants to use of its flow dimensions in
// the current broker second.
type ConsumeRequest struct {
	IO        float64 `json:"io" minimum:"0" maximum:"1e12" doc:"Filesystem bandwidth wanted this second, GB." example:"12"`
	Inference float64 `json:"inference" minimum:"0" maximum:"1e12" doc:"Inference tokens wanted this second." example:"500"`
}

// FlowGrant is the answer for one flow dimension.
type FlowGrant struct {
	Desired   float64 `json:"desired"`
	Allowed   float64 `json:"allowed"`
	Throttled bool    `json:"throttled" doc:"Less than desired was allowed."`
	Tokens    float64 `json:"tokens" doc:"Tokens left in the dimension's bucket."`
}

// ConsumeResult answers a consume call.
type ConsumeResult struct {
	T         int       `json:"t"`
	IO        FlowGrant `json:"io"`
	Inference FlowGrant `json:"inference"`
	Credits   float64   `json:"credits" doc:"Credits left after the inference charge."`
}

// JournalRecord is one broker journal record with its sequence number.
type JournalRecord struct {
	Seq int64 `json:"seq"`
	// Wall is when the operation that made the record was applied.
	Wall   int64           `json:"wall,omitempty" doc:"Wall-clock time of the operation that made the record, UTC Unix milliseconds (absent for records replayed from a journal written before wall times; for grants replayed from a snapshot, the time of the last tick of the folded run)."`
	Record json.RawMessage `json:"record" doc:"The broker's journal record; its first keys are t and event. In a campaign's scope its lease is the campaign's own id; in scope all (the administrator's) it is the broker's global id."`
}

// Journal is a page of the broker journal.
type Journal struct {
	T         int             `json:"t"`
	Scope     string          `json:"scope" doc:"'all' or the campaign whose records these are."`
	Oldest    int64           `json:"oldest" doc:"Smallest seq still retained in this scope (0 when none)."`
	Next      int64           `json:"next" doc:"Pass as after= to read on from this page."`
	Truncated bool            `json:"truncated" doc:"Records after the requested seq were dropped from memory before they could be read."`
	Records   []JournalRecord `json:"records"`
}

// Health is the liveness answer.
type Health struct {
	Status  string `json:"status" enum:"ok"`
	T       int    `json:"t" doc:"The latest broker time whose tick is on stable storage (with a journal file): it never goes back across a crash."`
	Durable bool   `json:"durable" doc:"State is written to a journal file and survives a restart."`
}

// Problem is an RFC 9457 problem document, as the service writes it for
// every 4xx and 5xx answer.
type Problem struct {
	Type     string          `json:"type,omitempty"`
	Title    string          `json:"title,omitempty"`
	Status   int             `json:"status,omitempty"`
	Detail   string          `json:"detail,omitempty"`
	Instance string          `json:"instance,omitempty"`
	Errors   []ProblemDetail `json:"errors,omitempty"`
}

// ProblemDetail names one offending field: Location is e.g. "body.gpus" or
// "query.class".
type ProblemDetail struct {
	Message  string `json:"message,omitempty"`
	Location string `json:"location,omitempty"`
	Value    any    `json:"value,omitempty"`
}

// SlurmTokenRequest names whom a Slurm token is for: the gate admits only
// that Unix user's jobs on it (docs/slurm.md).
type SlurmTokenRequest struct {
	User string `json:"user" minLength:"1" maxLength:"64" pattern:"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$" doc:"The Unix user whose jobs the token admits (the wrapper sends its own)." example:"alice"`
}

// SlurmToken carries a lease into Slurm: the signed token goes in the
// job's --comment (docs/slurm.md).
type SlurmToken struct {
	Token       string `json:"token" doc:"bursar2:<lease>:<campaign>:<gpus>:<expires unix s>:<user>:<account>:<HMAC-SHA256, hex>"`
	User        string `json:"user" doc:"The Unix user the token admits jobs of."`
	Lease       int    `json:"lease" doc:"The campaign's own lease id, as in the token."`
	GPUs        int    `json:"gpus"`
	Account     string `json:"account" doc:"The Slurm account the job must run under (the campaign's name in lower case), named in the token."`
	ExpiresUnix int64  `json:"expires_unix" doc:"Wall-clock end of the lease, unix seconds; the job's time limit is cut to it."`
	T           int    `json:"t"`
}
