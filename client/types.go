package client

import "github.com/bursar-hpc/bursar/api"

// The wire types are defined in package api, the contract the service and
// this client share; the aliases keep them under the names a client user
// knows.

type (
	FlowSpec          = api.FlowSpec
	CampaignSpec      = api.CampaignSpec
	Registration      = api.Registration
	CampaignToken     = api.CampaignToken
	SlurmToken        = api.SlurmToken
	SlurmTokenRequest = api.SlurmTokenRequest
	Campaign          = api.Campaign
	CampaignOut       = api.CampaignOut
	CampaignList      = api.CampaignList
	FlowSupply        = api.FlowSupply
	Supply            = api.Supply
	LeaseRequest      = api.LeaseRequest
	RequestAccepted   = api.RequestAccepted
	PendingRequest    = api.PendingRequest
	Lease             = api.Lease
	Leases            = api.Leases
	GrantRule         = api.GrantRule
	Grant             = api.Grant
	Grants            = api.Grants
	RequestStatus     = api.RequestStatus
	ReleaseResult     = api.ReleaseResult
	ConsumeRequest    = api.ConsumeRequest
	FlowGrant         = api.FlowGrant
	ConsumeResult     = api.ConsumeResult
	JournalRecord     = api.JournalRecord
	Journal           = api.Journal
	Health            = api.Health
	Problem           = api.Problem
	ProblemDetail     = api.ProblemDetail
)

// Constants of the wire format (see package api).
const (
	ClassDeadline      = api.ClassDeadline
	ClassInteractive   = api.ClassInteractive
	ClassAgentBurst    = api.ClassAgentBurst
	ClassOpportunistic = api.ClassOpportunistic
	PathWarm           = api.PathWarm
	PathReclaim        = api.PathReclaim
	PathCold           = api.PathCold
	StatePending       = api.StatePending
	StateGranted       = api.StateGranted
	NamePattern        = api.NamePattern
)
